// The forwarder follows the kernel while it runs: rp_filter, the multipath hash policy,
// disable_ipv6 (sysctls, most of them without an event), addresses and routes (events). After
// each change the same frame is sent again through the differential lab, and both what left
// the router and what fibkeeper counted must say the kernel's new answer was respected.
// Route events are followed incrementally: the routes are dumped once at start, never again
// per event (a dump is O(routes); counted on the handle the forwarder reads through).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { XdpForwarder, type XdpDeviceCounters } from '../../src/fib/index.js';
import { silentLogger } from '../../src/log/index.js';
import { NetlinkHandle } from '../../src/netlink/index.js';
import { privateBpffs } from '../helpers/cleanup.js';
import { ip, privileged, sysctl, waitFor } from '../helpers/netns.js';
import { f4, f6 } from './corpus/case.js';
import { makeDiffLab, type DiffLab } from './corpus/lab.js';
import { moved } from './corpus/report.js';

const { skip } = privileged();

describe.skipIf(skip)('XdpForwarder follows sysctls, addresses and routes', () => {
  let lab: DiffLab;
  let x: XdpForwarder;
  let nl: NetlinkHandle;
  /** Route dumps the forwarder asked for (`ip route show table all`). */
  let routeDumps = 0;
  const r1 = () => x.counters().find((d) => d.device === 'r1') as XdpDeviceCounters;

  /**
   * Sends `frame` until fibkeeper counts it as `want` and it leaves the router through `out`
   * (a sink, `any` one, or `none`): the mirror follows a change within about a second.
   */
  async function until(frame: Buffer, want: string, out: string): Promise<void> {
    let last = '';
    await waitFor(
      async () => {
        const before = r1();
        const got = await lab.send(frame);
        last = `${moved(before, r1()).join(' ')} out ${got.map((g) => g.sink).join(',')}`;
        const left =
          out === 'none'
            ? got.length === 0
            : out === 'any'
              ? got.length === 1
              : got.length === 1 && got[0]?.sink === out;
        return moved(before, r1()).includes(want) && left;
      },
      { timeoutMs: 5000, intervalMs: 50, what: () => `${want}, out ${out} (last: ${last})` },
    );
  }

  beforeAll(async () => {
    lab = makeDiffLab('fo');
    nl = NetlinkHandle.open({ netns: lab.router });
    const routeList = nl.routeList.bind(nl);
    nl.routeList = (filter) => {
      routeDumps++;
      return routeList(filter);
    };
    x = new XdpForwarder({
      netns: lab.router,
      netlink: nl,
      config: {
        devices: ['r1', 'r2', 'r3', 'r4'],
        holderName: 'fk-holder',
        mode: 'auto',
        pinDir: privateBpffs(),
        keepOnStop: false,
        force: false,
        ipv6: true,
      },
      log: silentLogger(),
      resyncIntervalMs: 0,
      sysctlPollMs: 200,
    });
    await x.start();
  });
  afterAll(async () => {
    await x?.stop();
    nl?.close();
  });

  it('rp_filter set and cleared on the ingress device (a netconf event) is applied at once', async () => {
    const spoofed = f4({ src: '10.61.2.9' }); // its route back is via r2
    await until(spoofed, 'actions.redirect+1', 's0');
    sysctl(lab.router, 'net.ipv4.conf.r1.rp_filter', 1);
    await until(spoofed, 'reasons.rp_filter+1', 'none');
    sysctl(lab.router, 'net.ipv4.conf.r1.rp_filter', 2); // loose: a route back exists
    await until(spoofed, 'actions.redirect+1', 's0');
    sysctl(lab.router, 'net.ipv4.conf.all.rp_filter', 1); // the max of all and the device
    sysctl(lab.router, 'net.ipv4.conf.r1.rp_filter', 0);
    await until(spoofed, 'reasons.rp_filter+1', 'none');
    sysctl(lab.router, 'net.ipv4.conf.all.rp_filter', 0);
    await until(spoofed, 'actions.redirect+1', 's0');
  });

  it('an address added anywhere makes that source local; removed, forwarded again', async () => {
    const frame = f4({ src: '10.61.7.7' });
    await until(frame, 'actions.redirect+1', 's0');
    ip(lab.router, 'addr', 'add', '10.61.7.7/32', 'dev', 'lo');
    await until(frame, 'reasons.local_src+1', 'none');
    ip(lab.router, 'addr', 'del', '10.61.7.7/32', 'dev', 'lo');
    await until(frame, 'actions.redirect+1', 's0');
  });

  it('the multipath hash policy (polled) and new multipath routes (events) decide what XDP forwards', async () => {
    const flow = f4({ dst: '10.99.3.4' });
    await until(flow, 'actions.redirect+1', 'any');
    const dumps = routeDumps;
    sysctl(lab.router, 'net.ipv4.fib_multipath_hash_policy', 3);
    await until(flow, 'reasons.multipath+1', 'any'); // the kernel forwards it, its own leg
    const to96 = f4({ dst: '10.96.1.1' });
    ip(lab.router, 'route', 'add', '10.96.0.0/16', 'via', '10.61.3.2', 'dev', 'r3');
    await until(to96, 'actions.redirect+1', 'a0'); // single path: XDP
    ip(
      lab.router,
      'route',
      'replace',
      '10.96.0.0/16',
      'nexthop',
      'via',
      '10.61.3.2',
      'dev',
      'r3',
      'nexthop',
      'via',
      '10.61.4.2',
      'dev',
      'r4',
    );
    await until(to96, 'reasons.multipath+1', 'any');
    ip(lab.router, 'route', 'del', '10.96.0.0/16');
    await until(to96, 'actions.redirect+1', 'b0'); // the default route again: XDP
    sysctl(lab.router, 'net.ipv4.fib_multipath_hash_policy', 0);
    await until(flow, 'actions.redirect+1', 'any');
    expect(routeDumps).toBe(dumps); // three route events, no dump
  });

  it('local routes added and removed (events) make sources local, then forwarded again, without a dump', async () => {
    const dumps = routeDumps;
    const wide = f4({ src: '10.61.8.9' });
    const one = f4({ src: '10.61.5.77' });
    await until(wide, 'actions.redirect+1', 's0');
    await until(one, 'actions.redirect+1', 's0');
    ip(lab.router, 'route', 'add', 'local', '10.61.8.0/24', 'dev', 'lo'); // fk_local4w
    ip(lab.router, 'route', 'add', 'local', '10.61.5.77/32', 'dev', 'lo'); // fk_local4
    await until(wide, 'reasons.local_src+1', 'none');
    await until(one, 'reasons.local_src+1', 'none');
    ip(lab.router, 'route', 'del', 'local', '10.61.8.0/24', 'dev', 'lo');
    await until(wide, 'actions.redirect+1', 's0');
    await until(one, 'reasons.local_src+1', 'none'); // the other one stays
    ip(lab.router, 'route', 'del', 'local', '10.61.5.77/32', 'dev', 'lo');
    await until(one, 'actions.redirect+1', 's0');
    expect(routeDumps).toBe(dumps);
  });

  it('IPv6: all.forwarding off, or disable_ipv6 on the ingress device, and XDP passes IPv6', async () => {
    const v6 = f6();
    await until(v6, 'actions.redirect+1', 's0');
    sysctl(lab.router, 'net.ipv6.conf.all.forwarding', 0);
    sysctl(lab.router, 'net.ipv6.conf.r1.forwarding', 1); // the kernel still drops: all is off
    await until(v6, 'reasons.ip6_disabled+1', 'none');
    sysctl(lab.router, 'net.ipv6.conf.all.forwarding', 1);
    await until(v6, 'actions.redirect+1', 's0');
    sysctl(lab.router, 'net.ipv6.conf.r1.disable_ipv6', 1);
    await until(v6, 'reasons.ip6_disabled+1', 'none');
  });
});
