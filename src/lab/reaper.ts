// A watchdog for what the labs (demo, tests, benchmarks) start: a small process in a session
// of its own that learns, as they are made, the PIDs of the processes we spawn and the names
// of the namespaces we create, and waits on a pipe from us. When the pipe closes — we exited
// normally, threw, were interrupted, timed out, or were killed with SIGKILL together with our
// whole process group — it ends each of those processes that is still the one we started
// (same PID *and* start time in /proc, so a reused PID is never hit), deletes each of those
// namespaces that still exists (after ending what runs inside it) and removes the temp dirs. Our own orderly cleanup
// stays first; the reaper only sweeps what it left.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** The reaper's own program (node -e): builtins only, so it runs from src/ and dist/ alike. */
const PROGRAM = `
const { readFileSync, existsSync, rmSync } = require('node:fs');
const { spawnSync } = require('node:child_process');
const pids = new Map();
const netns = new Set();
const prefixes = new Map();
const dirs = new Set();
const start = (pid) => { try { return readFileSync('/proc/' + pid + '/stat', 'utf8').split(') ').pop().split(' ')[19]; } catch { return undefined; } };
const zombie = (pid) => { try { return readFileSync('/proc/' + pid + '/stat', 'utf8').split(') ').pop().startsWith('Z'); } catch { return false; } };
const kill = (pid) => { try { process.kill(pid, 'SIGKILL'); } catch {} };
let buf = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (s) => {
  buf += s;
  for (let i = buf.indexOf('\\n'); i >= 0; i = buf.indexOf('\\n')) {
    const [kind, a, b, c] = buf.slice(0, i).split(' ');
    buf = buf.slice(i + 1);
    if (kind === 'pid') pids.set(Number(a), b);
    else if (kind === 'forget') pids.delete(Number(a));
    else if (kind === 'netns') netns.add(a);
    else if (kind === 'prefix') prefixes.set(a, [Number(b), c]);
    else if (kind === 'dir') dirs.add(decodeURIComponent(a));
  }
});
const sweep = () => {
  for (const [pid, t] of pids) if (start(pid) === t) kill(pid);
  let all = [];
  try { all = require('node:fs').readdirSync('/run/netns'); } catch {}
  // Namespaces named after a process of ours: only once it is gone (a zombie is reaped by
  // init within moments); if its PID now belongs to another process, they are not ours.
  const until = Date.now() + 2000;
  for (const [p, [pid, t]] of prefixes) {
    while (start(pid) === t && !zombie(pid) && Date.now() < until) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
    if (start(pid) === undefined || (start(pid) === t && zombie(pid))) for (const n of all) if (n.startsWith(p)) netns.add(n);
  }
  for (const ns of netns) {
    if (!existsSync('/run/netns/' + ns)) continue;
    const out = spawnSync('ip', ['netns', 'pids', ns], { encoding: 'utf8' }).stdout || '';
    for (const p of out.split(/\\s+/).filter(Boolean)) kill(Number(p));
    spawnSync('ip', ['netns', 'del', ns]);
  }
  for (const d of dirs) { try { rmSync(d, { recursive: true, force: true }); } catch {} }
  process.exit(0);
};
process.stdin.on('end', sweep);
process.stdin.on('error', sweep);
for (const s of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(s, () => {});
`;

/** The start time of a process (field 22 of /proc/PID/stat), or undefined when it is gone. */
export function processStartTime(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ').pop()?.split(' ')[19];
  } catch {
    return undefined;
  }
}

export class Reaper {
  readonly #child: ChildProcess;

  private constructor(child: ChildProcess) {
    this.#child = child;
  }

  /** Starts the watchdog (detached: a new session, so a kill of our process group spares it). */
  static start(): Reaper {
    const child = spawn(process.execPath, ['-e', PROGRAM], {
      detached: true,
      stdio: ['pipe', 'ignore', 'ignore'],
    });
    child.unref();
    const stdin = child.stdin as unknown as { unref?: () => void; on: ChildProcess['on'] };
    stdin.unref?.();
    stdin.on('error', () => {});
    return new Reaper(child);
  }

  get pid(): number | undefined {
    return this.#child.pid;
  }

  #send(line: string): void {
    if (this.#child.stdin?.writable) this.#child.stdin.write(`${line}\n`);
  }

  /** Ends `pid` (if it is still that process) when we are gone. Returns the pid. */
  process(pid: number | undefined): number | undefined {
    if (pid === undefined) return pid;
    const t = processStartTime(pid);
    if (t !== undefined) this.#send(`pid ${pid} ${t}`);
    return pid;
  }

  /** Tracks a child process: registered now, forgotten when it exits. */
  child<C extends ChildProcess>(c: C): C {
    const pid = this.process(c.pid);
    if (pid !== undefined) c.once('exit', () => this.#send(`forget ${pid}`));
    return c;
  }

  /**
   * Tracks an agent (`fibkeeper run`): its process, and the scratch namespaces its probes
   * name after its PID (fkprobe-PID-…; a killed agent cannot delete the one it was using).
   */
  agent<C extends ChildProcess>(c: C): C {
    this.child(c);
    const t = c.pid === undefined ? undefined : processStartTime(c.pid);
    if (t !== undefined) this.#send(`prefix fkprobe-${c.pid}- ${c.pid} ${t}`);
    return c;
  }

  /** Deletes namespace `name` (and ends what runs in it) when we are gone, if it exists. */
  netns(...names: string[]): void {
    for (const n of names) this.#send(`netns ${n}`);
  }

  /** Removes directory `path` (a temp dir of ours) when we are gone. */
  dir(path: string): void {
    this.#send(`dir ${encodeURIComponent(path)}`);
  }

  /** Closes the pipe: the reaper sweeps now (after our own cleanup) and exits. */
  close(): void {
    this.#child.stdin?.end();
  }
}
