// Device selection, slot picking and the attach decision: the pure rules of the loader.
import { describe, expect, it } from 'vitest';
import { ARPHRD_ETHER, IFF_LOOPBACK, IFF_UP, type Link } from '../netlink/index.js';
import { decideAttach, pickSlot, selectDevice, skipStackedUppers } from './select.js';

const link = (name: string, over: Partial<Link> = {}): Link => ({
  family: 0,
  type: ARPHRD_ETHER,
  index: 7,
  flags: IFF_UP,
  change: 0,
  name,
  address: '02:00:00:00:00:07',
  ...over,
});
const sel = { devices: ['eth*', 'ens?', 'lo', 'bond0'], holderName: 'fk-holder' };

describe('skipStackedUppers', () => {
  const lower = link('eth0', { index: 2 });
  const upper = (kind: string, over: Partial<Link> = {}) =>
    link('eth0.mv', { index: 9, link: 2, info: { kind }, ...over });

  it('an upper device of a selected device is skipped, with why; the lower keeps its verdict', () => {
    for (const kind of ['macvlan', 'macvtap', 'ipvlan', 'vlan']) {
      const links = [lower, upper(kind)];
      const [l, u] = skipStackedUppers(
        links.map((x) => selectDevice(x, sel)),
        links,
      );
      expect(l?.selected).toBe(true);
      expect(u).toMatchObject({ selected: false, keepRecord: false });
      expect(u?.skipped).toMatch(new RegExp(`upper device of eth0 \\(${kind}\\)`));
    }
  });

  it('keeps an upper whose lower is not selected, is in another namespace, or that is no upper', () => {
    const cases: [Link, Link][] = [
      [link('other', { index: 2 }), upper('macvlan')], // lower not matched by devices
      [link('eth0', { index: 2, flags: 0 }), upper('macvlan')], // lower down
      [lower, upper('macvlan', { linkNetnsId: 3 })], // lower in another namespace
      [lower, upper('veth')], // a veth's link is its peer, not a lower device
      [lower, upper('bridge')],
    ];
    for (const links of cases) {
      const out = skipStackedUppers(
        links.map((x) => selectDevice(x, sel)),
        links,
      );
      expect(out[1]?.skipped, JSON.stringify(links[1])).toBeUndefined();
      expect(out[1]?.selected).toBe(true);
    }
  });
});

describe('selectDevice', () => {
  it('selects matching Ethernet devices that are up', () => {
    expect(selectDevice(link('eth0'), sel)).toEqual({
      ifindex: 7,
      name: 'eth0',
      mac: '02:00:00:00:00:07',
      selected: true,
      reason: undefined,
      keepRecord: true,
    });
    expect(selectDevice(link('ens3'), sel).selected).toBe(true);
  });

  it('a device that is down is not selected, but keeps its record (slot, counters)', () => {
    expect(selectDevice(link('ens3', { flags: 0 }), sel)).toMatchObject({
      selected: false,
      reason: 'down',
      keepRecord: true,
    });
  });

  it('a port of a bridge, bond, team or VRF is not selected: the kernel does not route its frames', () => {
    const v = selectDevice(link('eth3', { master: 12 }), sel);
    expect(v).toMatchObject({ selected: false, keepRecord: false });
    expect(v.reason).toMatch(/port of ifindex 12/);
  });

  it('says why not', () => {
    const why = (l: Link, s = sel) => selectDevice(l, s).reason;
    expect(why(link('wlan0'))).toBe('not in the devices option');
    expect(why(link('ens10'))).toBe('not in the devices option'); // ? is one character
    expect(why(link('fk-holder'), { ...sel, devices: ['*'] })).toBe('fibkeeper holder device');
    expect(why(link('lo', { flags: IFF_LOOPBACK, type: 772 }))).toBe('loopback');
    expect(why(link('bond0', { type: 65534 }))).toBe('not an Ethernet device');
    expect(why(link('eth1', { address: '00:00:00:00:00:00' }))).toBe('no hardware address');
    expect(why(link('eth1', { address: undefined }))).toBe('no hardware address');
  });
});

describe('pickSlot', () => {
  it('lowest free slot above the shared one', () => {
    expect(pickSlot([])).toEqual({ slot: 1 });
    expect(
      pickSlot([
        { name: 'a', slot: 1, present: true },
        { name: 'b', slot: 3, present: false },
      ]),
    ).toEqual({ slot: 2 });
  });

  it('when full: the lowest slot of a vanished device, else the shared slot', () => {
    const used = [1, 2, 3].map((s) => ({ name: `d${s}`, slot: s, present: s !== 2 && s !== 3 }));
    expect(pickSlot(used, 4)).toEqual({ slot: 2, evict: 'd2' });
    expect(
      pickSlot(
        used.map((u) => ({ ...u, present: true })),
        4,
      ),
    ).toEqual({ slot: 0 });
  });
});

describe('decideAttach', () => {
  it('keep, move, attach, foreign', () => {
    expect(decideAttach('eth0', { progIds: [5], ownerRecord: 'eth0' }, false)).toEqual({
      kind: 'keep',
    });
    expect(decideAttach('eth9', { progIds: [5], ownerRecord: 'eth0' }, false)).toEqual({
      kind: 'move',
      from: 'eth0',
    });
    expect(decideAttach('eth0', { progIds: [], ownerRecord: undefined }, false)).toEqual({
      kind: 'attach',
    });
    expect(decideAttach('eth0', { progIds: [9], ownerRecord: undefined }, true)).toEqual({
      kind: 'foreign',
      progIds: [9],
      force: true,
    });
  });
});
