// The request socket and the subscriptions heal themselves: a receive error replaces the
// socket (in-flight requests fail as retryable, bulk operations go on), a datagram lost or
// cut short makes the running dump start over, and a socket that stops answering the
// liveness probes is replaced; liveness reports a name that stays silent across reopens.
import { describe, expect, it } from 'vitest';
import type { SystemError } from '../native/index.js';
import { FakeClock } from '../sched/testing.js';
import * as C from './codec/index.js';
import { formatDoneMessage, formatNeigh, NetlinkError } from './codec/index.js';
import { NetlinkHandle } from './handle.js';
import { FakeKernel, kernelAck, PORT, type Script, fakeNeigh } from './testing.js';

function sysErr(code: string, errno: number): SystemError {
  return Object.assign(new Error(`recvmsg: ${code}`), { code, errno, syscall: 'recvmsg' });
}

const neigh = fakeNeigh;

/** A handle whose request sockets are fresh fake kernels (kernels[0] first). */
function openHandle(script: () => Script, opts: Parameters<typeof NetlinkHandle.open>[0] = {}) {
  const kernels: FakeKernel[] = [];
  const reopens: string[] = [];
  const h = NetlinkHandle.open({
    openSocket: (o) => {
      const k = new FakeKernel(script());
      if (o.groups) k.groups = o.groups;
      kernels.push(k);
      return k;
    },
    onReopen: (socket, cause, err) => reopens.push(`${socket} ${cause}${err ? ' failed' : ''}`),
    ...opts,
  });
  return { h, kernels, reopens };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('the request socket after a receive error', () => {
  it('is replaced: a pending request fails as retryable, later ones use the new socket', async () => {
    let answer = false;
    const { h, kernels, reopens } = openHandle(() => (req, w) => {
      if (answer) kernelAck()(req, w);
    });
    const pending = h.neighSet({ ifindex: 7, dst: '10.0.0.1' });
    await tick();
    kernels[0]!.receiver!.onError(sysErr('EINVAL', 22));
    const err = await pending.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NetlinkError);
    expect((err as Error).message).toMatch(/reopened after EINVAL; the request may or may not/);
    expect(kernels[0]!.closed).toBe(true);
    expect(reopens).toEqual(['request EINVAL']);
    expect(h.stats.reopens).toBe(1);
    answer = true;
    await expect(h.neighSet({ ifindex: 7, dst: '10.0.0.1' })).resolves.toBeUndefined();
    expect(kernels).toHaveLength(2);
    expect(kernels[1]!.requests.some((r) => r.header.type === C.RTM_NEWNEIGH)).toBe(true);
    // What the old socket still delivers is ignored.
    kernels[0]!.receiver!.onError(sysErr('EBADF', 9));
    expect(h.stats.reopens).toBe(1);
    h.close();
  });

  it('a bulk operation loses only its items in flight and writes the rest on the new socket', async () => {
    let first = true;
    const { h, kernels } = openHandle(
      () => {
        const mine = first;
        first = false;
        return mine ? () => undefined : kernelAck();
      },
      { window: 10 },
    );
    const run = h.neighSetMany(
      Array.from({ length: 25 }, (_, i) => ({ ifindex: 7, dst: `10.0.0.${i}` })),
    );
    await tick();
    kernels[0]!.receiver!.onError(sysErr('EBUSY', 16));
    const res = await run;
    expect(res.failures.map((f) => f.index)).toEqual([...Array(10).keys()]);
    expect(res.failures[0]!.error.message).toMatch(/reopened after EBUSY/);
    const written = kernels[1]!.requests.filter((r) => r.header.type === C.RTM_NEWNEIGH);
    expect(written).toHaveLength(15);
    h.close();
  });
});

/** A dump script: the neighbors `entries` in one datagram with NLMSG_DONE, acks otherwise. */
function neighDump(entries: string[]): Script {
  return (req, w) => {
    if (req.header.type !== C.RTM_GETNEIGH) return kernelAck()(req, w);
    for (const dst of entries) {
      const start = w.off;
      formatNeigh(w, C.RTM_NEWNEIGH, C.NLM_F_MULTI, neigh(dst), req.header.seq);
      w.buf.writeUInt32LE(PORT, start + 12);
    }
    formatDoneMessage(w, req.header.seq, PORT, C.NLM_F_MULTI);
  };
}

describe('a dump whose data did not arrive whole', () => {
  it('starts over after a malformed datagram, and after EMSGSIZE', async () => {
    const entries = ['10.0.0.1', '10.0.0.2', '10.0.0.3'];
    const { h, kernels } = openHandle(() => neighDump(entries));
    const k = kernels[0]!;
    let cut = 2;
    const deliver = k.deliver.bind(k);
    k.deliver = (chunk) => {
      if (chunk.readUInt16LE(4) !== C.RTM_NEWNEIGH) return deliver(chunk); // acks pass
      if (cut === 2)
        deliver(chunk.subarray(0, chunk.length - 7)); // the tail cut off
      else if (cut === 1) setImmediate(() => k.receiver?.onError(sysErr('EMSGSIZE', 90)));
      else deliver(chunk);
      cut--;
    };
    const got = await h.neighList();
    expect(got.map((n) => n.dst)).toEqual(entries);
    expect(k.requests.filter((r) => r.header.type === C.RTM_GETNEIGH)).toHaveLength(3);
    expect(h.stats.malformed).toBe(1);
    expect(h.stats.reopens).toBe(0); // the socket itself is fine
    h.close();
  });
});

