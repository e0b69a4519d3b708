// `fibkeeper run` under systemd (Type=notify): READY=1 once the agent is ready, RELOADING=1
// and READY=1 around a SIGHUP reload, STOPPING=1 on stop, and STATUS= lines that say what
// is missing. Without NOTIFY_SOCKET every call is a no-op.
//
// The watchdog (WatchdogSec= in the unit; systemd then sets WATCHDOG_USEC): WATCHDOG=1 goes
// out every WATCHDOG_USEC/4 from a timer of the event loop, and only while the agent is
// alive as /livez sees it (every kernel socket answered its probes lately). A loop that
// stopped turning, or sockets that stay silent although they were reopened, stop the pings,
// and systemd restarts the agent (Restart=on-failure) after WatchdogSec.
import type { Agent } from '../agent/index.js';
import { describeError } from '../errors/index.js';
import type { Logger } from '../log/index.js';
import { sdNotify } from '../native/index.js';
import { Periodic, sleep, systemClock, type Clock } from '../sched/index.js';

/**
 * Longest wait for readiness before READY=1 is sent anyway (with STATUS= naming what is not
 * ready): a condition only an operator can fix (a missing external interface) must not run
 * into TimeoutStartSec, which would kill and restart the agent for nothing.
 */
export const READY_WAIT_MS = 30_000;
const POLL_MS = 100;

/** What the notifier reads from the agent. */
type Checks = Pick<Agent, 'ready' | 'health'>;
const STATUS_MS = 5_000;

export class SystemdNotifier {
  readonly #socket: string | undefined;
  /** The watchdog interval systemd asked for (WATCHDOG_USEC), ms; undefined: none. */
  readonly watchdogMs: number | undefined;
  #failed = false;
  #watchdogTimer: Periodic | undefined;
  #pingsHeld = false;
  #timer: Periodic | undefined;
  #lastStatus = '';

  /** Reads NOTIFY_SOCKET and removes it, so that the processes the agent starts do not inherit it. */
  readonly #log: Logger;
  readonly #clock: Clock;
  constructor(log: Logger, env: NodeJS.ProcessEnv = process.env, clock: Clock = systemClock) {
    this.#log = log;
    this.#clock = clock;
    this.#socket = env.NOTIFY_SOCKET || undefined;
    const usec = Number(env.WATCHDOG_USEC);
    const forUs = env.WATCHDOG_PID === undefined || Number(env.WATCHDOG_PID) === process.pid;
    this.watchdogMs = this.#socket && forUs && usec > 0 ? usec / 1000 : undefined;
    delete env.NOTIFY_SOCKET;
    delete env.WATCHDOG_USEC;
    delete env.WATCHDOG_PID;
  }

  /**
   * Sends WATCHDOG=1 every watchdogMs/4 while `agent.live()` is ok, until `signal` aborts
   * (the stop: systemd then waits for the exit, bounded by TimeoutStopSec). When the agent
   * is not alive, no ping goes out and the reasons are logged (once per episode).
   */
  watchdog(agent: Pick<Agent, 'live'>, signal: AbortSignal): void {
    const every = this.watchdogMs;
    if (every === undefined || this.#watchdogTimer !== undefined) return;
    const ping = () => {
      if (signal.aborted) {
        this.#watchdogTimer?.stop();
        return;
      }
      const live = agent.live();
      if (live.ok) {
        if (this.#pingsHeld) this.#log.info('watchdog: alive again; WATCHDOG=1 resumes');
        this.#pingsHeld = false;
        this.send({ WATCHDOG: 1 });
      } else if (!this.#pingsHeld) {
        this.#pingsHeld = true;
        this.#log.error(
          { reasons: live.reasons, watchdogMs: every },
          'watchdog: not alive; no WATCHDOG=1 until it is (systemd restarts the agent after WatchdogSec)',
        );
      }
    };
    this.#watchdogTimer = new Periodic(this.#clock, Math.max(100, every / 4), ping, {
      unref: true,
    });
    ping();
    if (!signal.aborted) this.#watchdogTimer.start();
  }

  get enabled(): boolean {
    return this.#socket !== undefined;
  }

  /** Sends `fields`; a failure is logged once and never stops the agent. */
  send(fields: Record<string, string | number>): void {
    if (this.#socket === undefined) return;
    try {
      sdNotify(this.#socket, fields);
    } catch (err) {
      if (!this.#failed) {
        this.#log.warn({ err: describeError(err), socket: this.#socket }, 'sd_notify failed');
      }
      this.#failed = true;
    }
  }

  /**
   * READY=1 when `agent` is first ready, or after READY_WAIT_MS with the reasons; then keeps
   * STATUS= current. Resolves early when `signal` aborts (the agent is stopping).
   */
  async started(agent: Checks, signal: AbortSignal, waitMs = READY_WAIT_MS): Promise<void> {
    if (!this.enabled) return;
    const deadline = this.#clock.now() + waitMs;
    while (!agent.ready().ok && this.#clock.now() < deadline && !signal.aborted) {
      this.#status(agent, 'starting');
      await sleep(this.#clock, POLL_MS);
    }
    if (signal.aborted) return;
    this.ready(agent);
    this.#timer = new Periodic(this.#clock, STATUS_MS, () => this.#status(agent, 'running'), {
      unref: true,
    });
    this.#timer.start();
  }

  ready(agent: Checks): void {
    this.send({ READY: 1, STATUS: statusLine(agent, 'running') });
  }

  reloading(): void {
    this.send({ RELOADING: 1, MONOTONIC_USEC: (process.hrtime.bigint() / 1000n).toString() });
  }

  stopping(): void {
    this.#timer?.stop();
    this.#watchdogTimer?.stop();
    this.send({ STOPPING: 1, STATUS: 'stopping' });
  }

  #status(agent: Checks, phase: string): void {
    const line = statusLine(agent, phase);
    if (line === this.#lastStatus) return;
    this.#lastStatus = line;
    this.send({ STATUS: line });
  }
}

function statusLine(agent: Checks, phase: string): string {
  const r = agent.ready();
  const h = r.ok ? agent.health() : r;
  const line = !r.ok
    ? `${phase}, not ready: ${r.reasons.join('; ')}`
    : h.ok
      ? 'ready'
      : `ready, needs attention: ${h.reasons.join('; ')}`;
  return line.replace(/\s+/g, ' ');
}
