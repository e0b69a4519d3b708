// V8 options the agent runs with. `fibkeeper run` holds large tables (100,000 to 1,000,000
// forwardable IPs) that change all the time; with V8's default young generation on a large
// machine (semi-spaces of 32-64 MiB) the short-lived objects of that churn cost the agent
// ~170 MiB more RSS at 100,000 IPs than with 16 MiB semi-spaces, for no measurable speed;
// and V8's heap growth for speed (an old generation let grow well past what is live before
// it is collected) cost it another ~200 MiB at 1,000,000 (peak 757 → 557 MiB with
// --optimize-for-size, which collects sooner and keeps the idle agent ~20 MiB smaller; the
// convergence stayed within the target) (docs/neighbor.md, "Memory"). And it optimizes with
// Maglev only (--max-opt=2): TurboFan's code is ~5 MiB of the node binary that the agent would
// otherwise page in (its file-backed RSS 52.2 → 46.7 MiB), and at 100,000 IPs that was what
// kept the peak above 128 MiB; the convergence stayed within the target at 100,000 and
// 1,000,000 (docs/neighbor.md, "The fifth pass"). A flag of the heap can
// only be set when the process starts, so `run` replaces itself (same PID, process.execve)
// with the flags added, once.
import { totalmem } from 'node:os';
/** Added to `node` for `fibkeeper run` unless the command line sets them already. */
export const AGENT_NODE_FLAGS: readonly string[] = [
  '--max-semi-space-size=16',
  '--optimize-for-size',
  '--max-opt=2',
];

/** What the process needs besides V8's heap (code, the young generation, native buffers). */
export const NON_HEAP_MIB = 96;

/**
 * The old generation's limit for a process in a memory cgroup of `limitBytes`: all of it but
 * NON_HEAP_MIB. V8 sizes its heap from the memory it may use — a quarter of a cgroup's limit
 * — so an agent under the DaemonSet's 640 MiB limit died of V8's own 160 MiB heap limit
 * ("JavaScript heap out of memory") with a table the cgroup had room for
 * (test/agent/memlimit.netns.test.ts). Undefined without a limit (or one larger than the
 * machine: no cgroup limit at all), where V8's default is a quarter of the machine.
 */
export function heapLimitMiB(
  limitBytes: number | undefined,
  machineBytes: number,
): number | undefined {
  if (limitBytes === undefined || !(limitBytes > 0) || limitBytes >= machineBytes) return undefined;
  return Math.max(128, Math.floor(limitBytes / 2 ** 20) - NON_HEAP_MIB);
}

/**
 * The arguments to re-execute this process with, or undefined when there is nothing to do:
 * the flags are set (by us or by the operator: a flag of the same name counts), or
 * FIBKEEPER_NODE_FLAGS=0 asks to run with Node's defaults. In a memory cgroup
 * (`limitBytes`, process.constrainedMemory()) the old generation may use all of the limit
 * but NON_HEAP_MIB (`--max-old-space-size`, unless the operator set it).
 */
export function reexecArgs(
  execArgv: readonly string[],
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  memory: { limitBytes?: number; machineBytes: number } = { machineBytes: Infinity },
): string[] | undefined {
  if (env.FIBKEEPER_NODE_FLAGS === '0') return undefined;
  const name = (f: string): string => f.split('=')[0]!.replace(/_/g, '-');
  const given = new Set(execArgv.map(name));
  const heap = heapLimitMiB(memory.limitBytes, memory.machineBytes);
  const wanted = [
    ...AGENT_NODE_FLAGS,
    ...(heap === undefined ? [] : [`--max-old-space-size=${heap}`]),
  ];
  const missing = wanted.filter((f) => !given.has(name(f)));
  if (missing.length === 0) return undefined;
  return [...missing, ...execArgv, ...argv.slice(1)];
}

/**
 * For `fibkeeper run`: replaces the process with one that has AGENT_NODE_FLAGS (same PID,
 * same stdio; nothing has been opened yet). Does nothing where process.execve is missing
 * (Node before 22.15, Windows): the agent then runs with Node's defaults.
 */
export function reexecForAgent(): void {
  const args = reexecArgs(process.execArgv, process.argv, process.env, {
    limitBytes: process.constrainedMemory?.(),
    machineBytes: totalmem(),
  });
  // A property, not an import: Node 22.12-22.14 has no process.execve.
  const execve = (
    process as { execve?: (file: string, args: string[], env: NodeJS.ProcessEnv) => never }
  ).execve;
  if (args === undefined || typeof execve !== 'function') return;
  execve.call(process, process.execPath, [process.execPath, ...args], process.env);
}
