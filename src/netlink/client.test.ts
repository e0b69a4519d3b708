// The request client against a scripted fake kernel: matching by
// sequence number and port id, dump retries, serialized dumps, bulk batching and per-item
// failures, overflow recovery (lifetime and subscriptions: lifetime.test.ts).
import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../errors/index.js';
import * as C from './codec/index.js';
import {
  DumpInterruptedError,
  formatDoneMessage,
  formatErrorMessage,
  formatNeigh,
  formatRoute,
  type Neigh,
  NetlinkError,
  readHeader,
  Writer,
} from './codec/index.js';
import { NetlinkHandle } from './handle.js';
import {
  ack,
  PORT,
  FakeKernel,
  kernelAck,
  type Script,
  ThreadedFakeKernel,
  fakeNeigh,
  openFake,
} from './testing.js';
import { turns } from '../sched/testing.js';

const open = openFake;

const neigh = fakeNeigh;

describe('requests and replies', () => {
  it('resolves an ack, and turns an error ack into NetlinkError with the ext-ack text', async () => {
    const k = new FakeKernel((req, w) => {
      if (req.header.type === C.RTM_DELNEIGH) ack(w, req, 2, 'No such neighbor');
      else ack(w, req);
    });
    const h = open(k);
    await expect(
      h.neighSet({ ifindex: 7, dst: '10.0.0.1', lladdr: '02:00:00:00:00:01' }),
    ).resolves.toBeUndefined();
    const err = await h.neighDel({ ifindex: 7, dst: '10.0.0.1' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NetlinkError);
    expect(err).toMatchObject({
      errno: 2,
      errnoName: 'ENOENT',
      code: 'FIBKEEPER_ERR_NETLINK',
      extAck: { message: 'No such neighbor' },
    });
    expect((err as Error).message).toBe('neighDel 10.0.0.1 dev 7: ENOENT: No such neighbor');
    const set = k.requests[0]!.header;
    expect(set.flags).toBe(C.NLM_F_REQUEST | C.NLM_F_ACK | C.NLM_F_CREATE | C.NLM_F_REPLACE);
  });

  it('matches replies by sequence number and port id, ignoring the rest', async () => {
    const k = new FakeKernel(() => undefined);
    const h = open(k);
    let done = false;
    const p = h.neighSet({ ifindex: 7, dst: '10.0.0.1' }).then(() => (done = true));
    const req = k.requests[0]!;
    const w = new Writer();
    formatErrorMessage(w, req.header.seq, PORT + 1, 0, req.header); // other port
    formatErrorMessage(w, req.header.seq + 1, PORT, 0, req.header); // other seq
    k.deliver(Buffer.from(w.bytes()));
    await turns(5);
    expect(done).toBe(false);
    expect(h.stats.strayMessages).toBe(2);
    const w2 = new Writer();
    formatErrorMessage(w2, req.header.seq, PORT, 0, req.header);
    k.deliver(Buffer.from(w2.bytes()));
    await p;
    expect(done).toBe(true);
  });

  it('answers a get with the parsed reply', async () => {
    const k = new FakeKernel();
    // formatRoute has no pid argument: patch it in the script instead.
    k.script = (req, w) => {
      const start = w.off;
      formatRoute(
        w,
        C.RTM_NEWROUTE,
        0,
        {
          family: 2,
          dstLen: 32,
          srcLen: 0,
          tos: 0,
          table: 254,
          protocol: 0,
          scope: 0,
          type: 1,
          flags: 0,
          dst: '10.0.0.9',
          gateway: '10.0.0.1',
          oif: 3,
        },
        req.header.seq,
      );
      w.buf.writeUInt32LE(PORT, start + 12);
    };
    const h = open(k);
    const r = await h.routeGet('10.0.0.9', { oif: 3, fibmatch: true });
    expect(r).toMatchObject({ gateway: '10.0.0.1', oif: 3, dst: '10.0.0.9' });
    const q = k.requests[0]!;
    expect(q.header.type).toBe(C.RTM_GETROUTE);
    expect(q.msg.readUInt32LE(16 + 8) & C.RTM_F_FIB_MATCH).toBe(C.RTM_F_FIB_MATCH);
  });

  it('keeps the event loop referenced only while requests are pending', async () => {
    const k = new FakeKernel();
    const h = open(k);
    expect(k.refs).toBe(-1); // unref'd at open
    const p = h.neighSet({ ifindex: 7, dst: '10.0.0.1' });
    expect(k.refs).toBe(0);
    await p;
    expect(k.refs).toBe(-1);
  });
});

function dumpScript(pages: Neigh[][], intr: (attempt: number) => boolean): Script {
  let attempt = 0;
  return (req, w) => {
    if (req.header.type !== C.RTM_GETNEIGH) return;
    const flags = C.NLM_F_MULTI | (intr(attempt++) ? C.NLM_F_DUMP_INTR : 0);
    for (const page of pages) {
      for (const n of page) {
        const start = w.off;
        formatNeigh(w, C.RTM_NEWNEIGH, flags, n, req.header.seq);
        w.buf.writeUInt32LE(PORT, start + 12);
      }
    }
    formatDoneMessage(w, req.header.seq, PORT, flags);
  };
}

describe('dumps', () => {
  it('collects every entry until NLMSG_DONE', async () => {
    const k = new FakeKernel(
      dumpScript([[neigh('10.0.0.1'), neigh('10.0.0.2')], [neigh('10.0.0.3')]], () => false),
    );
    const h = open(k);
    const list = await h.neighList();
    expect(list.map((n) => n.dst)).toEqual(['10.0.0.1', '10.0.0.2', '10.0.0.3']);
    expect(k.requests[0]!.header.flags & C.NLM_F_DUMP).toBe(C.NLM_F_DUMP);
  });

  it('filters by ifindex and family even when the kernel does not', async () => {
    const other = { ...neigh('10.0.0.2'), ifindex: 8 };
    const v6 = { ...neigh('fe80::1'), family: C.AF_INET6 };
    const k = new FakeKernel(dumpScript([[neigh('10.0.0.1'), other, v6]], () => false));
    const h = open(k);
    expect((await h.neighList({ ifindex: 7, family: C.AF_INET })).map((n) => n.dst)).toEqual([
      '10.0.0.1',
    ]);
    const req = k.requests[0]!.msg;
    expect(req.readUInt32LE(16 + 12 + 4)).toBe(7); // NDA_IFINDEX asks the kernel to filter too
  });

  it('retries an interrupted dump and returns the clean one', async () => {
    const k = new FakeKernel(dumpScript([[neigh('10.0.0.1')]], (a) => a < 2));
    const h = open(k);
    await expect(h.neighList()).resolves.toHaveLength(1);
    expect(k.requests).toHaveLength(3);
  });

  it('gives up with DumpInterruptedError after dumpAttempts', async () => {
    const k = new FakeKernel(dumpScript([[neigh('10.0.0.1')]], () => true));
    const h = NetlinkHandle.open({ openSocket: () => k, dumpAttempts: 4 });
    const err = await h.neighList().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DumpInterruptedError);
    expect(err).toMatchObject({ attempts: 4, code: 'FIBKEEPER_ERR_DUMP_INTERRUPTED' });
    expect(k.requests).toHaveLength(4);
  });

  it('runs one dump at a time (the kernel allows one per socket)', async () => {
    const k = new FakeKernel(dumpScript([[neigh('10.0.0.1')]], () => false));
    k.hold = true;
    const h = open(k);
    const a = h.neighList();
    const b = h.neighList();
    await turns(5);
    expect(k.requests).toHaveLength(1);
    k.hold = false;
    for (const c of k.held.splice(0)) k.deliver(c);
    await a;
    await b;
    expect(k.requests).toHaveLength(2);
  });

  it('reports a dump error from NLMSG_DONE', async () => {
    const k = new FakeKernel((req, w) =>
      formatDoneMessage(w, req.header.seq, PORT, C.NLM_F_MULTI, 95),
    );
    const h = open(k);
    await expect(h.routeList()).rejects.toMatchObject({ errnoName: 'EOPNOTSUPP' });
  });
});

