// NetlinkHandle.liveness(): what /livez reports about the netlink sockets.
import { describe, expect, it } from 'vitest';
import type { NetlinkReceiver, SystemError } from '../native/index.js';
import { NetlinkHandle } from './handle.js';

class FakeSocket {
  readonly portId = 77;
  receiver: NetlinkReceiver | undefined;
  closed = false;
  send(data: Buffer | readonly Buffer[]): number {
    return Buffer.isBuffer(data) ? data.length : 0;
  }
  receive(r: NetlinkReceiver): void {
    this.receiver = r;
  }
  ref(): void {}
  unref(): void {}
  close(): void {
    this.closed = true;
  }
  fail(code: string, fatal: boolean): void {
    const err = Object.assign(new Error(`recvmsg: ${code}`), {
      code,
      errno: 9,
      syscall: 'recvmsg',
      ...(fatal ? { fatal: true } : {}),
    }) as SystemError;
    this.receiver?.onError(err);
  }
}

function open(): { nl: NetlinkHandle; sockets: FakeSocket[] } {
  const sockets: FakeSocket[] = [];
  const nl = NetlinkHandle.open({
    openSocket: () => {
      const s = new FakeSocket();
      sockets.push(s);
      return s;
    },
  });
  return { nl, sockets };
}

describe('NetlinkHandle.liveness', () => {
  it('is alive while the request socket and every open subscription still receive', () => {
    const { nl, sockets } = open();
    const sub = nl.subscribe(['link', 'address'], { onEvent() {}, onError() {} });
    expect(nl.liveness()).toEqual({ ok: true, reasons: [] });
    // Overflows and other recoverable errors do not count.
    sockets[1]?.fail('ENOBUFS', false);
    sockets[0]?.fail('ENOBUFS', false);
    expect(nl.liveness().ok).toBe(true);
    // A subscription closed on purpose (a feed replacing it after an overflow) is gone.
    sub.close();
    expect(nl.liveness().ok).toBe(true);
    nl.close();
  });

  it('replaces a subscription socket that fails, and reports one that cannot be replaced', () => {
    let refuse = false;
    const sockets: FakeSocket[] = [];
    const reopens: string[] = [];
    const nl = NetlinkHandle.open({
      openSocket: () => {
        if (refuse) throw Object.assign(new Error('socket: EMFILE'), { code: 'EMFILE' });
        const s = new FakeSocket();
        sockets.push(s);
        return s;
      },
      onReopen: (socket, cause, err) => reopens.push(`${socket} ${cause}${err ? ' failed' : ''}`),
    });
    const events: string[] = [];
    nl.subscribe(
      ['link', 'address'],
      { onEvent: (e) => events.push(e.kind === 'overflow' ? `overflow ${e.cause}` : e.kind) },
      { socket: 'link' },
    );
    sockets[1]?.fail('EBADF', true);
    expect(sockets[1]?.closed).toBe(true);
    expect(sockets).toHaveLength(3); // a fresh one, receiving
    expect(sockets[2]?.receiver).toBeDefined();
    expect(events).toEqual(['overflow EBADF']); // the reader resyncs
    expect(reopens).toEqual(['link EBADF']);
    expect(nl.liveness()).toEqual({ ok: true, reasons: [] });
    refuse = true;
    sockets[2]?.fail('EINVAL', false);
    expect(reopens).toEqual(['link EBADF', 'link EINVAL failed']);
    expect(nl.liveness()).toEqual({
      ok: false,
      reasons: ['netlink: the link socket could not be reopened after EINVAL: socket: EMFILE'],
    });
    nl.close();
  });

  it('replaces a request socket that fails; reports a closed one', () => {
    const { nl, sockets } = open();
    sockets[0]?.fail('EBADF', true);
    expect(sockets[0]?.closed).toBe(true);
    expect(sockets).toHaveLength(2);
    expect(nl.liveness()).toEqual({ ok: true, reasons: [] });
    nl.close();
    expect(nl.liveness()).toEqual({
      ok: false,
      reasons: ['netlink: the request socket is closed'],
    });
  });
});
