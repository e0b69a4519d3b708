// Typed errors of the netlink client: a kernel error (NetlinkError), a dump that stayed
// inconsistent after its retries (DumpInterruptedError) and malformed bytes (ParseError).
import { constants as osConstants } from 'node:os';
import { FibkeeperError } from '../../errors/index.js';

// Where several names share a number, the one Linux (strerror, iproute2) uses.
const PREFERRED = ['EAGAIN', 'EOPNOTSUPP', 'EDEADLK'];

const ERRNO_NAMES: ReadonlyMap<number, string> = (() => {
  const m = new Map<number, string>();
  const errnos = osConstants.errno as Record<string, number>;
  for (const name of PREFERRED) if (errnos[name] !== undefined) m.set(errnos[name], name);
  for (const [name, num] of Object.entries(errnos)) if (!m.has(num)) m.set(num, name);
  return m;
})();

/** The symbolic name of a positive errno ("EEXIST"), or "E<number>" when unknown. */
export function errnoName(errno: number): string {
  return ERRNO_NAMES.get(errno) ?? `E${errno}`;
}

/** What an error ack carried besides the errno: the kernel's extended acknowledgement. */
export interface ExtAck {
  /** NLMSGERR_ATTR_MSG: the kernel's human-readable reason. */
  message?: string;
  /** NLMSGERR_ATTR_OFFS: byte offset of the offending attribute in the request. */
  offset?: number;
  /** NLMSGERR_ATTR_MISS_TYPE: the type of a missing attribute. */
  missingType?: number;
  /** NLMSGERR_ATTR_MISS_NEST: offset of the nest that lacks it. */
  missingNest?: number;
}

/**
 * The kernel refused a request. `errno` is positive, `errnoName` its symbol ("EEXIST");
 * `extAck.message` is the kernel's own explanation when it gave one, and is part of
 * `message`.
 */
export class NetlinkError extends FibkeeperError {
  readonly errno: number;
  readonly errnoName: string;
  readonly extAck: ExtAck;
  /** What was being done ("neighSet 10.0.0.1 dev 3"). */
  readonly operation: string;
  constructor(
    operation: string,
    errno: number,
    extAck: ExtAck = {},
    options?: { cause?: unknown },
  ) {
    const name = errnoName(errno);
    const why = extAck.message === undefined ? '' : `: ${extAck.message}`;
    super(`${operation}: ${name}${why}`, { ...options, code: 'FIBKEEPER_ERR_NETLINK' });
    this.errno = errno;
    this.errnoName = name;
    this.extAck = extAck;
    this.operation = operation;
  }
}

/** A dump kept coming back flagged NLM_F_DUMP_INTR (the table changed while it was read). */
export class DumpInterruptedError extends FibkeeperError {
  readonly attempts: number;
  constructor(operation: string, attempts: number) {
    super(`${operation}: dump interrupted by concurrent changes ${attempts} times in a row`, {
      code: 'FIBKEEPER_ERR_DUMP_INTERRUPTED',
    });
    this.attempts = attempts;
  }
}

/** Bytes that are not a well-formed netlink message. `offset` points at the fault. */
export class ParseError extends FibkeeperError {
  readonly offset: number;
  constructor(message: string, offset: number) {
    super(`netlink parse error at byte ${offset}: ${message}`, { code: 'FIBKEEPER_ERR_PARSE' });
    this.offset = offset;
  }
}