describe('bulk', () => {
  const entries = (n: number) =>
    Array.from({ length: n }, (_, i) => ({
      ifindex: 7,
      dst: `10.0.${i >> 8}.${i & 255}`,
      lladdr: '02:00:00:00:00:01',
      externLearned: true,
    }));

  it('batches into few sendmsg calls, asks an ack only of the last message of each, never exceeds the window', async () => {
    const k = new FakeKernel();
    let inFlight = 0;
    let maxInFlight = 0;
    const base = kernelAck((r) => (r.header.seq % 7 === 3 ? 17 : 0));
    k.script = (req, w) => {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      base(req, w);
      if (req.header.flags & C.NLM_F_ACK) inFlight = 0; // the batch is answered in full
    };
    const h = open(k, { window: 16 });
    const list = entries(100);
    const res = await h.neighSetMany(list);
    expect(k.sends).toBe(Math.ceil(100 / 16));
    expect(maxInFlight).toBeLessThanOrEqual(16);
    const acked = k.requests.filter((r) => r.header.flags & C.NLM_F_ACK);
    expect(acked).toHaveLength(k.sends);
    const firstSeq = k.requests[0]!.header.seq;
    const failedIdx = k.requests
      .filter((r) => r.header.seq % 7 === 3)
      .map((r) => r.header.seq - firstSeq);
    expect(res.failures.map((f) => f.index)).toEqual(failedIdx);
    expect(res.ok).toBe(100 - failedIdx.length);
    const f = res.failures[0]!;
    expect(f.entry).toBe(list[f.index]);
    expect(f.error).toBeInstanceOf(NetlinkError);
    expect((f.error as NetlinkError).errnoName).toBe('EEXIST');
    expect(f.error.message).toContain(`neighSet ${list[f.index]!.dst} dev 7`);
  });

  it('shares one window between concurrent bulk calls', async () => {
    const k = new FakeKernel();
    k.hold = true; // answers wait until released, so both calls compete for room
    const h = open(k, { window: 10 });
    const a = h.neighSetMany(entries(25));
    const b = h.neighSetMany(entries(1));
    const c = h.routeGetMany([]);
    expect(k.requests).toHaveLength(10); // b waits: a holds the whole window
    for (let round = 0; round < 6; round++) {
      const before = k.requests.length;
      k.hold = false;
      for (const ch of k.held.splice(0)) k.deliver(ch); // answer everything sent so far
      k.hold = true;
      await turns(5);
      expect(k.requests.length - before).toBeLessThanOrEqual(10); // never more than the window
    }
    k.hold = false;
    await expect(a).resolves.toMatchObject({ ok: 25 });
    await expect(b).resolves.toMatchObject({ ok: 1 });
    await expect(c).resolves.toEqual([]);
    expect(k.requests).toHaveLength(26);
  });

  it('splits batches at maxSendBytes', async () => {
    const k = new FakeKernel();
    const h = open(k, { window: 1000, maxSendBytes: 480 });
    await h.neighSetMany(entries(100));
    // 48-byte messages: at most 10 (plus the one that crosses the line) per sendmsg
    expect(k.sends).toBeGreaterThanOrEqual(9);
    expect(k.sends).toBeLessThanOrEqual(11);
  });

  it('reports malformed entries per item and still writes the rest', async () => {
    const k = new FakeKernel();
    const h = open(k);
    const list = entries(5);
    list[2] = { ...list[2]!, dst: '10.0.0.256' };
    list[4] = { ...list[4]!, ifindex: 0 };
    const res = await h.neighSetMany(list);
    expect(res.ok).toBe(3);
    expect(res.failures.map((f) => f.index)).toEqual([2, 4]);
    expect(res.failures.every((f) => f.error instanceof InvalidArgumentError)).toBe(true);
    expect(k.requests).toHaveLength(3);
  });

  it('sends bulk batches on the send thread; a failed queued send fails its items only, even when the batches behind it are answered first', async () => {
    const k = new ThreadedFakeKernel();
    k.failSend = (i) => i === 1;
    // 48-byte messages, 96 bytes a send: two items a batch, 16 batches in flight.
    const h = open(k, { window: 32, maxSendBytes: 96 });
    const list = entries(40);
    const res = await h.neighSetMany(list);
    expect(k.syncSends).toBe(0);
    expect(k.queuedSends).toBe(20);
    // The second batch (items 2 and 3) never reached the kernel; the rest did.
    const firstSeq = k.requests[0]!.header.seq;
    const reached = k.requests.map((r) => r.header.seq - firstSeq);
    expect(reached).toEqual([...Array(40).keys()].filter((i) => i !== 2 && i !== 3));
    expect(res.failures.map((f) => f.index)).toEqual([2, 3]);
    for (const f of res.failures) {
      expect(f.error).toBeInstanceOf(NetlinkError);
      expect((f.error as NetlinkError).errnoName).toBe('EMSGSIZE');
      expect(f.error.message).toContain(`neighSet ${f.entry.dst} dev 7: sendmsg`);
    }
    expect(res.ok).toBe(38);
    expect(h.stats.failedSends).toBe(1);
    // The window was given back: the next bulk call runs to the end.
    k.failSend = () => false;
    expect((await h.neighSetMany(entries(10))).ok).toBe(10);
  });

  it('a request made while sends are queued goes behind them; its failed send rejects it', async () => {
    const k = new ThreadedFakeKernel();
    const h = open(k, { window: 32, maxSendBytes: 96 });
    // The get's own send fails: it was queued behind the bulk call's first 16 batches.
    k.failSend = (_i, buf) => readHeader(buf, 0, buf.length).type === C.RTM_GETNEIGH;
    const bulk = h.neighSetMany(entries(40));
    const got = h.neighGet({ ifindex: 7, dst: '10.9.9.9' });
    await expect(got).rejects.toThrow(/sendmsg/);
    await expect(got).rejects.toMatchObject({ errnoName: 'EMSGSIZE' });
    expect((await bulk).ok).toBe(40);
    expect(k.syncSends).toBe(0);
    expect(k.queuedSends).toBe(21);
    // Idle again: a request is sent at once, on the caller's thread.
    k.script = (req, w) => {
      const start = w.off;
      formatNeigh(w, C.RTM_NEWNEIGH, 0, neigh('10.9.9.8'), req.header.seq);
      w.buf.writeUInt32LE(PORT, start + 12);
    };
    await expect(h.neighGet({ ifindex: 7, dst: '10.9.9.8' })).resolves.toMatchObject({
      dst: '10.9.9.8',
    });
    expect(k.syncSends).toBe(1);
  });

  it('routeGetMany returns a route or the error for each query, in order', async () => {
    const k = new FakeKernel((req, w) => {
      const dst = `${req.msg[16 + 12 + 4]}.${req.msg[16 + 12 + 5]}.${req.msg[16 + 12 + 6]}.${req.msg[16 + 12 + 7]}`;
      if (dst.endsWith('.13')) return ack(w, req, 101, 'unreachable');
      const start = w.off;
      formatRoute(
        w,
        C.RTM_NEWROUTE,
        0,
        {
          family: 2,
          dstLen: 32,
          srcLen: 0,
          tos: 0,
          table: 254,
          protocol: 0,
          scope: 0,
          type: 1,
          flags: 0,
          dst,
          oif: 3,
        },
        req.header.seq,
      );
      w.buf.writeUInt32LE(PORT, start + 12);
    });
    const h = open(k, { window: 8 });
    const qs = Array.from({ length: 30 }, (_, i) => ({ dst: `10.1.0.${i}`, oif: 3 }));
    const out = await h.routeGetMany(qs);
    expect(out).toHaveLength(30);
    out.forEach((r, i) => {
      if (i === 13) expect(r).toMatchObject({ errnoName: 'ENETUNREACH' });
      else expect(r).toMatchObject({ dst: `10.1.0.${i}`, oif: 3 });
    });
    expect(k.requests.every((r) => (r.header.flags & C.NLM_F_ACK) === 0)).toBe(true);
  });
});

