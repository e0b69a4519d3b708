// XDP attachment: bpf_link (BpfLink) and the legacy netlink attach/detach, plus queries that
// tell which program (and which link) sits on a device. Every call that takes an ifindex
// takes `netns` too: the ifindex is resolved in that namespace.
import { ClosedError, InvalidArgumentError } from '../errors/index.js';
import { checkNetns, checkPath, checkUint } from './args.js';
import { binding, type RawBpfLink, type RawLinkInfo } from './binding.js';
import { BpfProgram } from './bpf-program.js';
import { adopt, BpfFdObject, openHandle } from './handle.js';

/** Where an XDP program runs: the driver (native), the generic skb path, the NIC, or auto. */
export type XdpMode = 'native' | 'generic' | 'offload' | 'auto';

const XDP_FLAGS_UPDATE_IF_NOEXIST = 1;
const MODE_FLAGS: Record<XdpMode, number> = {
  auto: 0,
  generic: 1 << 1,
  native: 1 << 2,
  offload: 1 << 3,
};
const ATTACH_MODES = ['none', 'native', 'generic', 'offload', 'multi'] as const;
export type XdpAttachMode = (typeof ATTACH_MODES)[number];

export interface XdpQueryResult {
  /** How programs are attached: none, one in native/generic/offload mode, or several (multi). */
  attachMode: XdpAttachMode;
  /** The attached program's id when exactly one is attached, else 0. */
  progId: number;
  nativeProgId: number;
  genericProgId: number;
  offloadProgId: number;
}

export interface BpfLinkInfo {
  id: number;
  progId: number;
  /** enum bpf_link_type value. */
  type: number;
  /** libbpf's name ("xdp"). */
  typeName: string;
  /** XDP links: the device (0 once detached). */
  ifindex: number | undefined;
}

function modeFlags(mode: XdpMode | undefined): number {
  const m = mode ?? 'auto';
  const flags = MODE_FLAGS[m];
  if (flags === undefined)
    throw new InvalidArgumentError(
      `XDP mode must be native, generic, offload or auto, got ${String(m)}`,
    );
  return flags;
}

function openProgFd(prog: BpfProgram, what: string): number {
  if (!(prog instanceof BpfProgram)) throw new InvalidArgumentError(`${what} must be a BpfProgram`);
  if (prog.closed) throw new ClosedError(`${what} is closed`);
  return prog.fd;
}

function netnsArg(netns: string | undefined): string | undefined {
  return netns === undefined ? undefined : checkNetns('netns', netns);
}

function linkInfo(i: RawLinkInfo): BpfLinkInfo {
  return { id: i.id, progId: i.progId, type: i.type, typeName: i.typeName, ifindex: i.ifindex };
}

/**
 * A BPF link: the attachment itself. Closing the last fd of an unpinned link detaches it; a
 * pinned link outlives this process.
 */
export class BpfLink extends BpfFdObject<RawBpfLink> {
  readonly id: number;

  /** @internal Wraps a handle from the addon; use the static constructors. */
  constructor(handle: RawBpfLink) {
    const id = adopt(handle, (h) => h.info().id);
    super(handle, `BPF link ${id}`);
    this.id = id;
  }

  /**
   * Attaches `prog` to the XDP hook of `ifindex` with a link (bpf_link_create, kernel 5.9+).
   * Fails with EBUSY when a program is attached already (legacy or another link).
   */
  static attachXdp(
    prog: BpfProgram,
    ifindex: number,
    opts: { mode?: XdpMode; netns?: string } = {},
  ): BpfLink {
    const fd = openProgFd(prog, 'prog');
    return new BpfLink(
      binding().BpfLink.attachXdp(
        fd,
        checkUint('ifindex', ifindex, 0x7fff_ffff, 1),
        modeFlags(opts.mode),
        netnsArg(opts.netns),
      ),
    );
  }

  /**
   * Attaches a raw tracepoint program (BPF_PROG_TYPE_RAW_TRACEPOINT) to the tracepoint
   * `name` ("xdp_redirect_err"), kernel 5.7+. The tracepoint fires in every namespace.
   */
  static attachRawTracepoint(prog: BpfProgram, name: string): BpfLink {
    const fd = openProgFd(prog, 'prog');
    if (typeof name !== 'string' || !/^[a-z0-9_]{1,64}$/.test(name)) {
      throw new InvalidArgumentError(
        `tracepoint name must be like xdp_redirect_err, got ${String(name)}`,
      );
    }
    return new BpfLink(binding().BpfLink.attachRawTracepoint(fd, name));
  }