describe('liveness probes', () => {
  it('replace a request socket that stopped answering; liveness fails when no socket answers', async () => {
    const clock = new FakeClock();
    let deaf = true;
    const { h, kernels, reopens } = openHandle(
      () => (req, w) => {
        if (!deaf) kernelAck()(req, w);
      },
      { clock, health: { intervalMs: 1000, deafMs: 3000, livenessMs: 10_000 } },
    );
    const probes = (k: FakeKernel) => k.requests.filter((r) => r.header.type === C.NLMSG_NOOP);
    await clock.advanceAsync(1000);
    expect(probes(kernels[0]!)).toHaveLength(1);
    await clock.advanceAsync(2000); // 2 s without an answer
    expect(reopens).toEqual([]);
    await clock.advanceAsync(1000); // 3 s
    expect(reopens).toEqual(['request ETIMEDOUT']);
    expect(kernels[0]!.closed).toBe(true);
    expect(h.liveness().ok).toBe(true); // silent for 4 s only
    await clock.advanceAsync(7000); // the new socket does not answer either: 11 s of silence
    expect(reopens).toEqual(['request ETIMEDOUT', 'request ETIMEDOUT']);
    expect(h.liveness().reasons).toEqual(['netlink: the request socket has not answered for 11 s']);
    deaf = false; // the next socket answers
    await clock.advanceAsync(4000);
    expect(reopens).toHaveLength(3);
    expect(probes(kernels[3]!).length).toBeGreaterThan(0);
    expect(h.liveness()).toEqual({ ok: true, reasons: [] });
    h.close();
  });

  it('settle a request the kernel never answered when a later probe is answered (no 30 s wait)', async () => {
    const clock = new FakeClock();
    // The kernel "loses" every neighbor write (no reply, no error) but answers the probes.
    const { h, reopens } = openHandle(
      () => (req, w) => {
        if (req.header.type !== C.RTM_NEWNEIGH) kernelAck()(req, w);
      },
      { clock, health: { intervalMs: 1000, deafMs: 3000, livenessMs: 10_000 } },
    );
    const single = h.neighSet({ ifindex: 7, dst: '10.0.0.1' }).catch((e: unknown) => e);
    const bulk = h.neighSetMany([
      { ifindex: 7, dst: '10.0.0.2' },
      { ifindex: 7, dst: '10.0.0.3' },
    ]);
    await clock.advanceAsync(1000); // a probe goes out behind them and is answered
    const err = await single;
    expect(err).toBeInstanceOf(NetlinkError);
    expect((err as Error).message).toMatch(/ETIMEDOUT: no reply, although the kernel answered/);
    const res = await bulk;
    expect(res.failures.map((f) => [f.index, f.error.message])).toEqual([
      [0, expect.stringMatching(/ETIMEDOUT: no reply, although/)],
      [1, expect.stringMatching(/ETIMEDOUT: no reply, although/)],
    ]);
    expect(reopens).toEqual([]); // the socket answers: nothing to replace
    h.close();
  });

  it('replace a subscription socket that stopped answering; the reader resyncs; a paused one is left alone', async () => {
    const clock = new FakeClock();
    const { h, kernels, reopens } = openHandle(() => kernelAck(), {
      clock,
      health: { intervalMs: 1000, deafMs: 3000, livenessMs: 10_000 },
    });
    const events: string[] = [];
    const sub = h.subscribe(
      ['neigh'],
      { onEvent: (e) => events.push(e.kind === 'overflow' ? `overflow ${e.cause}` : e.kind) },
      { socket: 'neighbor' },
    );
    const subKernel = kernels[1]!;
    await clock.advanceAsync(6000);
    expect(subKernel.requests.filter((r) => r.header.type === C.NLMSG_NOOP)).toHaveLength(6);
    expect(reopens).toEqual([]); // it answers
    subKernel.hold = true; // now it does not
    await clock.advanceAsync(4000);
    expect(reopens).toEqual(['neighbor ETIMEDOUT']);
    expect(events).toEqual(['overflow ETIMEDOUT']);
    expect(subKernel.closed).toBe(true);
    sub.reading(false);
    kernels[2]!.hold = true;
    await clock.advanceAsync(30_000);
    expect(reopens).toEqual(['neighbor ETIMEDOUT']);
    expect(h.liveness().ok).toBe(true);
    h.close();
  });
});
