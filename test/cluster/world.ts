// A cluster of real agents for the integration tests: three node namespaces and a client on
// one L2 segment (src/lab/cluster.ts), a real etcd on loopback (random ports, temp data
// dir), and `fibkeeper run` per node in cluster mode, each reaching etcd through a TCP proxy
// the test can cut. What the agents did comes from their own logs (every hold set, debug
// level); what the segment saw comes from tcpdump on the bridge. Everything is removed at
// the end of the file, also when a test fails; processes are ended by their PID.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, expect } from 'vitest';
import {
  LocalEtcd,
  LocalEtcdCluster,
  findOverlaps,
  holdIntervals,
  type HoldRecord,
} from '../../src/cluster/index.js';
import { monotonicClock } from '../../src/sched/index.js';
import { buildArp } from '../../src/extip/index.js';
import {
  AnswerProbe,
  clusterAgentConfig,
  Reaper,
  clusterLabDown,
  clusterLabNamespaces,
  clusterLabUp,
  describeClusterLab,
  type ClusterLab,
  type ClusterLabNode,
} from '../../src/lab/index.js';
import { PacketSocket } from '../../src/native/index.js';
import { neighborSolicit } from '../extip/lab.js';
import { call } from '../agent/harness.js';
import { ifindexOf, ipJson, waitFor } from '../helpers/netns.js';
import { freePort } from '../helpers/ports.js';
const PROXY = new URL('./proxy.ts', import.meta.url).href;

/**
 * test/cluster/proxy.ts in a process of its own: the agents' etcd traffic must not wait for
 * the test's event loop (its polls, its spawnSync calls), or a busy test would look like a
 * partition to every agent at once.
 */
export class ProxyProc {
  readonly #child: ChildProcess;
  readonly port: number;
  #lines: string[] = [];
  #waiters: (() => void)[] = [];

  private constructor(child: ChildProcess, port: number) {
    this.#child = child;
    this.port = port;
  }

  static async start(target: number): Promise<ProxyProc> {
    const script = [
      `const { CutProxy } = await import(${JSON.stringify(PROXY)});`,
      `const p = await CutProxy.start(${target});`,
      "process.stdout.write('port ' + p.port + '\\n');",
      "let buf = '';",
      "process.stdin.setEncoding('utf8');",
      "process.stdin.on('data', (s) => { buf += s; let i;",
      "  while ((i = buf.indexOf('\\n')) >= 0) { const c = buf.slice(0, i); buf = buf.slice(i + 1);",
      "    if (c === 'cut') p.cut(); else if (c === 'heal') p.heal();",
      "    process.stdout.write('ok ' + c + '\\n'); } });",
      "process.stdin.on('end', () => process.exit(0));",
    ].join('\n');
    const child = reaper.child(
      spawn(process.execPath, ['--no-warnings', '--input-type=module', '-e', script], {
        stdio: ['pipe', 'pipe', 'inherit'],
      }),
    );
    const lines: string[] = [];
    let wake: (() => void)[] = [];
    let buf = '';
    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (s: string) => {
      buf += s;
      const parts = buf.split('\n');
      buf = parts.pop() ?? '';
      lines.push(...parts);
      for (const w of wake.splice(0)) w();
    });
    const first = await new Promise<string>((resolve, reject) => {
      const check = (): void => {
        if (lines.length > 0) resolve(lines.shift() as string);
        else wake.push(check);
      };
      child.once('exit', (code) => reject(new Error(`the etcd proxy exited (${code})`)));
      check();
    });
    const p = new ProxyProc(child, Number(first.split(' ')[1]));
    p.#lines = lines;
    wake = p.#waiters;
    return p;
  }

  get endpoint(): string {
    return `127.0.0.1:${this.port}`;
  }

  async #command(c: 'cut' | 'heal'): Promise<void> {
    this.#child.stdin!.write(`${c}\n`);
    await new Promise<void>((resolve) => {
      const check = (): void => {
        const i = this.#lines.indexOf(`ok ${c}`);
        if (i >= 0) {
          this.#lines.splice(i, 1);
          resolve();
        } else this.#waiters.push(check);
      };
      check();
    });
  }

  /** Black-holes the path to etcd (no RST: as a partition looks). */
  cut(): Promise<void> {
    return this.#command('cut');
  }

  heal(): Promise<void> {
    return this.#command('heal');
  }

  close(): void {
    if (this.#child.exitCode === null) this.#child.kill('SIGKILL');
  }
}

