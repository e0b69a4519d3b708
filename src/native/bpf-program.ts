// BpfProgram: a loaded BPF program with its own file descriptor.
import { InvalidArgumentError } from '../errors/index.js';
import { checkBuffer, checkPath, checkUint } from './args.js';
import {
  binding,
  type RawBpfProgram,
  type RawProgramInfo,
  type RawTestRunOptions,
} from './binding.js';
import { adopt, BpfFdObject, openHandle } from './handle.js';
import { w32le, wi32le } from '../util/index.js';

/** XDP program return codes. */
export const XdpAction = { ABORTED: 0, DROP: 1, PASS: 2, TX: 3, REDIRECT: 4 } as const;
export type XdpActionValue = (typeof XdpAction)[keyof typeof XdpAction];

/** bpf_prog_test_run flags. */
export const BPF_F_TEST_RUN_ON_CPU = 1;
export const BPF_F_TEST_XDP_LIVE_FRAMES = 2;

const SIZEOF_XDP_MD = 24;

/** A program's info (see RawProgramInfo). */
export interface BpfProgramInfo extends RawProgramInfo {}

export interface TestRunOptions {
  /** The packet (for XDP: at least an Ethernet header). */
  dataIn: Buffer;
  /** Raw context in (e.g. struct xdp_md); mutually exclusive with `xdpCtx`. */
  ctxIn?: Buffer;
  /**
   * Builds a struct xdp_md for `dataIn`. `ingressIfindex` is resolved in the calling
   * thread's network namespace: call testRun inside runInNetns for a namespaced device.
   */
  xdpCtx?: { ingressIfindex?: number; rxQueueIndex?: number };
  /** Room for the output packet; default dataIn.length + 256. Ignored with live frames. */
  dataSizeOut?: number;
  /**
   * Runs (default 1). A run interrupted by a signal or task-work notification is started
   * again, and the iterations it had done stay done (a program's counters include them):
   * for exact side effects, call with repeat 1.
   */
  repeat?: number;
  /** BPF_F_TEST_* flags. */
  flags?: number;
  /** BPF_F_TEST_XDP_LIVE_FRAMES: the frames really go where the program sends them. */
  liveFrames?: boolean;
  /** Frames per batch in live-frames mode (kernel default 64). */
  batchSize?: number;
}

export interface TestRunResult {
  retval: number;
  /** Average duration of one run, in ns. */
  durationNs: number;
  /** The packet after the program (not in live-frames mode). */
  dataOut: Buffer | undefined;
  /** The context after the program, when a context was passed (not in live-frames mode). */
  ctxOut: Buffer | undefined;
}

/** struct xdp_md for a packet of `length` bytes. */
export function xdpMd(
  length: number,
  opts: { ingressIfindex?: number; rxQueueIndex?: number } = {},
): Buffer {
  const md = Buffer.alloc(SIZEOF_XDP_MD);
  w32le(md, 0, 0); // data
  w32le(md, length, 4); // data_end
  w32le(md, 0, 8); // data_meta
  w32le(md, checkUint('ingressIfindex', opts.ingressIfindex ?? 0), 12);
  w32le(md, checkUint('rxQueueIndex', opts.rxQueueIndex ?? 0), 16);
  return md;
}

/**
 * A loaded BPF program. Closing it closes this descriptor: the program lives on while pinned,
 * attached or open elsewhere.
 */
export class BpfProgram extends BpfFdObject<RawBpfProgram> {
  readonly #info: RawProgramInfo;

  /** @internal Wraps a handle from the addon; use the static constructors. */
  constructor(handle: RawBpfProgram) {
    const info = adopt(handle, (h) => h.info());
    super(handle, `BPF program ${info.name}`);
    this.#info = info;
  }

  /** Opens a program pinned on a bpffs. */
  static fromPinned(path: string): BpfProgram {
    return new BpfProgram(binding().BpfProgram.fromPinned(checkPath('path', path)));
  }