  /** Opens a link pinned on a bpffs. */
  static fromPinned(path: string): BpfLink {
    return new BpfLink(binding().BpfLink.fromPinned(checkPath('path', path)));
  }

  /** Opens a link by id (needs CAP_SYS_ADMIN). */
  static fromId(id: number): BpfLink {
    return new BpfLink(binding().BpfLink.fromId(checkUint('id', id, 0xffff_ffff, 1)));
  }

  info(): BpfLinkInfo {
    return linkInfo(openHandle(this).info());
  }

  /**
   * Replaces the program atomically (bpf_link_update): packets see either the old or the new
   * program, never none. With `oldProg`, only if that program is the attached one (else EPERM).
   */
  update(newProg: BpfProgram, opts: { oldProg?: BpfProgram } = {}): void {
    const handle = openHandle(this);
    const newFd = openProgFd(newProg, 'newProg');
    const oldFd = opts.oldProg === undefined ? -1 : openProgFd(opts.oldProg, 'oldProg');
    handle.update(newFd, oldFd);
  }

  /** Detaches the program (BPF_LINK_DETACH); the link object stays, defunct, until closed and unpinned. */
  detach(): void {
    openHandle(this).detach();
  }
}

/**
 * Legacy (netlink) XDP attach, for kernels without XDP links (bpf_xdp_attach). With
 * `replaceOld`, the swap happens only if that program is the attached one (XDP_FLAGS_REPLACE,
 * else EEXIST); with `onlyIfNone`, only if nothing is attached (else EBUSY).
 */
export function xdpAttachLegacy(
  ifindex: number,
  prog: BpfProgram,
  opts: { mode?: XdpMode; replaceOld?: BpfProgram; onlyIfNone?: boolean; netns?: string } = {},
): void {
  const fd = openProgFd(prog, 'prog');
  const oldFd = opts.replaceOld === undefined ? -1 : openProgFd(opts.replaceOld, 'replaceOld');
  const flags = modeFlags(opts.mode) | (opts.onlyIfNone === true ? XDP_FLAGS_UPDATE_IF_NOEXIST : 0);
  binding().xdpAttachLegacy(
    checkUint('ifindex', ifindex, 0x7fff_ffff, 1),
    fd,
    flags,
    oldFd,
    netnsArg(opts.netns),
  );
}

/**
 * Legacy XDP detach (bpf_xdp_detach) in `mode`. With `expectedProg`, only if that program is
 * the attached one (else EEXIST). Detaching a link-attached program this way fails (EBUSY).
 */
export function xdpDetachLegacy(
  ifindex: number,
  mode: XdpMode,
  opts: { expectedProg?: BpfProgram; netns?: string } = {},
): void {
  const expected =
    opts.expectedProg === undefined ? -1 : openProgFd(opts.expectedProg, 'expectedProg');
  binding().xdpDetachLegacy(
    checkUint('ifindex', ifindex, 0x7fff_ffff, 1),
    modeFlags(mode),
    expected,
    netnsArg(opts.netns),
  );
}

/** Which XDP programs are attached to `ifindex` (bpf_xdp_query, like `ip link show`). */
export function xdpQuery(ifindex: number, opts: { netns?: string } = {}): XdpQueryResult {
  const q = binding().xdpQuery(checkUint('ifindex', ifindex, 0x7fff_ffff, 1), netnsArg(opts.netns));
  return {
    attachMode: ATTACH_MODES[q.attachMode] ?? 'multi',
    progId: q.progId,
    nativeProgId: q.drvProgId,
    genericProgId: q.skbProgId,
    offloadProgId: q.hwProgId,
  };
}

/** Every XDP bpf_link on the system, in every namespace (needs CAP_SYS_ADMIN). */
export function xdpLinks(): BpfLinkInfo[] {
  return binding().xdpLinks().map(linkInfo);
}

/**
 * The XDP links attached to `ifindex` in `netns`. Link info names only the ifindex, which
 * is per namespace, so a link also has to carry the program that xdpQuery reports for the
 * device. Empty when the device's program was attached without a link (legacy) or nothing is
 * attached.
 */
export function xdpLinksOn(ifindex: number, opts: { netns?: string } = {}): BpfLinkInfo[] {
  const q = xdpQuery(ifindex, opts);
  const attached = new Set(
    [q.nativeProgId, q.genericProgId, q.offloadProgId].filter((id) => id !== 0),
  );
  return xdpLinks().filter((l) => l.ifindex === ifindex && attached.has(l.progId));
}