const BIN = resolve('bin/fibkeeper.js');

/** Ends what the worlds of this file spawned and deletes their namespaces, should we die. */
const reaper = Reaper.start();
const teardowns: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const t of teardowns.splice(0)) await t();
  reaper.close();
});

export interface AgentNode extends ClusterLabNode {
  dir: string;
  sock: string;
  configFile: string;
  logFile: string;
  proxy: ProxyProc;
  /** More `fibkeeper run` flags (the TLS files of etcd). */
  flags: string[];
  /** The agent's Prometheus endpoint (http://127.0.0.1:PORT/metrics). */
  metricsUrl: string;
  proc: ChildProcess | undefined;
}

/** What the tests read of GET /v1/cluster/status. */
export interface MemberStatusDoc {
  ready: boolean;
  able: boolean;
  members: { name: string; cordoned: boolean; able: boolean }[];
  ips: { ip: string; owner?: string; placement?: string }[];
}

/** One frame on the segment in which a node speaks for an IP (ARP reply/GARP, NA). */
export interface Speaker {
  /** CLOCK_MONOTONIC ms (comparable with the agents' hold sets). */
  at: number;
  mac: string;
  ip: string;
  line: string;
}

/**
 * Realtime (epoch ms) minus CLOCK_MONOTONIC (ms), now: tcpdump prints realtime. Measured as
 * each frame is read (a few ms after it was captured) rather than once from the process's
 * start (performance.timeOrigin): realtime is slewed against the monotonic clock (~0.7 ms a
 * minute here), and a test worker may live through a whole suite.
 */
function realMinusMono(): number {
  return Date.now() - monotonicClock.now();
}

export class ClusterWorld {
  readonly lab: ClusterLab;
  readonly etcd: LocalEtcd;
  /** The etcd members, when the world has a cluster of them (create's `members`). */
  etcdCluster: LocalEtcdCluster | undefined;
  readonly nodes: AgentNode[];
  readonly dir: string;
  readonly speakers: Speaker[] = [];
  /** Every agent process started (all runs of every node), ended by PID at teardown. */
  readonly agents: ChildProcess[] = [];
  readonly #wire: ChildProcess;
  /** The IP-level answers (echo replies, RSTs) to probes through every node's MAC. */
  probe: AnswerProbe | undefined;
  #asker: { timer: ReturnType<typeof setInterval>; sock: PacketSocket } | undefined;

  private constructor(lab: ClusterLab, etcd: LocalEtcd, nodes: AgentNode[], dir: string) {
    this.lab = lab;
    this.etcd = etcd;
    this.nodes = nodes;
    this.dir = dir;
    this.#wire = this.#tcpdump();
  }

