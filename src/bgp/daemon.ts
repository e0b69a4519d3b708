// The BIRD daemon as the agent's child: started in the managed namespace under
// `setpriv --pdeathsig TERM` (the kernel sends it SIGTERM when the agent dies, SIGKILL
// included: BIRD shuts down in order and closes its sessions with a Cease notification, so
// the routers drop its routes at once even when graceful restart was negotiated — a TCP
// close without a notification would have them keep the routes as stale for the restart
// time), its configuration written to a file of mode 0600 (it may hold TCP MD5 secrets) and
// applied with `configure` on the control socket.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../log/index.js';
import { sleep, Timer, type Clock } from '../sched/index.js';
import { BirdControl, parseProtocols, type BirdProtocolState } from './control.js';

export interface BirdDaemonParams {
  /** The bird binary (PATH lookup unless a path). */
  binary: string;
  runDir: string;
  /** Network namespace: a name under /run/netns or a path; default the agent's. */
  netns?: string;
  log: Logger;
  clock: Clock;
  /**
   * Start in graceful restart recovery (`bird -R`): the OPEN says the speaker restarted with
   * its forwarding state kept, so a peer keeps the stale routes until End-of-RIB instead of
   * dropping them when the new session comes up (RFC 4724, the F bit).
   */
  recover?: boolean;
  /** The daemon ended without stop() (its exit code or signal, its last stderr lines). */
  onExit: (why: string) => void;
}

const STDERR_LINES = 20;

export class BirdDaemon {
  readonly confPath: string;
  readonly ctlPath: string;
  #child: ChildProcess | undefined;
  #control: BirdControl | undefined;
  #stderr: string[] = [];
  #stopping = false;
  readonly #p: BirdDaemonParams;

  constructor(p: BirdDaemonParams) {
    this.#p = p;
    this.confPath = join(p.runDir, 'bird.conf');
    this.ctlPath = join(p.runDir, 'bird.ctl');
  }

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /** The command line: setpriv [nsenter] bird -f -c CONF -s CTL. */
  argv(): string[] {
    const ns = this.#p.netns;
    const enter =
      ns === undefined
        ? []
        : ['nsenter', `--net=${ns.includes('/') ? ns : `/run/netns/${ns}`}`, '--'];
    return [
      'setpriv',
      '--pdeathsig',
      'TERM',
      ...enter,
      this.#p.binary,
      ...(this.#p.recover === true ? ['-R'] : []),
      '-f',
      '-c',
      this.confPath,
      '-s',
      this.ctlPath,
    ];
  }

  #write(conf: string): void {
    const tmp = `${this.confPath}.tmp`;
    writeFileSync(tmp, conf, { mode: 0o600 });
    renameSync(tmp, this.confPath);
  }

  /** Writes the configuration, starts the daemon, waits until its control socket answers. */
  async start(conf: string, timeoutMs = 10_000): Promise<void> {
    mkdirSync(this.#p.runDir, { recursive: true, mode: 0o700 });
    const other = await BirdControl.open(this.ctlPath).catch(() => undefined);
    if (other !== undefined) {
      other.close();
      throw new Error(
        `a BIRD already answers on ${this.ctlPath} (another agent's?); give each agent a bgp.runDir of its own`,
      );
    }
    rmSync(this.ctlPath, { force: true });
    this.#write(conf);
    const [cmd, ...args] = this.argv();
    const child = spawn(cmd!, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    this.#child = child;
    this.#stopping = false;
    let partial = '';
    child.stderr!.on('data', (d: Buffer) => {
      const lines = (partial + d.toString('utf8')).split('\n');
      partial = lines.pop() ?? '';
      for (const l of lines) {
        this.#stderr.push(l);
        this.#p.log.warn({ bird: l }, `bird: ${l}`);
      }
      this.#stderr.splice(0, Math.max(0, this.#stderr.length - STDERR_LINES));
    });
    const exited = new Promise<string>((resolve) => {
      child.once('exit', (code, signal) => {
        const why = `bird exited (${signal ?? `code ${code}`})${this.#stderr.length ? `: ${this.#stderr.slice(-3).join(' / ')}` : ''}`;
        this.#control?.close();
        this.#control = undefined;
        this.#child = undefined;
        if (!this.#stopping) this.#p.onExit(why);
        resolve(why);
      });
      child.once('error', (err) => resolve(`cannot run ${cmd}: ${err.message}`));
    });
    const clock = this.#p.clock;
    const deadline = clock.now() + timeoutMs;
    let gone: string | undefined;
    void exited.then((w) => (gone = w));
    for (;;) {
      if (gone !== undefined) throw new Error(gone);
      try {
        this.#control = await BirdControl.open(this.ctlPath);
        return;
      } catch (err) {
        if (clock.now() > deadline) {
          await this.stop();
          throw new Error(`bird did not open ${this.ctlPath} in ${timeoutMs} ms`, { cause: err });
        }
        await sleep(clock, 20);
      }
    }
  }

  /** Writes the configuration and has the daemon apply it (`birdc configure`). */
  async configure(conf: string): Promise<void> {
    const c = this.#control;
    if (c === undefined) throw new Error('bird is not running');
    this.#write(conf);
    await c.command('configure');
  }

  /** The BGP protocols (one per peer) as `birdc show protocols all` shows them. */
  async protocols(): Promise<BirdProtocolState[]> {
    const c = this.#control;
    if (c === undefined) throw new Error('bird is not running');
    return parseProtocols(await c.command('show protocols all'));
  }

  /**
   * Stops the daemon: SIGTERM (BIRD closes its sessions with a Cease notification, so the
   * peers withdraw its routes at once), or with `graceful` the control command `graceful
   * restart` (BIRD closes its sessions without a notification: peers that negotiated graceful
   * restart keep the routes as stale until the next daemon's End-of-RIB or the restart time).
   * SIGKILL after `graceMs`. Idempotent.
   */
  async stop(graceMs = 3000, graceful = false): Promise<void> {
    const child = this.#child;
    const control = this.#control;
    this.#stopping = true;
    this.#control = undefined;
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) {
      control?.close();
      return;
    }
    const done = new Promise<void>((r) => child.once('exit', () => r()));
    const kill = new Timer(this.#p.clock);
    kill.start(graceMs, () => child.kill('SIGKILL'));
    if (graceful && control !== undefined) {
      // The daemon answers and exits; the socket closes under the command.
      await control.command('graceful restart').catch((err: unknown) => {
        this.#p.log.debug({ err }, 'bird: graceful restart');
      });
    } else {
      child.kill('SIGTERM');
    }
    control?.close();
    await done;
    kill.cancel();
  }
}
