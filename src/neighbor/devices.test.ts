import { describe, expect, it } from 'vitest';
import { IFF_LOOPBACK, IFF_LOWER_UP, IFF_NOARP, IFF_UP } from '../netlink/index.js';
import { DeviceTracker, evaluateDevice } from './devices.js';
import { address, link } from './testing.js';

const sel = { devices: ['eth*', 'fib*'], holderName: 'fibkeeper0' };

function tracker() {
  const t = new DeviceTracker(sel);
  const heard: string[] = [];
  t.setListener({
    selectionChanged: (a, r) => heard.push(`sel +${a.join(',')} -${r.join(',')}`),
    nodeAddressChanged: (ip, present) => heard.push(`addr ${present ? '+' : '-'}${ip}`),
    routesMayHaveChanged: () => heard.push('routes?'),
  });
  return { t, heard };
}

describe('devices', () => {
  it('selects matching L2 devices that are up with carrier and explains the others', () => {
    const v = (l: Parameters<typeof evaluateDevice>[0]) => evaluateDevice(l, sel).reason;
    expect(evaluateDevice(link(2, 'eth0'), sel)).toMatchObject({
      selected: true,
      reason: undefined,
    });
    expect(v(link(3, 'fibkeeper0'))).toBe('fibkeeper holder device');
    expect(v(link(4, 'wlan0'))).toBe('not in the devices option');
    expect(v(link(5, 'eth1', { flags: 0 }))).toBe('down');
    expect(v(link(6, 'eth2', { flags: IFF_UP }))).toBe('no carrier');
    expect(v(link(7, 'eth3', { flags: IFF_UP | IFF_LOWER_UP | IFF_NOARP }))).toBe('NOARP');
    expect(v(link(8, 'eth4', { flags: IFF_UP | IFF_LOWER_UP | IFF_LOOPBACK }))).toBe('loopback');
    expect(v(link(9, 'eth5', { address: '00:00:00:00:00:00' }))).toBe('no hardware address');
    expect(v(link(10, 'eth6', { address: undefined }))).toBe('no hardware address');
  });

  it('reports selection changes, carrier loss and deletion', () => {
    const { t, heard } = tracker();
    t.applyLink('new', link(2, 'eth0'));
    t.applyLink('new', link(2, 'eth0')); // unchanged: nothing
    t.applyLink('new', link(2, 'eth0', { flags: IFF_UP }));
    t.applyLink('new', link(2, 'eth0'));
    t.applyLink('del', link(2, 'eth0'));
    expect(heard).toEqual(['sel +2 -', 'sel + -2', 'routes?', 'sel +2 -', 'sel + -2', 'routes?']);
    expect(t.selected()).toEqual([]);
  });

  it('ignores bridge port messages (AF_BRIDGE)', () => {
    const { t, heard } = tracker();
    t.applyLink('new', link(2, 'eth0', { family: 7 }));
    expect(heard).toEqual([]);
    expect(t.table.size).toBe(0);
  });

  it("tracks the node's addresses on every device", () => {
    const { t, heard } = tracker();
    t.applyLink('new', link(1, 'lo', { flags: IFF_UP | IFF_LOOPBACK }));
    t.applyLink('new', link(2, 'eth0'));
    t.applyAddress('new', address(2, '10.0.0.1'));
    t.applyAddress('new', address(1, '10.0.0.1', 32));
    expect(t.nodeAddresses().get('10.0.0.1')).toBe('eth0');
    t.applyAddress('del', address(2, '10.0.0.1'));
    expect(t.isNodeAddress('10.0.0.1')).toBe(true);
    t.applyAddress('del', address(1, '10.0.0.1', 32));
    expect(t.isNodeAddress('10.0.0.1')).toBe(false);
    expect(heard.filter((h) => h.startsWith('addr'))).toEqual(['addr +10.0.0.1', 'addr -10.0.0.1']);
  });

  it('loads a dump as the differences from what it had', () => {
    const { t, heard } = tracker();
    t.load([link(2, 'eth0'), link(3, 'eth1')], [address(2, '10.0.0.1')]);
    heard.length = 0;
    t.load([link(3, 'eth1'), link(4, 'eth2')], [address(3, '10.0.1.1')]);
    // eth0 went away, and its address with it.
    expect(heard).toEqual([
      'sel +4 -',
      'addr -10.0.0.1',
      'routes?',
      'sel + -2',
      'routes?',
      'addr +10.0.1.1',
    ]);
    expect(t.selected().map((d) => d.name)).toEqual(['eth1', 'eth2']);
    expect([...t.nodeAddresses().keys()]).toEqual(['10.0.1.1']);
  });
});

describe('devices: the one verdict', () => {
  it('refuses a bridge port as XDP does (the kernel routes on the bridge, not the port)', () => {
    const port = link(20, 'eth9', { master: 30, info: { slaveKind: 'bridge' } });
    expect(evaluateDevice(port, sel)).toMatchObject({ selected: false });
    expect(evaluateDevice(port, sel).reason).toMatch(/^port of ifindex 30/);
  });
});