  /**
   * Builds the lab, etcd, proxies and configs (agents not started). Everything is removed
   * after the file (world.ts's own afterAll; a hook registered from inside beforeAll would
   * never run), and should that never happen — the worker died, the run was killed — the
   * reaper ends the processes by PID and deletes the namespaces.
   */
  static async create(
    tag: string,
    cluster: string[] = [],
    opts: {
      /** etcd's clients over TLS: these files (agents get them as flags). */
      tls?: { ca: string; cert: string; key: string };
      /** A cluster of this many etcd members, which the agents reach directly (no proxy). */
      members?: number;
    } = {},
  ): Promise<ClusterWorld> {
    const prefix = `fk${tag}${randomBytes(2).toString('hex')}`.slice(0, 8);
    reaper.netns(...clusterLabNamespaces(describeClusterLab(prefix)));
    let etcd: LocalEtcd | undefined;
    let members: LocalEtcdCluster | undefined;
    let lab: ClusterLab | undefined;
    const nodes: AgentNode[] = [];
    const proxies: ProxyProc[] = [];
    let world: ClusterWorld | undefined;
    const dir = mkdtempSync(join(tmpdir(), `fk-cluster-${tag}-`));
    reaper.dir(dir);
    teardowns.push(async () => {
      world?.stopAsking();
      world?.probe?.close();
      for (const p of world?.agents ?? []) {
        if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
      }
      if (world && world.#wire.exitCode === null) world.#wire.kill('SIGKILL');
      for (const p of proxies) p.close();
      clusterLabDown(prefix);
      await etcd?.destroy();
      await members?.destroy();
      rmSync(dir, { recursive: true, force: true });
    });
    const onSpawn = (pid: number, dataDir: string) => (reaper.process(pid), reaper.dir(dataDir));
    if (opts.members !== undefined) {
      members = await LocalEtcdCluster.start(opts.members, { onSpawn });
      etcd = members.members[0]!;
    } else {
      etcd = await LocalEtcd.start({ onSpawn, ...(opts.tls ? { tls: opts.tls } : {}) });
    }
    lab = clusterLabUp(prefix);
    for (const n of lab.nodes) {
      const d = join(dir, n.name);
      mkdirSync(d, { mode: 0o750 });
      const proxy = await ProxyProc.start(etcd.clientPort);
      proxies.push(proxy);
      const endpoints = members
        ? members.endpoints
        : [`${opts.tls ? 'https://' : ''}${proxy.endpoint}`];
      const t = opts.tls;
      const metrics = `127.0.0.1:${await freePort()}`;
      const node: AgentNode = {
        ...n,
        dir: d,
        sock: join(d, 'api.sock'),
        configFile: join(d, 'config.yaml'),
        logFile: join(d, 'agent.log'),
        proxy,
        flags: t
          ? [
              `--cluster-etcd-ca-file=${t.ca}`,
              `--cluster-etcd-cert-file=${t.cert}`,
              `--cluster-etcd-key-file=${t.key}`,
            ]
          : [],
        metricsUrl: `http://${metrics}/metrics`,
        proc: undefined,
      };
      writeFileSync(
        node.configFile,
        clusterAgentConfig(n, {
          etcd: endpoints,
          dir: d,
          logLevel: 'debug',
          cluster,
          metrics,
        }) + '\n',
      );
      nodes.push(node);
    }
    world = new ClusterWorld(lab, etcd, nodes, dir);
    world.etcdCluster = members;
    await waitFor(() => world.#listening, { what: 'tcpdump to listen', timeoutMs: 10_000 });
    return world;
  }

  node(name: string): AgentNode {
    const n = this.nodes.find((x) => x.name === name);
    if (!n) throw new Error(`no node ${name}`);
    return n;
  }

  byMac(mac: string): AgentNode | undefined {
    return this.nodes.find((n) => n.mac === mac);
  }

  // --- agents -----------------------------------------------------------------------------

  /** Starts the node's agent and waits until it reports ready (registered in the cluster). */
  async start(n: AgentNode): Promise<void> {
    const fd = openSync(n.logFile, 'a');
    n.proc = reaper.agent(
      spawn(process.execPath, [BIN, 'run', '--config', n.configFile, ...n.flags], {
        stdio: ['ignore', fd, fd],
      }),
    );
    closeSync(fd);
    this.agents.push(n.proc);
    await this.ready(n);
  }

  async ready(n: AgentNode, timeoutMs = 30_000): Promise<void> {
    await waitFor(
      async () => {
        const p = n.proc;
        if (!p || p.exitCode !== null || p.signalCode !== null) {
          throw new Error(`agent ${n.name} exited: ${this.log(n).slice(-1500)}`);
        }
        const r = await call(n.sock, 'GET', '/v1/status', undefined, { timeoutMs: 5000 }).catch(
          () => undefined,
        );
        return r?.status === 200 && r.body.ready === true;
      },
      { timeoutMs, intervalMs: 50, what: `agent ${n.name} ready` },
    );
  }

  /**
   * Processes that ended without a last hold set of their own (SIGKILL): when each was
   * killed. Its cluster holder (a TUN device) went with it, so it held nothing from then on.
   */
  readonly deaths: { node: string; at: number }[] = [];

  /** Sends a signal to the node's agent; SIGKILL and SIGTERM wait for its exit. */
  async signal(n: AgentNode, sig: NodeJS.Signals): Promise<void> {
    const p = n.proc;
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    const exited = new Promise((r) => p.once('exit', r));
    // The kernel ends a SIGKILLed process (and deletes its holder) before its sockets can
    // tell its peers anything: the signal's moment is when it stopped holding, for the
    // history. The wire (expectNeverTwoHolders's capture) checks that independently.
    const sentAt = now();
    p.kill(sig);
    if (sig === 'SIGKILL') this.deaths.push({ node: n.name, at: sentAt });
    if (sig === 'SIGKILL' || sig === 'SIGTERM') await exited;
  }

  log(n: AgentNode): string {
    try {
      return readFileSync(n.logFile, 'utf8');
    } catch {
      return '';
    }
  }

  /** Parsed log lines of a node's agent (all its runs). */
  logLines(n: AgentNode): Record<string, unknown>[] {
    return this.log(n)
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  }

  async api(n: AgentNode, method: string, path: string, body?: unknown) {
    const r = await call(n.sock, method, path, body, { timeoutMs: 20_000 });
    if (r.status >= 400)
      throw new Error(`${method} ${path} on ${n.name}: ${JSON.stringify(r.body)}`);
    return r.body;
  }

  /** The node's metrics: series (name with labels, as exposed) → value. */
  async metrics(n: AgentNode): Promise<Map<string, number>> {
    const text = await (await fetch(n.metricsUrl, { signal: AbortSignal.timeout(5000) })).text();
    const out = new Map<string, number>();
    for (const line of text.split('\n')) {
      if (line === '' || line.startsWith('#')) continue;
      const i = line.lastIndexOf(' ');
      out.set(line.slice(0, i), Number(line.slice(i + 1)));
    }
    return out;
  }

  /** The agents whose process runs. */
  running(): AgentNode[] {
    return this.nodes.filter(
      (n) => n.proc && n.proc.exitCode === null && n.proc.signalCode === null,
    );
  }

  /** The member's placement rounds so far (fibkeeper_cluster_reconciles_total). */
  async rounds(n: AgentNode): Promise<number> {
    return (await this.metrics(n)).get('fibkeeper_cluster_reconciles_total') ?? 0;
  }

  /** Each running agent's placement rounds so far, by node name (before an action). */
  async roundsNow(): Promise<Map<string, number>> {
    const nodes = this.running();
    const r = await Promise.all(nodes.map((n) => this.rounds(n)));
    return new Map(nodes.map((n, i) => [n.name, r[i]!]));
  }

  /**
   * Waits until every running agent sees what `seen` asks of its status (a member back,
   * cordoned, unable) and has run a placement round since `from` (roundsNow() before the
   * action; an agent started since counts from 0). A round runs on every change of the view
   * before the status is answered: the agents have decided on what they see.
   */
  async decided(
    from: ReadonlyMap<string, number>,
    seen: (st: MemberStatusDoc) => boolean,
    what: string,
    timeoutMs = 10_000,
  ): Promise<void> {
    await until(
      async () => {
        for (const n of this.running()) {
          const st = (await this.api(n, 'GET', '/v1/cluster/status').catch(() => undefined)) as
            MemberStatusDoc | undefined;
          if (st === undefined || !seen(st)) return false;
          if ((await this.rounds(n)) <= (from.get(n.name) ?? 0)) return false;
        }
        return true;
      },
      timeoutMs,
      `every agent decided: ${what}`,
    );
  }

  /**
   * Every IP of `ips` on exactly one holder in the kernels, and every agent of `nodes` (the
   * running ones) agrees that this holder is where placement puts it: no round will move it
   * (nothing to wait for).
   */
  async placed(ips: readonly string[], nodes = this.running()): Promise<boolean> {
    const holders = new Map<string, string>();
    for (const ip of ips) {
      const h = this.holdersOf(ip);
      if (h.length !== 1) return false;
      holders.set(ip, h[0]!);
    }
    for (const n of nodes) {
      const st = (await this.api(n, 'GET', '/v1/cluster/status').catch(() => undefined)) as
        MemberStatusDoc | undefined;
      if (st?.ready !== true) return false;
      for (const ip of ips) {
        const e = st.ips.find((x) => x.ip === ip);
        if (e === undefined || e.owner !== holders.get(ip) || e.placement !== e.owner) return false;
      }
    }
    return true;
  }

  // --- what the kernel shows ---------------------------------------------------------------

  /** The global addresses on a node's cluster holder (ip -j addr show dev fkcluster0). */
  held(n: AgentNode): string[] {
    try {
      const links = ipJson<{ addr_info: { local: string; scope: string }[] }[]>(
        n.netns,
        'addr',
        'show',
        'dev',
        'fkcluster0',
      );
      return (links[0]?.addr_info ?? [])
        .filter((a) => a.scope === 'global')
        .map((a) => a.local)
        .sort();
    } catch {
      return [];
    }
  }

  /** Node names whose holder carries `ip` now. */
  holdersOf(ip: string): string[] {
    return this.nodes.filter((n) => this.held(n).includes(ip)).map((n) => n.name);
  }

  /** The client's neighbor entry for `ip`: its MAC, or undefined. */
  clientEntry(ip: string): string | undefined {
    const e = ipJson<{ lladdr?: string }[]>(this.lab.client.netns, 'neigh', 'show', ip);
    return e[0]?.lladdr;
  }

  /** One ping from the client (async: the test's own event loop runs the proxies). */
  clientPing(ip: string, timeoutS = 1): Promise<boolean> {
    return new Promise((done) => {
      const c = spawn(
        'ip',
        ['netns', 'exec', this.lab.client.netns, 'ping', '-c1', `-W${timeoutS}`, ip],
        {
          stdio: 'ignore',
        },
      );
      c.on('exit', (code) => done(code === 0));
    });
  }

  /**
   * The client pings each of `ips` every `everyMs` (`ping -O -D` per IP, 1 s to answer);
   * stop() returns the pings that got no answer at all (the last second's excluded: still
   * in flight), as `IP seq N at T`.
   */
  keepPinging(ips: readonly string[], everyMs: number): { stop(): string[] } {
    const runs = ips.map((ip) => {
      const child = spawn(
        'ip',
        [
          'netns',
          'exec',
          this.lab.client.netns,
          'ping',
          '-n',
          '-O',
          '-D',
          '-W',
          '1',
          '-i',
          String(everyMs / 1000),
          ip,
        ],
        { stdio: ['ignore', 'pipe', 'ignore'] },
      );
      reaper.child(child);
      const answered = new Set<number>();
      const missed = new Map<number, string>();
      let buf = '';
      child.stdout!.setEncoding('utf8');
      child.stdout!.on('data', (d: string) => {
        buf += d;
        const lines = buf.split('\n');
        buf = lines.pop() ?? '';
        for (const l of lines) {
          const seq = /icmp_seq=(\d+)/.exec(l);
          if (!seq) continue;
          if (l.includes('no answer yet')) missed.set(Number(seq[1]), l.slice(1, 18));
          else answered.add(Number(seq[1]));
        }
      });
      return { ip, child, answered, missed };
    });
    return {
      stop: () => {
        const lost: string[] = [];
        for (const r of runs) {
          if (r.child.exitCode === null) r.child.kill('SIGINT');
          const last = Math.max(0, ...r.answered, ...r.missed.keys());
          const inFlight = Math.ceil(1000 / everyMs) + 1;
          for (const [seq, at] of r.missed) {
            if (!r.answered.has(seq) && seq <= last - inFlight)
              lost.push(`${r.ip} seq ${seq} at ${at}`);
          }
        }
        return lost;
      },
    };
  }

  // --- the segment -------------------------------------------------------------------------

  #listening = false;

  #tcpdump(): ChildProcess {
    const filter = 'arp or (icmp6 and (ip6[40] == 135 or ip6[40] == 136))';
    const child = spawn(
      'ip',
      [
        'netns',
        'exec',
        this.lab.bridge,
        'tcpdump',
        '-i',
        'br0',
        '-l',
        '-n',
        '-e',
        '-tt',
        '--immediate-mode',
        filter,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    reaper.child(child);
    let buf = '';
    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (s: string) => {
      buf += s;
      const lines = buf.split('\n');
      buf = lines.pop() ?? '';
      for (const l of lines) {
        const sp = speakerOf(l);
        if (sp) this.speakers.push(sp);
      }
    });
    child.stderr!.on('data', (d: Buffer) => {
      if (d.toString().includes('listening on')) this.#listening = true;
    });
    return child;
  }

  /**
   * The client asks for `ips` every `everyMs` (ARP requests, neighbor solicitations), as a
   * client whose entry went stale would: whoever answers shows on the segment.
   */
  askFor(ips: readonly string[], everyMs = 100): void {
    this.stopAsking();
    const c = this.lab.client;
    const sock = PacketSocket.open({
      ifindex: ifindexOf(c.netns, c.dev),
      netns: c.netns,
      protocol: 0,
    });
    const frames = ips.map((ip) =>
      ip.includes(':')
        ? neighborSolicit({ ethSrc: c.mac, srcIp: c.v6, target: ip })
        : buildArp({
            op: 1,
            ethDst: 'ff:ff:ff:ff:ff:ff',
            senderMac: c.mac,
            senderIp: c.v4,
            targetMac: '00:00:00:00:00:00',
            targetIp: ip,
          }),
    );
    const timer = setInterval(() => {
      for (const f of frames) sock.send(f);
    }, everyMs);
    this.#asker = { timer, sock };
  }

  stopAsking(): void {
    const a = this.#asker;
    if (!a) return;
    clearInterval(a.timer);
    a.sock.close();
    this.#asker = undefined;
  }

  /**
   * Starts probing `ips` at the IP level through every node's MAC every `everyMs` (an ICMP
   * echo and a TCP SYN each, src/lab/answers.ts); replaces an earlier probe.
   */
  probeAnswers(ips: readonly string[], everyMs = 10): AnswerProbe {
    this.probe?.close();
    const c = this.lab.client;
    const p = new AnswerProbe({
      netns: c.netns,
      ifindex: ifindexOf(c.netns, c.dev),
      mac: c.mac,
      v4: c.v4,
      v6: c.v6,
      targets: this.nodes.map((n) => n.mac),
      ips,
      everyMs,
    });
    p.start();
    this.probe = p;
    return p;
  }

  /** Frames on the segment from `mac` speaking for `ip` at or after `since` (monotonic ms). */
  spoke(mac: string, ip: string, since = -Infinity): Speaker[] {
    return this.speakers.filter((s) => s.mac === mac && s.ip === ip && s.at >= since);
  }

  // --- the checks ----------------------------------------------------------------------------

  /**
   * Every hold set every agent published (debug log lines), as history.ts takes them, and for
   * each SIGKILL an empty set when the process was seen gone (its holder went with it).
   */
  holdRecords(): HoldRecord[] {
    const out: HoldRecord[] = [];
    for (const n of this.nodes) {
      const mine: HoldRecord[] = [];
      for (const l of this.logLines(n)) {
        if (l.msg !== 'cluster hold set') continue;
        mine.push({
          node: n.name,
          at: l.at as number,
          ips: l.ips as string[],
          deadline: (l.deadline as number | null) ?? -Infinity,
        });
      }
      for (const d of this.deaths.filter((x) => x.node === n.name)) {
        mine.push({ node: n.name, at: d.at, ips: [], deadline: -Infinity });
      }
      out.push(...mine.sort((a, b) => a.at - b.at));
    }
    return out;
  }

  /**
   * Never two holders, by the agents' own histories (no two nodes' hold intervals of one IP
   * overlap) and by the segment: every frame in which a node spoke for an IP lies inside a
   * hold interval of that node (20 ms for the capture's clock), and no two nodes spoke for
   * one IP in overlapping spans. Returns the number of frames checked.
   */
  expectNeverTwoHolders(): number {
    const records = this.holdRecords();
    expect(findOverlaps(records)).toEqual([]);
    const intervals = holdIntervals(records);
    const outside: string[] = [];
    const own = new Set([this.lab.client, ...this.nodes].flatMap((h) => [h.v4, h.v6]));
    const cluster = (s: Speaker) => !own.has(s.ip) && !s.ip.startsWith('fe80:');
    for (const s of this.speakers.filter(cluster)) {
      const n = this.byMac(s.mac);
      if (!n) continue; // the client
      const ok = intervals.some(
        (i) => i.node === n.name && i.ip === s.ip && s.at >= i.from - 20 && s.at <= i.to + 20,
      );
      if (!ok) {
        // what the node's own history says of that IP, to tell a late frame from a wrong one
        const own = intervals
          .filter((i) => i.node === n.name && i.ip === s.ip)
          .map((i) => `[${i.from.toFixed(1)}, ${i.to.toFixed(1)}]`);
        outside.push(
          `${n.name} @${s.at.toFixed(1)}: ${s.line} (its hold intervals of ${s.ip}: ${own.join(' ') || 'none'})`,
        );
      }
    }
    expect(outside).toEqual([]);
    // At the IP level: no probe round answered by two nodes for one IP.
    expect(this.probe?.dualIntervals() ?? []).toEqual([]);
    return this.speakers.filter((s) => cluster(s) && this.byMac(s.mac)).length;
  }
}

/** The IP a line of `tcpdump -n -e -tt` speaks for, and who speaks (ARP reply/GARP, NA). */
export function speakerOf(line: string, offset = realMinusMono()): Speaker | undefined {
  const m = /^(\d+\.\d+) ([0-9a-f:]{17}) > /.exec(line);
  if (!m) return undefined;
  const at = Number(m[1]) * 1000 - offset;
  const mac = m[2] as string;
  const reply = /Reply (\S+) is-at /.exec(line);
  if (reply) return { at, mac, ip: reply[1] as string, line };
  const req = /Request who-has (\S+) tell (\S+),/.exec(line);
  if (req && req[1] === req[2]) return { at, mac, ip: req[1] as string, line };
  const na = /neighbor advertisement, tgt is (\S+?),/.exec(line);
  if (na) return { at, mac, ip: na[1] as string, line };
  return undefined;
}

/** Polls until `pred` holds (true) or throws after `timeoutMs`. */
export async function until(
  pred: () => boolean | Promise<boolean>,
  timeoutMs: number,
  what: string,
) {
  await waitFor(async () => ((await pred()) ? true : undefined), {
    timeoutMs,
    intervalMs: 20,
    what,
  });
}

export const now = (): number => monotonicClock.now();

export function sh(cmd: string, ...args: string[]): string {
  return spawnSync(cmd, args, { encoding: 'utf8' }).stdout ?? '';
}
