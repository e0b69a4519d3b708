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

export interface Binding {
  NetlinkSocket: new (opts: RawNetlinkOptions) => RawNetlinkSocket;
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
