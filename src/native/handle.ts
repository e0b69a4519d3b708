// Lifetimes of the addon's objects, shared by the wrappers. A wrapper whose construction fails
// closes the handle it was given (adopt); a wrapper closes its handle once and refuses calls
// afterwards with ClosedError (NativeObject). On top of that, PolledSocket is what
// NetlinkSocket and PacketSocket share, and BpfFdObject what BpfProgram, BpfMap and BpfLink
// share, as in the addon (native/receiving_socket.h, native/bpf_fd_object.h).
import { ClosedError } from '../errors/index.js';
import { checkPath } from './args.js';
import type { RawBpfFdObject, RawHandle, RawPolledSocket } from './binding.js';

/**
 * Runs `init(handle)`, the part of a wrapper's construction that may throw, and closes
 * `handle` when it does: a wrapper that fails to construct leaks no descriptor.
 */
export function adopt<H extends RawHandle, R>(handle: H, init: (handle: H) => R): R {
  try {
    return init(handle);
  } catch (err) {
    handle.close();
    throw err;
  }
}

// How the wrappers reach their handle: through openHandle/peekHandle, not methods, so that the
// handle stays as private as a #field (a protected method would be callable at run time).
let handleOf: <H extends RawHandle>(obj: NativeObject<H>, open: boolean) => H;

/** A wrapper that owns one handle of the addon. */
export abstract class NativeObject<H extends RawHandle> {
  readonly #handle: H;
  readonly #what: string;
  #closed = false;

  static {
    handleOf = <T extends RawHandle>(obj: NativeObject<T>, open: boolean): T => {
      if (open && obj.#closed) throw new ClosedError(`${obj.#what} is closed`);
      return obj.#handle;
    };
  }

  /** `what` names the object in ClosedError ("netlink socket", "BPF map stats"). */
  protected constructor(handle: H, what: string) {
    this.#handle = handle;
    this.#what = what;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Closes the handle. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#handle.close();
  }
}

/** The handle of `obj`, for a call that needs it open: ClosedError once closed. */
export function openHandle<H extends RawHandle>(obj: NativeObject<H>): H {
  return handleOf(obj, true);
}

/** The handle of `obj`, open or not, for what a closed handle still answers. */
export function peekHandle<H extends RawHandle>(obj: NativeObject<H>): H {
  return handleOf(obj, false);
}

/** A socket that polls on the libuv loop while receiving. */
export abstract class PolledSocket<H extends RawPolledSocket> extends NativeObject<H> {
  /** The socket's file descriptor, -1 after close(). */
  get fd(): number {
    return peekHandle(this).fd;
  }

  /** Stops polling (what arrives queues in the kernel until the receive buffer is full). */
  pause(): void {
    if (!this.closed) peekHandle(this).pause();
  }

  /**
   * Bytes the receive queue holds now, as the kernel counts them against the receive buffer
   * (each datagram's skb truesize, not its length; SO_MEMINFO); undefined on a kernel
   * without SO_MEMINFO (before 4.12). Throws SystemError once closed.
   */
  queuedBytes(): number | undefined {
    const bytes = openHandle(this).queuedBytes();
    return bytes < 0 ? undefined : bytes;
  }

  /** The poll keeps the event loop alive (the default while receiving). */
  ref(): void {
    if (!this.closed) peekHandle(this).ref();
  }

  /** The poll no longer keeps the event loop alive. */
  unref(): void {
    if (!this.closed) peekHandle(this).unref();
  }
}

/**
 * A BPF object with a file descriptor of its own. Closing it closes this descriptor only: the
 * object lives on while pinned, attached or open elsewhere.
 */
export abstract class BpfFdObject<H extends RawBpfFdObject> extends NativeObject<H> {
  /** The file descriptor, -1 after close(). */
  get fd(): number {
    return peekHandle(this).fd;
  }

  /** Pins the object at `path` on a bpffs: it then outlives this process. */
  pin(path: string): void {
    openHandle(this).pin(checkPath('path', path));
  }
}