describe('receive overflow on the request socket', () => {
  it('reports requests whose replies were dropped as ENOBUFS and keeps working', async () => {
    const k = new FakeKernel();
    const h = open(k, { window: 10 });
    k.overflowNext = true; // the first batch's replies vanish
    const res = await h.neighSetMany(
      Array.from({ length: 25 }, (_, i) => ({ ifindex: 7, dst: `10.0.0.${i}` })),
    );
    expect(res.failures.map((f) => f.index)).toEqual([...Array(10).keys()]);
    expect(res.failures[0]!.error).toMatchObject({ errnoName: 'ENOBUFS' });
    expect(h.stats.receiveOverflows).toBe(1);
    expect(h.stats.lostAcks).toBe(10);
    // a NOOP probe with NLM_F_ACK went out
    expect(
      k.requests.some((r) => r.header.type === C.NLMSG_NOOP && r.header.flags & C.NLM_F_ACK),
    ).toBe(true);
    k.overflowNext = true;
    await expect(h.neighSet({ ifindex: 7, dst: '10.0.0.1' })).rejects.toMatchObject({
      errnoName: 'ENOBUFS',
    });
    await expect(h.neighSet({ ifindex: 7, dst: '10.0.0.1' })).resolves.toBeUndefined();
  });

  it('repeats a probe whose own ack was dropped', async () => {
    const k = new FakeKernel();
    const h = open(k);
    k.overflowNext = true;
    k.dropProbes = 2;
    const err = await h.neighSet({ ifindex: 7, dst: '10.0.0.1' }).catch((e: unknown) => e);
    expect(err).toMatchObject({ errnoName: 'ENOBUFS' });
    expect(k.requests.filter((r) => r.header.type === C.NLMSG_NOOP)).toHaveLength(3);
    expect(h.stats.lostAcks).toBe(1); // the request; the swallowed probes are not counted
  });
});
