// Whether the netlink sockets of a handle still answer, and the repair of those that do not.
// Every `intervalMs` the prober sends each socket it watches a probe (NLMSG_NOOP asking for
// an ack, which the kernel answers inside the sendmsg): the request socket and every
// subscription socket, whose only traffic is otherwise the events nobody may be sending. A
// socket that has heard nothing — neither the ack nor anything else — for `deafMs` while a
// probe waits is deaf: it is closed and opened again (reopen), which fails its in-flight
// requests as retryable and makes its readers resync from a dump. Liveness (/livez, the
// systemd watchdog) is per socket name ("request", "link", ...) and survives the reopens: a
// name that has heard nothing for `livenessMs`, however often it was reopened, is not alive.
import { Periodic, type Clock } from '../sched/index.js';

/** The bounded names of the agent's kernel sockets (fibkeeper_socket_reopens_total{socket}). */
export const SOCKET_NAMES = [
  'request',
  'link',
  'route',
  'neighbor',
  'xdp',
  'genl',
  'packet',
] as const;
export type SocketName = (typeof SOCKET_NAMES)[number];

/** A socket the prober watches. */
export interface Probed {
  readonly socketName: SocketName;
  readonly closed: boolean;
  /** Deliberately not reading (a paused subscription): neither probed nor judged. */
  readonly paused: boolean;
  /** Clock time of the last datagram received (any: a reply, an event, a probe's ack). */
  readonly lastHeard: number;
  /** Sends a probe; false when it could not be sent (it is tried again next round). */
  sendProbe(): boolean;
  /** Replaces the socket after `cause` (an errno name; ETIMEDOUT: deaf). */
  reopen(cause: string): void;
}

export interface HealthParams {
  clock: Clock;
  /** Probe round interval, ms (0: no probing). */
  intervalMs: number;
  /** Silence, with a probe waiting, after which a socket is reopened, ms. */
  deafMs: number;
  /** Silence after which a socket name is reported not alive, ms. */
  livenessMs: number;
}

export function defaultHealth(): Omit<HealthParams, 'clock'> {
  return {
    // A NOOP per socket every 2 s: nothing, next to the traffic of a busy table.
    intervalMs: 2000,
    // Three rounds without an answer. A busy JS thread does not count against a socket: the
    // rounds run on the same thread, after the replies that were waiting were read.
    deafMs: 6000,
    // Longer than a reopen and the first probe of the new socket take; a socket that stays
    // silent across reopens this long takes /livez (and the watchdog) down with it.
    livenessMs: 20_000,
  };
}

export class SocketHealth {
  readonly #p: HealthParams;
  readonly #watched = new Map<Probed, number | undefined>(); // → send time of a waiting probe
  readonly #lastAnswer = new Map<SocketName, number>();
  readonly #rounds: Periodic;
  #stopped = false;

  constructor(p: HealthParams) {
    this.#p = p;
    this.#rounds = new Periodic(p.clock, p.intervalMs, () => this.round());
  }

  /** Watches `s` from now on (until it is closed). */
  watch(s: Probed): void {
    this.#watched.set(s, undefined);
    if (!this.#lastAnswer.has(s.socketName))
      this.#lastAnswer.set(s.socketName, this.#p.clock.now());
  }

  /** Starts the rounds. Idempotent. */
  start(): void {
    if (this.#stopped || this.#p.intervalMs <= 0) return;
    this.#rounds.start();
  }

  stop(): void {
    this.#stopped = true;
    this.#rounds.stop();
  }

  /** One round: judges every watched socket, then probes those without a probe waiting. */
  round(): void {
    const now = this.#p.clock.now();
    for (const [s, probeSent] of [...this.#watched]) {
      if (s.closed) {
        this.#watched.delete(s);
        continue;
      }
      if (s.paused) continue;
      this.#note(s);
      if (probeSent !== undefined && s.lastHeard < probeSent) {
        if (now - Math.max(s.lastHeard, probeSent) < this.#p.deafMs) continue; // waiting
        this.#watched.set(s, undefined);
        s.reopen('ETIMEDOUT');
        continue;
      }
      // Sent or not (a broken socket): the silence that follows is judged the same way.
      s.sendProbe();
      this.#watched.set(s, now);
    }
  }

  #note(s: Probed): void {
    if (s.lastHeard > (this.#lastAnswer.get(s.socketName) ?? 0)) {
      this.#lastAnswer.set(s.socketName, s.lastHeard);
    }
  }

  /** Socket names that heard nothing for livenessMs. */
  reasons(): string[] {
    const now = this.#p.clock.now();
    const active = new Set<SocketName>();
    for (const s of this.#watched.keys()) {
      if (s.closed || s.paused) continue;
      this.#note(s);
      active.add(s.socketName);
    }
    const out: string[] = [];
    for (const name of active) {
      const quiet = now - (this.#lastAnswer.get(name) ?? now);
      if (quiet >= this.#p.livenessMs) {
        out.push(`netlink: the ${name} socket has not answered for ${Math.round(quiet / 1000)} s`);
      }
    }
    return out;
  }
}
