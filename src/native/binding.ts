// The raw native binding (native/build/Release/fibkeeper.node): a typed description of what
// the addon exports, loaded on first use so that importing this module never fails on a
// machine where the addon is not built (only calling into it does).
import { createRequire } from 'node:module';
import { FibkeeperError } from '../errors/index.js';

/** The error the addon throws or reports: a normal Error with these fields. */
export interface SystemError extends Error {
  /** errno name, e.g. "ENOBUFS" */
  code: string;
  /** positive errno value */
  errno: number;
  /** the call that failed, e.g. "recvmsg" */
  syscall: string;
  /** A receive error after which the socket is no longer polled (EBADF, a failed poll). */
  fatal?: boolean;
}

/** What every object the addon hands out has. */
export interface RawHandle {
  close(): void;
}

/** An object of the addon with a file descriptor of its own: -1 once closed. */
export interface RawFdHandle extends RawHandle {
  readonly fd: number;
}

/** A socket that polls on the libuv loop while receiving (NetlinkSocket, PacketSocket). */
export interface RawPolledSocket extends RawFdHandle {
  pause(): void;
  /** SO_MEMINFO's rmem_alloc: bytes held by the receive queue; -1 without SO_MEMINFO. */
  queuedBytes(): number;
  ref(): void;
  unref(): void;
}

/** The options of a netlink socket (NetlinkSocketOptions are these, checked). */
export interface RawNetlinkOptions {
  /** Netlink protocol; default 0 = NETLINK_ROUTE. */
  protocol?: number;
  /**
   * Network namespace the socket lives in: a name under /run/netns or an absolute path to a
   * netns file. The addon enters it on the calling thread only for socket(), then goes back.
   */
  netns?: string;
  /** Bind to this port id; default 0 (the kernel assigns one, see `portId`). */
  portId?: number;
  /** Multicast groups (RTNLGRP_* numbers) joined with NETLINK_ADD_MEMBERSHIP after bind. */
  groups?: number[];
  /** Receive buffer in bytes: SO_RCVBUFFORCE, falling back to SO_RCVBUF when not permitted. */
  rcvbuf?: number;
  /** Send buffer in bytes: SO_SNDBUFFORCE, falling back to SO_SNDBUF. */
  sndbuf?: number;
  /** NETLINK_EXT_ACK; default true (tolerated as absent on kernels without it). */
  extAck?: boolean;
  /** NETLINK_CAP_ACK; default true (tolerated as absent on kernels without it). */
  capAck?: boolean;
  /** NETLINK_GET_STRICT_CHK; default false. */
  strictCheck?: boolean;
  /** NETLINK_NO_ENOBUFS; default false. */
  noEnobufs?: boolean;
}

export interface RawNetlinkSocket extends RawPolledSocket {
  readonly portId: number;
  send(buffers: readonly Buffer[]): number;
  startSender(onError: (err: SystemError, firstSeq: number, lastSeq: number) => void): void;
  submit(buffer: Buffer, queue: boolean): boolean;
  addMembership(group: number): void;
  dropMembership(group: number): void;
  setReceiveBuffer(bytes: number): number;
  receive(onData: (chunk: Buffer) => void, onError: (err: SystemError) => void): void;
}

export interface RawPacketOptions {
  ifindex: number;
  protocol: number;
  netns?: string;
  ignoreOutgoing?: boolean;
  rcvbuf?: number;
}

export interface RawPacketSocket extends RawPolledSocket {
  send(frame: Buffer): number;
  membership(mac: Buffer, join: boolean): void;
  attachFilter(program: Buffer): void;
  /** `meta` holds 5 words per frame: offset, length, ifindex, protocol, pkttype. */
  receive(
    onFrames: (frames: Buffer, meta: Uint32Array) => void,
    onError: (err: SystemError) => void,
  ): void;
}

/** A BPF object with a file descriptor of its own (BpfProgram, BpfMap, BpfLink). */
export interface RawBpfFdObject extends RawFdHandle {
  pin(path: string): void;
}

/** The static side of BpfProgram, BpfMap and BpfLink. */
export interface RawBpfFdClass<H extends RawBpfFdObject> {
  fromPinned(path: string): H;
  fromId(id: number): H;
}

/** A program's info (BpfProgramInfo is this). */
export interface RawProgramInfo {
  id: number;
  name: string;
  /** The program tag (hex, 16 digits). */
  tag: string;
  /** enum bpf_prog_type value. */
  type: number;
  /** libbpf's name of the type ("xdp"). */
  typeName: string;
}

export interface RawTestRunOptions {
  dataIn: Buffer;
  ctxIn?: Buffer;
  dataSizeOut?: number;
  repeat?: number;
  flags?: number;
  batchSize?: number;
}

export interface RawTestRunResult {
  retval: number;
  durationNs: number;
  dataOut?: Buffer;
  ctxOut?: Buffer;
}

export interface RawBpfProgram extends RawBpfFdObject {
  info(): RawProgramInfo;
  testRun(opts: RawTestRunOptions): RawTestRunResult;
}

