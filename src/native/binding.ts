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
}

export interface RawNetlinkOptions {
  protocol?: number;
  netns?: string;
  portId?: number;
  groups?: number[];
  rcvbuf?: number;
  sndbuf?: number;
  extAck?: boolean;
  capAck?: boolean;
  strictCheck?: boolean;
  noEnobufs?: boolean;
}

export interface RawNetlinkSocket {
  readonly fd: number;
  readonly portId: number;
  send(buffers: readonly Buffer[]): number;
  addMembership(group: number): void;
  dropMembership(group: number): void;
  setReceiveBuffer(bytes: number): number;
  receive(onData: (chunk: Buffer) => void, onError: (err: SystemError) => void): void;
  pause(): void;
  ref(): void;
  unref(): void;
  close(): void;
}

export interface RawPacketOptions {
  ifindex: number;
  protocol: number;
  netns?: string;
  ignoreOutgoing?: boolean;
  rcvbuf?: number;
}

export interface RawPacketSocket {
  readonly fd: number;
  send(frame: Buffer): number;
  /** `meta` holds 5 words per frame: offset, length, ifindex, protocol, pkttype. */
  receive(
    onFrames: (frames: Buffer, meta: Uint32Array) => void,
    onError: (err: SystemError) => void,
  ): void;
  pause(): void;
  ref(): void;
  unref(): void;
  close(): void;
}

export interface RawProgramInfo {
  id: number;
  name: string;
  tag: string;
  type: number;
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

export interface RawBpfProgram {
  readonly fd: number;
  info(): RawProgramInfo;
  pin(path: string): void;
  testRun(opts: RawTestRunOptions): RawTestRunResult;
  close(): void;
}

export interface RawMapInfo {
  id: number;
  name: string;
  type: number;
  typeName: string;
  keySize: number;
  valueSize: number;
  maxEntries: number;
  flags: number;
  isPerCpu: boolean;
  possibleCpus: number;
}

export interface RawBpfMap {
  readonly fd: number;
  info(): RawMapInfo;
  lookup(key: Buffer): Buffer | undefined;
  update(key: Buffer, value: Buffer, flags: number): void;
  delete(key: Buffer): boolean;
  keys(): Buffer[];
  pin(path: string): void;
  close(): void;
}

export interface RawLinkInfo {
  id: number;
  progId: number;
  type: number;
  typeName: string;
  ifindex?: number;
}

export interface RawBpfLink {
  readonly fd: number;
  info(): RawLinkInfo;
  pin(path: string): void;
  update(newProgFd: number, oldProgFd: number): void;
  detach(): void;
  close(): void;
}

export interface RawRodataVariable {
  name: string;
  section: string;
  offset: number;
  size: number;
}

export interface RawBpfObject {
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
  close(): void;
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
  BpfProgram: {
    fromPinned(path: string): RawBpfProgram;
    fromId(id: number): RawBpfProgram;
    loadRaw(type: string, insns: Buffer, name: string, license: string): RawBpfProgram;
  };
  BpfMap: {
    fromPinned(path: string): RawBpfMap;
    fromId(id: number): RawBpfMap;
  };
  BpfLink: {
    attachXdp(progFd: number, ifindex: number, flags: number, netns?: string): RawBpfLink;
    fromPinned(path: string): RawBpfLink;
    fromId(id: number): RawBpfLink;
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
