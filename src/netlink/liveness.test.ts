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

  it('reports a subscription that stopped receiving', () => {
    const { nl, sockets } = open();
    nl.subscribe(['link', 'address'], { onEvent() {}, onError() {} });
    sockets[1]?.fail('EBADF', true);
    expect(nl.liveness()).toEqual({
      ok: false,
      reasons: ['netlink: the subscription to groups 1,5,9 stopped receiving (EBADF)'],
    });
    nl.close();
  });

  it('reports a request socket that stopped receiving, or was closed', () => {
    const { nl, sockets } = open();
    sockets[0]?.fail('EBADF', true);
    expect(nl.liveness().reasons).toEqual([
      'netlink: the request socket stopped receiving (EBADF)',
    ]);
    nl.close();
    expect(nl.liveness()).toEqual({
      ok: false,
      reasons: ['netlink: the request socket is closed'],
    });
  });
});
