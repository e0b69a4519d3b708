// BGP announcement of the external IPs a node holds: the set to announce comes from
// `held()` (the agent: the external IPs in state assigned, node-local and cluster), and each
// sync() that finds it changed rewrites the daemon's configuration and applies it. Syncs are
// coalesced: one runs at a time, and a sync asked for while one runs runs once after it, with
// the set as it is then. A daemon that ends unexpectedly is started again after a backoff.
import type { FibkeeperConfig, BgpPeer } from '../config/index.js';
import { parseBgpIpAttributes, readPasswordFile } from '../config/index.js';
import { describeError } from '../errors/index.js';
import type { Logger } from '../log/index.js';
import { backoff, Timer, type Clock } from '../sched/index.js';
import { birdConf, peerProtocol } from './bird-conf.js';
import { BirdDaemon } from './daemon.js';
import type { BgpMetrics } from './metrics.js';

export interface BgpSpeakerParams {
  config: FibkeeperConfig['bgp'];
  peers: readonly BgpPeer[];
  netns?: string;
  /** The IPs to announce now (canonical text). */
  held: () => readonly string[];
  clock: Clock;
  log: Logger;
  metrics?: BgpMetrics;
  /** Tests: the daemon (default a BirdDaemon from the config); it calls `onExit` it is given. */
  daemon?: (onExit: (why: string) => void) => SpeakerDaemon;
}

/** What the speaker needs of the daemon (BirdDaemon). */
export type SpeakerDaemon = Pick<
  BirdDaemon,
  'start' | 'configure' | 'protocols' | 'stop' | 'pid' | 'confPath' | 'ctlPath'
>;

export interface BgpPeerStatus {
  address: string;
  asn: number;
  protocol: string;
  bfd: boolean;
  /** BIRD's protocol state: up, start, down. */
  state: string;
  /** The BGP state: Established, Active, Connect, Idle, … */
  session: string;
  since: string;
  advertised: number;
  lastError: string;
  /**
   * Graceful restart on this session: on (bgp.gracefulRestart set and the peer sent the
   * capability: it keeps the routes on a planned restart), `no peer support`, `pending` (no
   * session yet to tell), or off.
   */
  gracefulRestart: 'on' | 'no peer support' | 'pending' | 'off';
}

export interface BgpStatus {
  daemon: { pid: number | null; running: boolean; config: string; control: string };
  announced: string[];
  advertisedTotal: number;
  withdrawnTotal: number;
  peers: BgpPeerStatus[];
  lastError: string | null;
  /** bgp.gracefulRestart in seconds (0: off): how long routers keep the routes on a planned restart. */
  gracefulRestartS: number;
}

const fam = (ip: string): 'ipv4' | 'ipv6' => (ip.includes(':') ? 'ipv6' : 'ipv4');

export class BgpSpeaker {
  readonly daemon: SpeakerDaemon;
  #applied = new Set<string>();
  #running: Promise<void> | undefined;
  #again = false;
  #stopped = false;
  #failures = 0;
  readonly #restart: Timer;
  #lastError: string | null = null;
  #advertised = 0;
  #withdrawn = 0;
  readonly #p: BgpSpeakerParams;

  constructor(p: BgpSpeakerParams) {
    this.#p = p;
    this.#restart = new Timer(p.clock);
    const onExit = (why: string): void => this.#daemonEnded(why);
    this.daemon =
      p.daemon?.(onExit) ??
      new BirdDaemon({
        binary: p.config.daemon,
        runDir: p.config.runDir,
        ...(p.netns !== undefined ? { netns: p.netns } : {}),
        log: p.log,
        clock: p.clock,
        onExit,
        recover: p.config.gracefulRestart > 0,
      });
  }