  /** Opens a loaded program by id (needs CAP_SYS_ADMIN). */
  static fromId(id: number): BpfProgram {
    return new BpfProgram(binding().BpfProgram.fromId(checkUint('id', id, 0xffff_ffff, 1)));
  }

  /**
   * Loads raw instructions (8 bytes each). On failure throws a SystemError with the verifier
   * log in `verifierLog`.
   */
  static loadRaw(opts: {
    type: string;
    insns: Buffer;
    name?: string;
    license?: string;
  }): BpfProgram {
    const insns = checkBuffer('insns', opts.insns);
    if (insns.length === 0 || insns.length % 8 !== 0) {
      throw new InvalidArgumentError('insns must be a non-empty multiple of 8 bytes');
    }
    const name = opts.name ?? 'fk_raw';
    if (!/^[A-Za-z0-9_.]{1,15}$/.test(name)) {
      throw new InvalidArgumentError(`program name must be 1-15 of [A-Za-z0-9_.], got ${name}`);
    }
    return new BpfProgram(
      binding().BpfProgram.loadRaw(opts.type, insns, name, opts.license ?? 'GPL'),
    );
  }

  /** A two-instruction XDP program that returns `action` (feature probes, tests, placeholders). */
  static loadXdpAction(action: XdpActionValue, name = 'fk_xdp_action'): BpfProgram {
    checkUint('action', action, XdpAction.REDIRECT);
    const insns = Buffer.alloc(16);
    insns.writeUInt8(0xb7, 0); // BPF_ALU64 | BPF_MOV | BPF_K, dst r0
    wi32le(insns, action, 4);
    insns.writeUInt8(0x95, 8); // BPF_JMP | BPF_EXIT
    return BpfProgram.loadRaw({ type: 'xdp', insns, name });
  }

  /** An XDP program that passes every packet. */
  static loadXdpPass(): BpfProgram {
    return BpfProgram.loadXdpAction(XdpAction.PASS, 'fk_xdp_pass');
  }

  get id(): number {
    return this.#info.id;
  }
  get name(): string {
    return this.#info.name;
  }
  get tag(): string {
    return this.#info.tag;
  }
  /** libbpf's name of the program type ("xdp"). */
  get type(): string {
    return this.#info.typeName;
  }

  /** Fresh info from the kernel. */
  info(): BpfProgramInfo {
    return openHandle(this).info();
  }

  /** bpf_prog_test_run_opts. Throws SystemError. */
  testRun(opts: TestRunOptions): TestRunResult {
    const handle = openHandle(this);
    const raw: RawTestRunOptions = { dataIn: checkBuffer('dataIn', opts.dataIn) };
    if (opts.ctxIn !== undefined && opts.xdpCtx !== undefined) {
      throw new InvalidArgumentError('testRun: give ctxIn or xdpCtx, not both');
    }
    if (opts.ctxIn !== undefined) raw.ctxIn = checkBuffer('ctxIn', opts.ctxIn);
    if (opts.xdpCtx !== undefined) raw.ctxIn = xdpMd(raw.dataIn.length, opts.xdpCtx);
    if (opts.dataSizeOut !== undefined)
      raw.dataSizeOut = checkUint('dataSizeOut', opts.dataSizeOut);
    if (opts.repeat !== undefined) raw.repeat = checkUint('repeat', opts.repeat, 0x7fff_ffff);
    let flags = checkUint('flags', opts.flags ?? 0);
    if (opts.liveFrames === true) flags |= BPF_F_TEST_XDP_LIVE_FRAMES;
    raw.flags = flags;
    if (opts.batchSize !== undefined) raw.batchSize = checkUint('batchSize', opts.batchSize);
    const r = handle.testRun(raw);
    return { retval: r.retval, durationNs: r.durationNs, dataOut: r.dataOut, ctxOut: r.ctxOut };
  }
}