/** A map's info (BpfMapInfo is this without possibleCpus). */
export interface RawMapInfo {
  id: number;
  name: string;
  /** enum bpf_map_type value. */
  type: number;
  /** libbpf's name of the type ("percpu_array"). */
  typeName: string;
  keySize: number;
  valueSize: number;
  maxEntries: number;
  flags: number;
  isPerCpu: boolean;
  /** Number of possible CPUs: the number of values of a per-CPU entry. */
  possibleCpus: number;
}

export interface RawBpfMap extends RawBpfFdObject {
  info(): RawMapInfo;
  lookup(key: Buffer): Buffer | undefined;
  update(key: Buffer, value: Buffer, flags: number): void;
  delete(key: Buffer): boolean;
  keys(): Buffer[];
}

export interface RawLinkInfo {
  id: number;
  progId: number;
  type: number;
  typeName: string;
  ifindex?: number;
}

export interface RawBpfLink extends RawBpfFdObject {
  info(): RawLinkInfo;
  update(newProgFd: number, oldProgFd: number): void;
  detach(): void;
}

export interface RawRodataVariable {
  name: string;
  section: string;
  offset: number;
  size: number;
}

export interface RawBpfObject extends RawHandle {
  readonly loaded: boolean;
  programNames(): string[];
  mapNames(): string[];
  rodataVariables(): RawRodataVariable[];
  setRodata(name: string, bytes: Buffer): void;
  setMapPinPath(map: string, path: string): void;
  reuseMap(map: string, mapFd: number): void;
  setMaxEntries(map: string, maxEntries: number): void;
  load(): void;
  program(name: string): RawBpfProgram;
  map(name: string): RawBpfMap;
}

export interface RawXdpQuery {
  attachMode: number;
  progId: number;
  drvProgId: number;
  skbProgId: number;
  hwProgId: number;
}

export interface Binding {
  NetlinkSocket: new (opts: RawNetlinkOptions) => RawNetlinkSocket;
  PacketSocket: new (opts: RawPacketOptions) => RawPacketSocket;
  BpfObject: new (
    path: string,
    opts: { logSize?: number; logLevel?: number; pinRoot?: string },
  ) => RawBpfObject;
  BpfProgram: RawBpfFdClass<RawBpfProgram> & {
    loadRaw(type: string, insns: Buffer, name: string, license: string): RawBpfProgram;
  };
  BpfMap: RawBpfFdClass<RawBpfMap>;
  BpfLink: RawBpfFdClass<RawBpfLink> & {
    attachXdp(progFd: number, ifindex: number, flags: number, netns?: string): RawBpfLink;
    attachRawTracepoint(progFd: number, name: string): RawBpfLink;
  };
  xdpAttachLegacy(
    ifindex: number,
    progFd: number,
    flags: number,
    oldProgFd: number,
    netns?: string,
  ): void;
  xdpDetachLegacy(ifindex: number, flags: number, expectedProgFd: number, netns?: string): void;
  xdpQuery(ifindex: number, netns?: string): RawXdpQuery;
  xdpLinks(): RawLinkInfo[];
  setLibbpfLogger(fn: ((level: 'warn' | 'info' | 'debug', msg: string) => void) | null): void;
  possibleCpus(): number;
  progTypeNames(): string[];
  mapTypeNames(): string[];
  helperNames(): string[];
  probeProgType(name: string): boolean;
  probeMapType(name: string): boolean;
  probeHelper(progType: string, helper: string): boolean;
  btfVmlinux(): boolean;
  runInNetns<T>(netns: string, fn: () => T): T;
  mountBpffs(path: string, mode: number): void;
  unmount(path: string, lazy: boolean): void;
  isBpffs(path: string): boolean;
  sdNotify(socket: string, message: string): number;
  /** Test-only fault injection (faults.ts); null disarms. */
  configureFaults(
    spec: {
      seed: number;
      stormMs: number;
      deafMs: number;
      hangMs: number;
      delayMs: number;
      rules: { site: number; kind: number; err: number; probability: number }[];
    } | null,
  ): void;
  faultCounts(): number[];
  exitAfter(ms: number, code: number, message: string): void;
  trimHeap(): boolean;
  flockFd(fd: number, exclusive: boolean, wait: boolean): boolean;
  tcxQuery(ifindex: number, egress: boolean, netns?: string): number[] | null;
  iptablesTable(
    family: 4 | 6,
    name: string,
    netns: string | undefined,
    entries: boolean,
  ): { info: Buffer; entries: Buffer } | null;
  openTun(name: string, netns?: string): { fd: number; name: string };
  udpSocket(family: 4 | 6, address: string, port: number, netns?: string): number;
  attachTcx(progFd: number, ifindex: number, direction: string, netns?: string): number;
}

const ADDON_PATH = '../../native/build/Release/fibkeeper.node';
let loaded: Binding | undefined;

/** The native binding; throws a FibkeeperError naming `make native` when it is not built. */
export function binding(): Binding {
  if (loaded === undefined) {
    const require = createRequire(import.meta.url);
    try {
      loaded = require(ADDON_PATH) as Binding;
    } catch (err) {
      throw new FibkeeperError(`cannot load the native addon ${ADDON_PATH} (run make native)`, {
        cause: err,
        code: 'FIBKEEPER_ERR_NOT_SUPPORTED',
      });
    }
  }
  return loaded;
}
