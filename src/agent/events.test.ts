// What the agent reports as events from cluster hold sets and XDP forwarder passes: only
// changes, each once (a renewal, an unchanged pass, a second look at the same state: none).
import { describe, expect, it } from 'vitest';
import type { ClusterStatus, HoldReason, HoldSet } from '../cluster/index.js';
import { EventLog } from '../events/index.js';
import type { XdpDeviceStatus } from '../fib/index.js';
import { AgentEvents } from './events.js';
import { ClusterEvents, EVENT_IPS_MAX } from './cluster-events.js';

const hold = (reason: HoldReason, ips: string[]): HoldSet => ({ ips, reason, deadline: 0, at: 0 });

function view(owners: Record<string, string | undefined>, members: string[]): ClusterStatus {
  return {
    node: 'a',
    ready: true,
    lease: { id: '1', ttlMs: 10_000, ageMs: 0, holdForMs: 5000 },
    members: members.map((name) => ({ name, labels: {}, ips: [], seenForMs: 0 })),
    ips: Object.entries(owners).map(([ip, owner]) => ({
      ip,
      owner,
      placement: undefined,
      eligible: {},
      lastMoveAgoMs: undefined,
      heldHere: owner === 'a',
    })),
  } as unknown as ClusterStatus;
}

describe('ClusterEvents', () => {
  it('reports takeovers, handovers, fences, moves between others and members, once each', () => {
    const log = new EventLog({ capacity: 100 });
    const c = new ClusterEvents(log);
    c.hold(hold('start', []), () => view({}, ['a', 'b']));
    c.hold(hold('claim', ['10.0.0.1', '10.0.0.2']), () =>
      view({ '10.0.0.1': 'a', '10.0.0.2': 'a', '10.0.0.3': 'b' }, ['a', 'b']),
    );
    c.hold(hold('renew', ['10.0.0.1', '10.0.0.2']), () => {
      throw new Error('a renewal is not looked at');
    });
    c.hold(hold('release', ['10.0.0.1']), () =>
      view({ '10.0.0.1': 'a', '10.0.0.2': 'b', '10.0.0.3': 'c' }, ['a', 'b', 'c']),
    );
    c.hold(hold('sync', ['10.0.0.1']), () =>
      view({ '10.0.0.1': 'a', '10.0.0.2': 'b', '10.0.0.3': 'c' }, ['a', 'b', 'c']),
    );
    c.hold(hold('fence', []), () => view({}, ['a']));
    expect(log.read().map((e) => [e.type, e.summary])).toEqual([
      ['cluster.held', 'took 10.0.0.1 10.0.0.2 (claim)'],
      ['cluster.released', 'gave up 10.0.0.2 (release)'],
      ['cluster.moved', '2 cluster IPs moved between nodes: 10.0.0.2 a→b, 10.0.0.3 b→c'],
      ['cluster.members', 'joined: c (3 members)'],
      [
        'cluster.fenced',
        'lease can no longer be proven valid: every cluster IP dropped (10.0.0.1)',
      ],
      ['cluster.members', 'left: b c (1 members)'],
    ]);
    expect(log.read({ types: ['cluster.fenced'] })[0]).toMatchObject({
      reason: 'fence',
      ips: ['10.0.0.1'],
      count: 1,
    });
  });

  it('carries at most EVENT_IPS_MAX IPs in an event (the count has them all)', () => {
    const log = new EventLog({ capacity: 100 });
    const c = new ClusterEvents(log);
    const many = Array.from({ length: 10_000 }, (_, i) => `10.1.${i >> 8}.${i & 255}`);
    c.hold(hold('claim', many), () => view({}, ['a']));
    const [e] = log.read();
    expect(e).toMatchObject({ type: 'cluster.held', count: 10_000 });
    expect(e!.ips).toHaveLength(EVENT_IPS_MAX);
    expect(e!.summary).toBe(`took ${many.slice(0, 8).join(' ')} (+9992 more) (claim)`);
    // The node dies: its 10,000 IPs move to b in one event.
    c.hold(hold('sync', []), () => view(Object.fromEntries(many.map((ip) => [ip, 'a'])), ['a']));
    c.hold(hold('sync', []), () => view(Object.fromEntries(many.map((ip) => [ip, 'b'])), ['b']));
    const moved = log.read({ types: ['cluster.moved'] });
    expect(moved).toHaveLength(1);
    expect(moved[0]).toMatchObject({ count: 10_000 });
    expect(moved[0]!.moves).toHaveLength(EVENT_IPS_MAX);
  });
});

const dev = (name: string, o: Partial<XdpDeviceStatus>): XdpDeviceStatus =>
  ({
    name,
    ifindex: 3,
    attached: 'none',
    mode: undefined,
    progId: undefined,
    linkId: undefined,
    slot: undefined,
    ...o,
  }) as XdpDeviceStatus;

describe('AgentEvents.xdpPass', () => {
  it('reports attach, a new program, foreign programs, errors and detach once each', () => {
    const a = new AgentEvents(100);
    const eth0 = (o: Partial<XdpDeviceStatus>) => dev('eth0', o);
    a.xdpPass([eth0({ attached: 'ours', progId: 7, mode: 'native' })]);
    a.xdpPass([eth0({ attached: 'ours', progId: 7, mode: 'native' })]); // unchanged
    a.xdpPass([eth0({ attached: 'ours', progId: 9, mode: 'native' })]); // a new program
    a.xdpPass([
      eth0({ attached: 'ours', progId: 9, mode: 'native' }),
      dev('eth1', { attached: 'foreign', progId: 3, foreign: { owner: 'cilium' } as never }),
    ]);
    a.xdpPass([
      eth0({ attached: 'none', ifindex: 0 }),
      dev('eth1', { attached: 'foreign', progId: 3 }),
    ]);
    a.xdpPass([dev('eth1', { attached: 'none', error: 'EBUSY' })]);
    a.xdpPass([dev('eth1', { attached: 'none', error: 'EBUSY' })]);
    expect(a.log.read().map((e) => `${e.type} ${e.summary}`)).toEqual([
      'xdp.attached eth0: program 7 attached in native mode',
      'xdp.attached eth0: program 9 attached in native mode',
      'xdp.foreign eth1: an XDP program fibkeeper did not attach is there (cilium); left alone',
      'xdp.detached eth0: program detached (device gone)',
      'xdp.error eth1: EBUSY',
    ]);
  });
});