  #conf(ips: readonly string[]): string {
    const c = this.#p.config;
    const passwords = new Map<string, string>();
    for (const peer of this.#p.peers) {
      if (peer.passwordFile !== '')
        passwords.set(peer.address, readPasswordFile(peer.passwordFile));
    }
    return birdConf({
      asn: c.asn,
      routerId: c.routerId,
      peers: this.#p.peers,
      passwords,
      communities: c.communities,
      largeCommunities: c.largeCommunities,
      localPreference: c.localPreference,
      ipAttributes: c.ipAttributes.map(parseBgpIpAttributes),
      holdTimeMs: c.holdTime,
      gracefulRestartMs: c.gracefulRestart,
      bfdIntervalMs: c.bfd.interval,
      bfdMultiplier: c.bfd.multiplier,
      ips: [...ips].sort(),
    });
  }

  /** Starts the daemon with the IPs held now. */
  async start(): Promise<void> {
    const ips = [...this.#p.held()];
    await this.daemon.start(this.#conf(ips));
    this.#record(ips);
    this.#p.log.info(
      { pid: this.daemon.pid, peers: this.#p.peers.length, announced: ips.length },
      'bgp: daemon started',
    );
  }

  #record(ips: readonly string[]): void {
    const next = new Set(ips);
    const m = this.#p.metrics;
    for (const ip of next) {
      if (!this.#applied.has(ip)) {
        this.#advertised++;
        m?.advertised.inc({ family: fam(ip) });
      }
    }
    for (const ip of this.#applied) {
      if (!next.has(ip)) {
        this.#withdrawn++;
        m?.withdrawn.inc({ family: fam(ip) });
      }
    }
    this.#applied = next;
    m?.announced.set({ family: 'ipv4' }, ips.filter((ip) => fam(ip) === 'ipv4').length);
    m?.announced.set({ family: 'ipv6' }, ips.filter((ip) => fam(ip) === 'ipv6').length);
  }

  /** Applies the set held now if it changed; resolves when it is applied (or failed). */
  sync(): Promise<void> {
    if (this.#running) {
      this.#again = true;
      return this.#running;
    }
    this.#running = (async () => {
      do {
        this.#again = false;
        await this.#syncOnce();
      } while (this.#again && !this.#stopped);
    })().finally(() => (this.#running = undefined));
    return this.#running;
  }

  async #syncOnce(): Promise<void> {
    if (this.#stopped || this.daemon.pid === undefined) return;
    const ips = [...this.#p.held()];
    const same = ips.length === this.#applied.size && ips.every((ip) => this.#applied.has(ip));
    if (same) return;
    try {
      await this.daemon.configure(this.#conf(ips));
      this.#record(ips);
    } catch (err) {
      this.#lastError = `configure: ${describeError(err)}`;
      this.#p.metrics?.configureErrors.inc();
      this.#p.log.error({ err: describeError(err) }, 'bgp: the daemon refused the configuration');
    }
  }

  #daemonEnded(why: string): void {
    if (this.#stopped) return;
    this.#lastError = why;
    this.#applied = new Set();
    this.#failures++;
    const wait = backoff(500, 30_000, this.#failures);
    this.#p.log.error({ why, retryInMs: wait }, 'bgp: the daemon ended; starting it again');
    this.#restart.start(wait, () => {
      if (this.#stopped) return;
      this.#p.metrics?.daemonRestarts.inc();
      this.start().then(
        () => (this.#failures = 0),
        (err: unknown) => this.#daemonEnded(describeError(err)),
      );
    });
  }

  /** The sessions as the daemon reports them (empty while it is not running). */
  async sessions(): Promise<BgpPeerStatus[]> {
    const protos = this.daemon.pid === undefined ? [] : await this.daemon.protocols();
    return this.#p.peers.map((peer, i) => {
      const s = protos.find((x) => x.name === peerProtocol(i));
      return {
        address: peer.address,
        asn: peer.asn,
        protocol: peerProtocol(i),
        bfd: peer.bfd,
        state: s?.state ?? 'down',
        session: s?.info.split(/\s+/)[0] ?? 'Idle',
        since: s?.since ?? '',
        advertised: s?.exported ?? 0,
        lastError: s?.lastError ?? (this.daemon.pid === undefined ? 'daemon not running' : ''),
        gracefulRestart:
          this.#p.config.gracefulRestart <= 0
            ? 'off'
            : s?.info.startsWith('Established') !== true
              ? 'pending'
              : s.peerGracefulRestart
                ? 'on'
                : 'no peer support',
      };
    });
  }

  async status(): Promise<BgpStatus> {
    return {
      daemon: {
        pid: this.daemon.pid ?? null,
        running: this.daemon.pid !== undefined,
        config: this.daemon.confPath,
        control: this.daemon.ctlPath,
      },
      announced: [...this.#applied].sort(),
      advertisedTotal: this.#advertised,
      withdrawnTotal: this.#withdrawn,
      peers: await this.sessions().catch(() => []),
      lastError: this.#lastError,
      gracefulRestartS: Math.round(this.#p.config.gracefulRestart / 1000),
    };
  }

  /**
   * Stops the daemon: its peers withdraw the routes at once, or with bgp.gracefulRestart on
   * keep them as stale until the next agent's daemon has announced again. Idempotent.
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#restart.cancel();
    await this.#running?.catch(() => undefined);
    await this.daemon.stop(3000, this.#p.config.gracefulRestart > 0);
  }
}
