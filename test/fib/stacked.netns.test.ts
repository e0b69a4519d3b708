// Devices stacked on a selected device (a macvlan on the router's r2): the kernel refuses an
// XDP program on a device while an upper device of it has one (EEXIST), so fibkeeper prefers
// the parent: the upper is skipped while its lower device is selected, said so in status,
// and an earlier run's program on it is removed; traffic through the parent is forwarded in
// XDP, also after a restart. A program someone else put on the upper is named as the reason
// the parent has none.
import { describe, expect, it } from 'vitest';
import { XdpForwarder, type XdpDeviceCounters } from '../../src/fib/index.js';
import { silentLogger } from '../../src/log/index.js';
import { BpfLink, BpfProgram, xdpQuery } from '../../src/native/index.js';
import { ifindexOf, ip, privileged } from '../helpers/netns.js';
import {
  V4,
  cleanupLater,
  makeLab,
  privateBpffs,
  staticNeighbors,
  udpReceiver,
  udpSend,
  type Lab,
} from './lab.js';

const { skip } = privileged();

function forwarder(lab: Lab, pinDir: string, devices: string[]): XdpForwarder {
  const x = new XdpForwarder({
    netns: lab.router,
    config: {
      ...{ devices, holderName: 'fk-holder', mode: 'auto' as const, pinDir },
      ...{ keepOnStop: true, force: false, ipv6: true },
    },
    log: silentLogger(),
    resyncIntervalMs: 0,
    sysctlPollMs: 0,
  });
  cleanupLater(() => void x.stop());
  return x;
}

function stacked(tag: string): Lab {
  const lab = makeLab(tag);
  staticNeighbors(lab);
  ip(lab.router, 'link', 'add', 'link', 'r2', 'name', 'mv0', 'type', 'macvlan', 'mode', 'bridge');
  ip(lab.router, 'link', 'set', 'mv0', 'address', '02:00:00:0f:02:77', 'up');
  return lab;
}

async function forwardedInXdp(lab: Lab, x: XdpForwarder, port: number): Promise<void> {
  const ctr = () => x.counters().find((c) => c.device === 'r1') as XdpDeviceCounters;
  const before = ctr().actions.redirect.packets;
  const rx = await udpReceiver(lab.server, port, 4);
  expect(await udpSend(lab.client, V4.server, port, 20, 200)).toBe(20);
  expect((await rx.stop()).received).toBe(20);
  expect(ctr().actions.redirect.packets - before).toBe(20);
}

describe.skipIf(skip)('a macvlan on a selected device', () => {
  it('the parent gets the program, the macvlan is skipped and said so, also after a restart', async () => {
    const lab = stacked('stk');
    const pinDir = privateBpffs();
    const x = forwarder(lab, pinDir, ['r1', 'r2', 'mv0']);
    await x.start();
    expect(x.health()).toEqual({ ok: true, reasons: [] });
    const st = new Map(x.status().map((d) => [d.name, d]));
    expect(st.get('r2')).toMatchObject({ attached: 'ours', error: undefined });
    expect(st.get('mv0')).toMatchObject({ attached: 'none', error: undefined });
    expect(st.get('mv0')?.skipped).toMatch(/upper device of r2 \(macvlan\).*r2 is selected/);
    expect(xdpQuery(ifindexOf(lab.router, 'mv0'), { netns: lab.router }).progId).toBe(0);
    await forwardedInXdp(lab, x, 7401);
    await x.stop();
    const again = forwarder(lab, pinDir, ['r1', 'r2', 'mv0']);
    await again.start();
    expect(again.health()).toEqual({ ok: true, reasons: [] });
    expect(again.status().find((d) => d.name === 'r2')?.attached).toBe('ours');
    await forwardedInXdp(lab, again, 7402);
  });

  it('a program an earlier run put on the macvlan makes way for the parent', async () => {
    const lab = stacked('stk2');
    const pinDir = privateBpffs();
    const first = forwarder(lab, pinDir, ['r1', 'mv0']);
    await first.start();
    expect(first.status().find((d) => d.name === 'mv0')?.attached).toBe('ours');
    await first.stop(); // keepOnStop: mv0 keeps its program
    const x = forwarder(lab, pinDir, ['r1', 'r2', 'mv0']);
    await x.start();
    expect(x.health()).toEqual({ ok: true, reasons: [] });
    expect(x.status().find((d) => d.name === 'r2')?.attached).toBe('ours');
    expect(xdpQuery(ifindexOf(lab.router, 'mv0'), { netns: lab.router }).progId).toBe(0);
    await forwardedInXdp(lab, x, 7403);
  });

  it("someone else's program on the macvlan: the parent's error names it", async () => {
    const lab = stacked('stk3');
    const prog = BpfProgram.loadXdpPass();
    const mv0 = ifindexOf(lab.router, 'mv0');
    const link = BpfLink.attachXdp(prog, mv0, { netns: lab.router, mode: 'generic' });
    cleanupLater(() => {
      link.close();
      prog.close();
    });
    const x = forwarder(lab, privateBpffs(), ['r1', 'r2']);
    await x.start();
    const r2 = x.status().find((d) => d.name === 'r2');
    expect(r2?.attached).toBe('none');
    expect(r2?.error).toMatch(
      new RegExp(`upper device mv0 \\(macvlan\\) has XDP program ${prog.id}.*refuses`),
    );
    expect(x.health().reasons.join('\n')).toMatch(/r2: .*upper device mv0/);
  });
});
