// Error classes shared by every subsystem. Each has a stable `code` (FIBKEEPER_ERR_*) that
// callers and the control API match on; context is added with `{ cause }`, e.g.
// new FibkeeperError('attach xdp to eth0', { cause: err }).

export type ErrorCode =
  | 'FIBKEEPER_ERR_INVALID_ARGUMENT'
  | 'FIBKEEPER_ERR_NOT_SUPPORTED'
  | 'FIBKEEPER_ERR_NOT_FOUND'
  | 'FIBKEEPER_ERR_CONFLICT'
  | 'FIBKEEPER_ERR_PERMISSION'
  | 'FIBKEEPER_ERR_SYSTEM'
  | 'FIBKEEPER_ERR_NETLINK'
  | 'FIBKEEPER_ERR_DUMP_INTERRUPTED'
  | 'FIBKEEPER_ERR_PARSE'
  | 'FIBKEEPER_ERR_TIMEOUT'
  | 'FIBKEEPER_ERR_CLOSED'
  | 'FIBKEEPER_ERR_BPF'
  | 'FIBKEEPER_ERR_CONFIG'
  | 'FIBKEEPER_ERR_STORAGE'
  | 'FIBKEEPER_ERR_INTERNAL';

export class FibkeeperError extends Error {
  readonly code: ErrorCode;
  constructor(message: string, options?: { cause?: unknown; code?: ErrorCode }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = options?.code ?? 'FIBKEEPER_ERR_INTERNAL';
  }
}

/** Bad input from a user or caller: malformed IP, wrong family, unknown device, bad option. */
export class InvalidArgumentError extends FibkeeperError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, { ...options, code: 'FIBKEEPER_ERR_INVALID_ARGUMENT' });
  }
}

/** A kernel feature fibkeeper needs is missing. Carries the minimum kernel that has it. */
export class NotSupportedError extends FibkeeperError {
  readonly feature: string;
  readonly minKernel: string | undefined;
  constructor(feature: string, message: string, options?: { cause?: unknown; minKernel?: string }) {
    super(message, { cause: options?.cause, code: 'FIBKEEPER_ERR_NOT_SUPPORTED' });
    this.feature = feature;
    this.minKernel = options?.minKernel;
  }
}

export class NotFoundError extends FibkeeperError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, { ...options, code: 'FIBKEEPER_ERR_NOT_FOUND' });
  }
}

/** Something that fibkeeper does not own is in the way (a foreign XDP program, say). */
export class ConflictError extends FibkeeperError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, { ...options, code: 'FIBKEEPER_ERR_CONFLICT' });
  }
}

export class ConfigError extends FibkeeperError {
  /** The option at fault, as a dotted path ("xdp.mode"). */
  readonly option: string;
  constructor(option: string, message: string, options?: { cause?: unknown }) {
    super(`${option}: ${message}`, { ...options, code: 'FIBKEEPER_ERR_CONFIG' });
    this.option = option;
  }
}

export class TimeoutError extends FibkeeperError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, { ...options, code: 'FIBKEEPER_ERR_TIMEOUT' });
  }
}

export class ClosedError extends FibkeeperError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, { ...options, code: 'FIBKEEPER_ERR_CLOSED' });
  }
}

/**
 * Durable state could not be written (ENOSPC, EROFS, EIO, ...): what was asked is not
 * saved and not applied.
 */
export class StorageError extends FibkeeperError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, { ...options, code: 'FIBKEEPER_ERR_STORAGE' });
  }
}

/**
 * An error from a system call, as raised by the native addon: `code` is the errno name
 * ("ENOBUFS"), `errno` the positive number, `syscall` the call that failed.
 */
export interface SystemErrorLike extends Error {
  code: string;
  errno: number;
  syscall: string;
}

export function isSystemError(err: unknown): err is SystemErrorLike {
  return (
    err instanceof Error &&
    typeof (err as Partial<SystemErrorLike>).errno === 'number' &&
    typeof (err as Partial<SystemErrorLike>).syscall === 'string'
  );
}

/** The errno name of a system error anywhere in a cause chain, or undefined. */
export function errnoCode(err: unknown): string | undefined {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 8; depth++) {
    if (isSystemError(e)) return e.code;
    const nl = e as { errnoName?: unknown };
    if (typeof nl.errnoName === 'string') return nl.errnoName;
    e = e.cause;
  }
  return undefined;
}

/** One line that names the error and every cause: "attach xdp to eth0: EPERM: ...". */
export function describeError(err: unknown): string {
  const parts: string[] = [];
  for (let e: unknown = err, depth = 0; e !== undefined && depth < 8; depth++) {
    if (e instanceof Error) {
      // A message that quotes its cause already ("cannot read x: ENOENT: …") says it once.
      if (parts.length === 0 || !parts[parts.length - 1]!.includes(e.message)) {
        parts.push(e.message);
      }
      e = e.cause;
    } else {
      parts.push(String(e));
      break;
    }
  }
  return parts.join(': ');
}
