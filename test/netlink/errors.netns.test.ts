// Kernel errors reach the caller with the extended-ack text; a request socket whose replies
// overflow recovers (lost replies are reported, the handle keeps working); and the
// receive-buffer budget per reply that bounds the bulk window holds on this kernel.
import { describe, expect, it, onTestFinished } from 'vitest';
import { NetlinkSocket, type NetlinkSocketOptions } from '../../src/native/index.js';
import {
  NetlinkError,
  NetlinkHandle,
  NLM_F_ACK,
  NLM_F_REQUEST,
  REPLY_BUDGET,
  RTM_DELNEIGH,
  RTM_GETROUTE,
  RTM_NEWROUTE,
  RTM_F_LOOKUP_TABLE,
  NLM_F_CREATE,
  formatNeigh,
  formatRoute,
  Writer,
  type Transport,
} from '../../src/netlink/index.js';
import { ip, makeNetns, nsExec, privileged } from '../helpers/netns.js';

const { skip } = privileged();

async function lab(tag: string, opts: Parameters<typeof NetlinkHandle.open>[0] = {}) {
  const ns = makeNetns(tag);
  const h = NetlinkHandle.open({ ...opts, netns: ns });
  onTestFinished(() => h.close());
  await h.linkAdd({ name: 'v0', kind: 'veth', up: true, peer: { name: 'v1' } });
  const v0 = await h.ifindex('v0');
  await h.addrAdd({ ifindex: v0, address: '10.1.0.1', prefixlen: 24 });
  return { ns, h, v0 };
}

describe.skipIf(skip)('kernel errors', () => {
  it('carry the extended-ack message', async () => {
    const { h } = await lab('nl-extack');
    const err = await h
      .routeAdd({ dst: '10.9.0.0/16', gateway: '10.77.0.1' })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NetlinkError);
    const e = err as NetlinkError;
    expect(e.errnoName).toBe('ENETUNREACH');
    expect(e.extAck.message).toBe('Nexthop has invalid gateway');
    expect(e.message).toBe('routeAdd 10.9.0.0/16: ENETUNREACH: Nexthop has invalid gateway');
    const kind = await h.linkAdd({ name: 'x0', kind: 'no-such-kind' }).catch((x: unknown) => x);
    expect((kind as NetlinkError).extAck.message).toBe('Unknown device type');
  });
});

/** The real socket, except that it claims a huge receive buffer while keeping a tiny one. */
function lyingSocket(
  opts: NetlinkSocketOptions,
): Transport & { setReceiveBuffer(n: number): number } {
  const s = NetlinkSocket.open(opts);
  return {
    get portId() {
      return s.portId;
    },
    send: (d) => s.send(d),
    receive: (r) => s.receive(r),
    ref: () => s.ref(),
    unref: () => s.unref(),
    close: () => s.close(),
    setReceiveBuffer: () => {
      s.setReceiveBuffer(4096);
      return 1 << 30;
    },
  };
}

describe.skipIf(skip)('request socket overflow', () => {
  it('reports entries whose replies were dropped (ENOBUFS) and keeps working', async () => {
    const { ns, h, v0 } = await lab('nl-rqof', { openSocket: lyingSocket });
    expect(h.window).toBe(4096);
    // 3000 deletes of absent entries: every one is answered by an error the buffer cannot hold.
    const entries = Array.from({ length: 3000 }, (_, i) => ({
      ifindex: v0,
      dst: `10.50.${i >> 8}.${i & 255}`,
    }));
    const res = await h.neighDelMany(entries);
    expect(res.ok).toBe(0);
    expect(res.failures).toHaveLength(3000);
    const names = new Set(res.failures.map((f) => (f.error as NetlinkError).errnoName));
    expect(names).toEqual(new Set(['ENOENT', 'ENOBUFS']));
    expect(h.stats.receiveOverflows).toBeGreaterThanOrEqual(1);
    expect(h.stats.lostAcks).toBeGreaterThan(0);
    // and afterwards the same handle works as before
    await h.neighSet({
      ifindex: v0,
      dst: '10.1.0.9',
      lladdr: '02:00:00:00:00:09',
      externLearned: true,
    });
    expect(ip(ns, 'neigh', 'show', 'dev', 'v0')).toContain('10.1.0.9');
  });
});

describe.skipIf(skip)('receive buffer budget', () => {
  it(`every reply kind costs less than REPLY_BUDGET (${REPLY_BUDGET} bytes) of receive buffer`, async () => {
    const { ns } = await lab('nl-budget');
    ip(
      ns,
      'route',
      'add',
      '10.3.0.0/16',
      'nexthop',
      'via',
      '10.1.0.253',
      'nexthop',
      'via',
      '10.1.0.252',
    );
    const s = NetlinkSocket.open({ netns: ns, rcvbuf: 8 << 20, strictCheck: true });
    onTestFinished(() => s.close());
    const rmem = (): number => {
      const line = nsExec(ns, 'cat', '/proc/net/netlink')
        .split('\n')
        .map((l) => l.trim().split(/\s+/))
        .find((f) => f[2] === String(s.portId));
      return Number(line![4]);
    };
    const w = new Writer(1 << 20);
    const K = 500;
    const kinds: Record<string, (i: number) => void> = {
      'error ack': (i) =>
        formatNeigh(
          w,
          RTM_DELNEIGH,
          NLM_F_REQUEST,
          {
            family: 2,
            ifindex: 2,
            state: 0,
            flags: 0,
            type: 0,
            flagsExt: 0,
            dst: `10.9.0.${i & 255}`,
          },
          i + 1,
        ),
      'error ack with ext-ack text': (i) =>
        formatRoute(
          w,
          RTM_NEWROUTE,
          NLM_F_REQUEST | NLM_F_CREATE | NLM_F_ACK,
          {
            family: 2,
            dstLen: 32,
            srcLen: 0,
            tos: 0,
            table: 254,
            protocol: 4,
            scope: 0,
            type: 1,
            flags: 0,
            dst: '10.8.0.1',
            gateway: '10.99.0.1',
          },
          i + 1,
        ),
      'route get (fibmatch, multipath)': (i) =>
        formatRoute(
          w,
          RTM_GETROUTE,
          NLM_F_REQUEST,
          {
            family: 2,
            dstLen: 32,
            srcLen: 0,
            tos: 0,
            table: 0,
            protocol: 0,
            scope: 0,
            type: 0,
            flags: RTM_F_LOOKUP_TABLE | 0x2000,
            dst: `10.3.0.${i & 255}`,
          },
          i + 1,
        ),
    };
    for (const [what, encode] of Object.entries(kinds)) {
      w.reset();
      for (let i = 0; i < K; i++) encode(i);
      const before = rmem();
      s.send(w.bytes()); // the kernel answers synchronously; nothing is read meanwhile
      const perReply = (rmem() - before) / K;
      expect(perReply, what).toBeGreaterThan(0);
      expect(perReply, what).toBeLessThan(REPLY_BUDGET);
      // drain
      await new Promise<void>((resolve) => {
        s.receive({ onData: () => setTimeout(resolve, 20), onError: () => undefined });
      });
      s.pause();
    }
  });
});
