// System-wide BPF facts and settings: libbpf's logger, feature probes, possible CPUs.
import { InvalidArgumentError } from '../errors/index.js';
import { checkFunction } from './args.js';
import { binding } from './binding.js';

export type LibbpfLogLevel = 'warn' | 'info' | 'debug';
export type LibbpfLogger = (level: LibbpfLogLevel, msg: string) => void;

/**
 * Routes libbpf's messages (one line each, without the trailing newline) to `logger`, or
 * drops them with `null`. libbpf never writes to stderr itself: before a logger is set, its
 * messages are dropped. The logger runs synchronously inside the libbpf call that printed;
 * an exception it throws is discarded (it cannot unwind through libbpf).
 */
export function setLibbpfLogger(logger: LibbpfLogger | null): void {
  if (logger !== null) checkFunction('logger', logger);
  binding().setLibbpfLogger(logger);
}

/** Number of possible CPUs (the number of values of a per-CPU map entry). */
export function possibleCpus(): number {
  return binding().possibleCpus();
}

let names: { prog: Set<string>; map: Set<string>; helper: Set<string> } | undefined;
function known(): { prog: Set<string>; map: Set<string>; helper: Set<string> } {
  if (names === undefined) {
    const b = binding();
    names = {
      prog: new Set(b.progTypeNames()),
      map: new Set(b.mapTypeNames()),
      helper: new Set(b.helperNames()),
    };
  }
  return names;
}

function checkName(kind: 'prog' | 'map' | 'helper', what: string, v: string): string {
  if (!known()[kind].has(v)) throw new InvalidArgumentError(`unknown ${what} ${String(v)}`);
  return v;
}

/** libbpf's program type names ("xdp", "sched_cls", ...). */
export function progTypeNames(): string[] {
  return [...known().prog];
}

/** libbpf's map type names ("hash", "percpu_array", "devmap_hash", ...). */
export function mapTypeNames(): string[] {
  return [...known().map];
}

/** BPF helper names known to the build headers, without the bpf_ prefix ("fib_lookup"). */
export function helperNames(): string[] {
  return [...known().helper];
}

/**
 * Whether the kernel supports program type `type` ("xdp"). True/false; throws SystemError
 * when the probe itself could not run (inconclusive).
 */
export function probeProgType(type: string): boolean {
  return binding().probeProgType(checkName('prog', 'program type', type));
}

/** Whether the kernel supports map type `type` ("devmap_hash"). Throws when inconclusive. */
export function probeMapType(type: string): boolean {
  return binding().probeMapType(checkName('map', 'map type', type));
}

/**
 * Whether programs of type `progType` may call helper `helper` ("fib_lookup"). Throws when
 * inconclusive. (Own probe: libbpf 1.1's misreads kernel 6.x verifier messages.)
 */
export function probeHelper(progType: string, helper: string): boolean {
  return binding().probeHelper(
    checkName('prog', 'program type', progType),
    checkName('helper', 'helper', helper),
  );
}

/** Whether the kernel exposes its own BTF (/sys/kernel/btf/vmlinux). */
export function btfVmlinuxPresent(): boolean {
  return binding().btfVmlinux();
}
