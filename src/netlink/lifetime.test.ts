// The client's lifetime (timeouts, close, strict checking) and subscriptions against a
// scripted fake kernel (requests, dumps and bulk calls are in client.test.ts).
import { describe, expect, it } from 'vitest';
import { ClosedError, TimeoutError } from '../errors/index.js';
import * as C from './codec/index.js';
import { formatNeigh, formatRoute, neighFields, readNeighFields, Writer } from './codec/index.js';
import { NetlinkHandle } from './handle.js';
import { enobufs, FakeKernel, fakeNeigh, openFake } from './testing.js';
import { FakeClock } from '../sched/testing.js';
import type { SubscriptionEvent } from './subscription.js';

const open = openFake;

const neigh = fakeNeigh;

describe('lifetime', () => {
  it('fails a request that hears nothing with TimeoutError', async () => {
    const k = new FakeKernel(() => undefined);
    const clock = new FakeClock();
    const h = NetlinkHandle.open({ openSocket: () => k, timeoutMs: 50, clock, health: false });
    let outcome: unknown;
    const p = h.neighSet({ ifindex: 7, dst: '10.0.0.1' }).catch((e: unknown) => (outcome = e));
    await clock.advanceAsync(49);
    expect(outcome).toBeUndefined(); // silent for less than timeoutMs: still waiting
    await clock.advanceAsync(50); // the check after timeoutMs of silence fails it
    expect(outcome).toBeInstanceOf(TimeoutError);
    await p;
  });

  it('close() fails pending requests with ClosedError, and later calls too', async () => {
    const k = new FakeKernel(() => undefined);
    const h = open(k);
    const p = h.neighSet({ ifindex: 7, dst: '10.0.0.1' });
    h.close();
    h.close();
    await expect(p).rejects.toBeInstanceOf(ClosedError);
    await expect(h.neighSet({ ifindex: 7, dst: '10.0.0.1' })).rejects.toBeInstanceOf(ClosedError);
    expect(k.closed).toBe(true);
  });

  it('opens without strict checking on kernels that lack it', () => {
    const k = new FakeKernel();
    const seen: (boolean | undefined)[] = [];
    const h = NetlinkHandle.open({
      openSocket: (o) => {
        seen.push(o.strictCheck);
        if (o.strictCheck) throw Object.assign(new Error('setsockopt'), { code: 'ENOPROTOOPT' });
        return k;
      },
    });
    expect(seen).toEqual([true, undefined]);
    h.close();
  });

  it('validates options, naming the option', () => {
    const k = new FakeKernel();
    expect(() => NetlinkHandle.open({ openSocket: () => k, window: 0 })).toThrow(/window/);
    expect(() => NetlinkHandle.open({ openSocket: () => k, rcvbuf: 10 })).toThrow(/rcvbuf/);
  });

  it('bounds the window by the receive buffer', () => {
    const k = new FakeKernel();
    const h = NetlinkHandle.open({ openSocket: () => k, rcvbuf: 64 << 10, window: 100000 });
    expect(h.window).toBe((128 << 10) / 2048);
  });
});

describe('subscriptions', () => {
  it('delivers new/del events, an overflow event, and parse errors', () => {
    const k = new FakeKernel();
    let opened: { groups?: number[] } = {};
    const sub = new FakeKernel();
    const h2 = NetlinkHandle.open({ openSocket: (o) => ((opened = o), o.groups ? sub : k) });
    const events: SubscriptionEvent[] = [];
    const errors: Error[] = [];
    const s = h2.subscribe(['neigh', 'route', 'link'], {
      onEvent: (e) => events.push(e),
      onError: (e) => errors.push(e),
    });
    expect(opened.groups).toEqual([
      C.RTNLGRP_NEIGH,
      C.RTNLGRP_IPV4_ROUTE,
      C.RTNLGRP_IPV6_ROUTE,
      C.RTNLGRP_LINK,
    ]);
    const w = new Writer();
    formatNeigh(w, C.RTM_NEWNEIGH, 0, {
      ...neigh('10.0.0.1'),
      flagsExt: C.NTF_EXT_MANAGED,
      protocol: 0x99,
    });
    formatNeigh(w, C.RTM_DELNEIGH, 0, neigh('10.0.0.2'));
    const junk = w.begin(C.RTM_NEWNEIGH, 0, 2); // too short for an ndmsg
    w.end(junk);
    w.end(w.begin(C.RTM_NEWNSID, 0, 4)); // a type the codec does not decode
    sub.receiver!.onData(Buffer.from(w.bytes()));
    sub.receiver!.onError(enobufs());
    expect(events.map((e) => e.kind)).toEqual(['new', 'del', 'overflow']);
    const first = events[0]!;
    if (first.kind === 'overflow' || first.object !== 'neigh')
      throw new Error('expected a neigh event');
    expect(first.msg).toMatchObject({
      dst: '10.0.0.1',
      flagsExt: C.NTF_EXT_MANAGED,
      protocol: 0x99,
    });
    expect(errors).toHaveLength(1);
    expect(s.stats).toEqual({ events: 2, overflows: 1, reopens: 0, parseErrors: 1, ignored: 1 });
    s.close();
    expect(sub.closed).toBe(true);
    h2.close();
  });

  it('onMessage takes the messages it decodes itself; the rest become events', () => {
    const sub = new FakeKernel();
    const h = NetlinkHandle.open({ openSocket: (o) => (o.groups ? sub : new FakeKernel()) });
    const events: SubscriptionEvent[] = [];
    const errors: Error[] = [];
    const fields = neighFields();
    const taken: string[] = [];
    const s = h.subscribe(['neigh', 'route'], {
      onMessage: (type, buf, off, len) => {
        if (type !== C.RTM_NEWNEIGH && type !== C.RTM_DELNEIGH) return false;
        const f = readNeighFields(buf, off, len, fields);
        taken.push(`${type === C.RTM_NEWNEIGH ? 'new' : 'del'} ${f.dst} ${f.lladdr} ${f.protocol}`);
        return true;
      },
      onEvent: (e) => events.push(e),
      onError: (e) => errors.push(e),
    });
    const w = new Writer();
    formatNeigh(w, C.RTM_NEWNEIGH, 0, {
      ...neigh('10.0.0.1'),
      lladdr: '02:00:00:00:00:0a',
      protocol: 241,
    });
    formatRoute(w, C.RTM_NEWROUTE, 0, {
      family: C.AF_INET,
      dstLen: 8,
      srcLen: 0,
      tos: 0,
      table: C.RT_TABLE_MAIN,
      protocol: C.RTPROT_BOOT,
      scope: 0,
      type: C.RTN_UNICAST,
      flags: 0,
      dst: '10.0.0.0',
      oif: 2,
    });
    formatNeigh(w, C.RTM_DELNEIGH, 0, neigh('10.0.0.2'));
    const junk = w.begin(C.RTM_NEWNEIGH, 0, 2); // too short for an ndmsg
    w.end(junk);
    sub.receiver!.onData(Buffer.from(w.bytes()));
    expect(taken).toEqual([
      'new 10.0.0.1 02:00:00:00:00:0a 241',
      'del 10.0.0.2 02:00:00:00:00:01 undefined',
    ]);
    expect(events.map((e) => (e.kind === 'overflow' ? e.kind : `${e.kind} ${e.object}`))).toEqual([
      'new route',
    ]);
    expect(errors).toHaveLength(1);
    expect(s.stats).toEqual({ events: 3, overflows: 0, reopens: 0, parseErrors: 1, ignored: 0 });
    s.close();
    h.close();
  });
});
