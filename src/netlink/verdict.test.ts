// The one device verdict: what every subsystem refuses alike, and each subsystem's extras.
import { describe, expect, it } from 'vitest';
import {
  ARPHRD_ETHER,
  IFF_LOOPBACK,
  IFF_LOWER_UP,
  IFF_NOARP,
  IFF_UP,
  type Link,
} from './codec/index.js';
import { deviceVerdict, neighborVerdict, skipStackedUppers, xdpVerdict } from './verdict.js';

const sel = { devices: ['eth*', 'br*', 'mv*'], holderName: 'fibkeeper0' };
const UP = IFF_UP | IFF_LOWER_UP;

function link(index: number, name: string, extra: Partial<Link> = {}): Link {
  return {
    family: 0,
    type: ARPHRD_ETHER,
    index,
    flags: UP,
    change: 0,
    name,
    address: `02:00:00:00:00:${index.toString(16).padStart(2, '0')}`,
    ...extra,
  };
}

const why = (f: typeof deviceVerdict, l: Link) => f(l, sel).reason;

describe('the device verdict', () => {
  // [case, link, common, neighbor, xdp]
  const table: [string, Link, string | undefined, string | undefined, string | undefined][] = [
    ['a plain Ethernet device', link(2, 'eth0'), undefined, undefined, undefined],
    [
      'the holder',
      link(3, 'fibkeeper0'),
      'fibkeeper holder device',
      'fibkeeper holder device',
      'fibkeeper holder device',
    ],
    [
      'not named',
      link(4, 'wlan0'),
      'not in the devices option',
      'not in the devices option',
      'not in the devices option',
    ],
    ['loopback', link(5, 'eth1', { flags: UP | IFF_LOOPBACK }), 'loopback', 'loopback', 'loopback'],
    [
      'a zero MAC',
      link(6, 'eth2', { address: '00:00:00:00:00:00' }),
      'no hardware address',
      'no hardware address',
      'no hardware address',
    ],
    [
      'no MAC',
      link(7, 'eth3', { address: undefined }),
      'no hardware address',
      'no hardware address',
      'no hardware address',
    ],
    ['down', link(8, 'eth4', { flags: 0 }), 'down', 'down', 'down'],
    ['no carrier', link(9, 'eth5', { flags: IFF_UP }), undefined, 'no carrier', undefined],
    ['NOARP', link(10, 'eth6', { flags: UP | IFF_NOARP }), undefined, 'NOARP', undefined],
    [
      'not Ethernet',
      link(11, 'eth7', { type: 776 }),
      undefined,
      undefined,
      'not an Ethernet device',
    ],
  ];
  it.each(table)('%s', (_name, l, common, neighbor, xdp) => {
    expect(why(deviceVerdict, l)).toBe(common);
    expect(why(neighborVerdict, l)).toBe(neighbor);
    expect(why(xdpVerdict, l)).toBe(xdp);
  });

  it("a bridge port is nobody's device; a VRF port is the neighbor subsystem's, not XDP's", () => {
    const port = link(12, 'eth8', { master: 20, info: { slaveKind: 'bridge' } });
    expect(why(neighborVerdict, port)).toMatch(/^port of ifindex 20 \(bridge/);
    expect(why(xdpVerdict, port)).toMatch(/^port of ifindex 20 \(bridge/);
    const vrf = link(13, 'eth9', { master: 21, info: { slaveKind: 'vrf' } });
    expect(neighborVerdict(vrf, sel).selected).toBe(true);
    expect(why(xdpVerdict, vrf)).toMatch(/^port of ifindex 21 \(vrf/);
  });

  it('XDP prefers the lower device of a stack; the neighbor subsystem keeps both', () => {
    const lower = link(2, 'eth0');
    const upper = link(3, 'mv0', { link: 2, info: { kind: 'macvlan' } });
    const v = [lower, upper].map((l) => xdpVerdict(l, sel));
    const out = skipStackedUppers(v, [lower, upper], (x, r) => ({
      ...x,
      selected: false,
      reason: r,
    }));
    expect(out.map((x) => x.selected)).toEqual([true, false]);
    expect(out[1]?.reason).toMatch(/^upper device of eth0 \(macvlan\)/);
    expect([lower, upper].map((l) => neighborVerdict(l, sel).selected)).toEqual([true, true]);
  });
});
