// PeerMonitor on a fake segment and clock: a dead peer (its port refuses, or a new
// incarnation speaks) is reported at once and only once; a refusal from a peer that keeps
// speaking (a firewall rejecting the port) is not a death; silence counts only for a peer
// heard in its current lease; promises are timed from the receiver's own token.
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../sched/testing.js';
import { PeerMonitor, type LocalState, type PeerTransport } from './peers.js';
import { FakePeerNet } from './testing.js';

interface Ev {
  kind: 'dead' | 'silent';
  node: string;
  lease: string;
  why?: string;
  at: number;
}

function monitor(
  clock: FakeClock,
  node: string,
  transport: PeerTransport,
  local: Partial<LocalState> = {},
) {
  const events: Ev[] = [];
  const state: LocalState = { lease: `L-${node}`, promising: false, grace: false, ...local };
  const m = new PeerMonitor({
    node,
    transport,
    clock,
    intervalMs: 20,
    timeoutMs: 400,
    graceMs: 400,
    local: () => state,
    events: {
      onDead: (n, lease, why) =>
        events.push({ kind: 'dead', node: n, lease, why, at: clock.now() }),
      onSilent: (n, lease) => events.push({ kind: 'silent', node: n, lease, at: clock.now() }),
      onChange: () => undefined,
    },
    defer: (fn) => fn(),
  });
  return { m, events, state };
}

/** Three monitors on one fake segment, each knowing the others as members. */
async function trio(clock: FakeClock, net = new FakePeerNet()) {
  const names = ['a', 'b', 'c'];
  const transports = names.map((n) => net.transport(n));
  const ms = names.map((n, i) => monitor(clock, n, transports[i]!));
  const members = new Map(
    names.map((n, i) => [n, { lease: `L-${n}`, hb: transports[i]!.local }] as const),
  );
  for (const x of ms) await x.m.start();
  for (const x of ms) x.m.setMembers(members);
  return { net, ms, members, transports };
}

describe('PeerMonitor', () => {
  it('reports a peer whose port refuses as dead within 1.5 intervals of its last word, once', async () => {
    const clock = new FakeClock();
    const { net, ms } = await trio(clock);
    await clock.advanceAsync(200); // everyone heard and acknowledged
    const killedAt = clock.now();
    net.kill('c');
    await clock.advanceAsync(200);
    for (const x of ms.slice(0, 2)) {
      const dead = x.events.filter((e) => e.kind === 'dead');
      expect(dead).toHaveLength(1);
      expect(dead[0]).toMatchObject({ node: 'c', lease: 'L-c', why: 'refused' });
      expect(dead[0]!.at - killedAt).toBeLessThanOrEqual(60);
    }
  });

  it('a refused port of a peer that keeps speaking (a firewall) is no death', async () => {
    const clock = new FakeClock();
    const { net, ms } = await trio(clock);
    await clock.advanceAsync(200);
    net.reject('c'); // every heartbeat to c is refused; c's own heartbeats go on
    await clock.advanceAsync(1000);
    for (const x of ms.slice(0, 2)) expect(x.events).toEqual([]);
  });

  it('a new incarnation of a peer proves the old one dead (a restart faster than a refusal)', async () => {
    const clock = new FakeClock();
    const { net, ms, members } = await trio(clock);
    await clock.advanceAsync(100);
    ms[2]!.m.stop();
    const again = monitor(clock, 'c', net.transport('c'), { lease: 'L-c2' });
    await again.m.start();
    again.m.setMembers(members);
    await clock.advanceAsync(100);
    const dead = ms[0]!.events.filter((e) => e.kind === 'dead');
    expect(dead.map((e) => e.lease)).toEqual(['L-c']);
  });

  it('calls a peer silent after the timeout, only if heard in its current lease, once per lease', async () => {
    const clock = new FakeClock();
    const { net, ms, members } = await trio(clock);
    await clock.advanceAsync(100);
    const cutAt = clock.now();
    net.cut('c');
    await clock.advanceAsync(1000);
    const silent = ms[0]!.events.filter((e) => e.kind === 'silent');
    expect(silent).toHaveLength(1);
    expect(silent[0]!.at - cutAt).toBeGreaterThanOrEqual(400);
    expect(silent[0]!.at - cutAt).toBeLessThan(460);
    // A new member lease never heard: not silent (its lease is the fence).
    ms[0]!.m.setMembers(new Map([...members, ['c', { ...members.get('c')!, lease: 'L-c9' }]]));
    await clock.advanceAsync(1000);
    expect(ms[0]!.events.filter((e) => e.kind === 'silent')).toHaveLength(1);
    expect(ms[0]!.events.filter((e) => e.kind === 'dead')).toEqual([]);
  });

  it("grace lasts while every other member promises, timed from this node's own tokens", async () => {
    const clock = new FakeClock();
    const { net, ms } = await trio(clock);
    await clock.advanceAsync(100);
    expect(ms[0]!.m.graceUntil()).toBeUndefined(); // no one promises while etcd answers
    for (const x of ms) x.state.promising = true; // etcd gone for everyone
    await clock.advanceAsync(100);
    const g = ms[0]!.m.graceUntil()!;
    expect(g).toBeGreaterThan(clock.now() + 300);
    expect(g).toBeLessThanOrEqual(clock.now() + 400);
    // Each promiser refrains from claiming while its promise runs.
    expect(ms[1]!.m.noClaimUntil).toBeGreaterThan(clock.now() + 350);
    // c stops being heard: a's grace ends within a promise's length, and c's own promises
    // outlast it (c may claim only after a stopped holding).
    net.cut('c');
    const cutAt = clock.now();
    await clock.advanceAsync(20);
    const last = ms[0]!.m.graceUntil()!;
    expect(last).toBeLessThanOrEqual(cutAt + 400);
    expect(ms[2]!.m.noClaimUntil).toBeGreaterThanOrEqual(last);
    await clock.advanceAsync(450);
    expect(ms[0]!.m.graceUntil()).toBeUndefined();
    // One member that answers etcd again promises no more: no grace for the others.
    net.heal('c');
    ms[2]!.state.promising = false;
    await clock.advanceAsync(500);
    expect(ms[0]!.m.graceUntil()).toBeUndefined();
  });
});
