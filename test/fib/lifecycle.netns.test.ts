// Redirects that fail, and the attach lifecycle: a redirect into a device that cannot take
// XDP frames never happens for a frame the kernel forwards (the devmap follows the kernel's
// xdp_features), and one that fails anyway is counted; XDP only on devices that are up; auto
// tries native again on each start; an agent that fails to start leaves no program behind.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import {
  XdpForwarder,
  pinPaths,
  zeroRedirectErrors,
  type XdpDeviceCounters,
  type XdpForwarderConfig,
} from '../../src/fib/index.js';
import { silentLogger } from '../../src/log/index.js';
import { BpfLink, BpfMap, BpfProgram, xdpQuery } from '../../src/native/index.js';
import { ip, privileged, waitFor } from '../helpers/netns.js';
import {
  V4,
  cleanupLater,
  makeLab,
  peerPass,
  privateBpffs,
  udpReceiver,
  udpSend,
  type Lab,
} from './lab.js';

const { skip } = privileged();

function forwarder(lab: Lab, pinDir: string, over: Partial<XdpForwarderConfig> = {}) {
  const registry = new Registry();
  const x = new XdpForwarder({
    netns: lab.router,
    config: {
      devices: ['r*'],
      holderName: 'fk-holder',
      mode: 'auto',
      pinDir,
      keepOnStop: true,
      force: false,
      ipv6: true,
      ...over,
    },
    log: silentLogger(),
    registry,
    resyncIntervalMs: 0,
    sysctlPollMs: 0,
  });
  cleanupLater(() => void x.stop());
  return { x, registry };
}

const ctr = (x: XdpForwarder, d: string) =>
  x.counters().find((c) => c.device === d) as XdpDeviceCounters;

async function deliver(lab: Lab, port: number, n: number): Promise<number> {
  const rx = await udpReceiver(lab.server, port, 4);
  expect(await udpSend(lab.client, V4.server, port, n, 500)).toBe(n);
  return (await rx.stop()).received;
}

describe.skipIf(skip)('redirect errors', () => {
  it('an egress that takes no XDP frames stays out of the devmap (the kernel forwards); a redirect into it anyway is counted', async () => {
    // the server's end runs no XDP program: r2 has no ndo_xdp_xmit now
    const lab = makeLab('re', { peerXdp: false });
    peerPass(lab.client, 'c0');
    const pinDir = privateBpffs();
    const { x, registry } = forwarder(lab, pinDir);
    await x.start();
    expect(x.status().find((d) => d.name === 'r2')?.redirectTarget).toBe(false);
    expect(x.redirectErrorsCounted()).toBe(true);
    ip(lab.router, 'neigh', 'replace', V4.server, 'lladdr', '02:00:00:0f:02:02', 'dev', 'r2');
    const before = ctr(x, 'r1');
    expect(await deliver(lab, 7301, 20)).toBe(20);
    const after = ctr(x, 'r1');
    expect(after.reasons.no_txport.packets - before.reasons.no_txport.packets).toBe(20);
    expect(after.actions.redirect.packets).toBe(before.actions.redirect.packets);

    // what the devmap used to do: r2 in it although it cannot take frames
    const tx = BpfMap.fromPinned(join(pinPaths(pinDir, lab.router).maps, 'fk_tx_ports'));
    const k = Buffer.alloc(4);
    k.writeUInt32LE(lab.r2);
    tx.update(k, k);
    tx.close();
    expect(await deliver(lab, 7302, 10)).toBe(0); // lost after the redirect
    const lost = ctr(x, 'r1');
    expect(lost.actions.redirect.packets - after.actions.redirect.packets).toBe(10);
    expect(lost.redirectErrors).toEqual({ ...zeroRedirectErrors(), no_target: 10 });
    const text = await registry.metrics();
    expect(text).toContain(
      'fibkeeper_xdp_redirect_errors_total{device="r1",reason="no_target"} 10',
    );
    expect(text).toContain('fibkeeper_xdp_redirect_errors_total{device="r2",reason="too_big"} 0');

    // the next sync takes it out again: the kernel forwards
    await x.resync();
    expect(await deliver(lab, 7303, 10)).toBe(10);
    // the peer starts XDP: r2 can take frames now, and the sync puts it in the devmap
    peerPass(lab.server, 's0');
    await x.resync();
    expect(x.status().find((d) => d.name === 'r2')?.redirectTarget).toBe(true);
    const red = ctr(x, 'r1').actions.redirect.packets;
    expect(await deliver(lab, 7304, 10)).toBe(10);
    expect(ctr(x, 'r1').actions.redirect.packets - red).toBe(10);
    expect(ctr(x, 'r1').redirectErrors).toEqual({ ...zeroRedirectErrors(), no_target: 10 });
  });
});

describe.skipIf(skip)('attach lifecycle', () => {
  it('a device that is down gets no program; its hook stays free for an operator; up and free, it gets ours', async () => {
    const lab = makeLab('ld');
    ip(lab.router, 'link', 'set', 'r2', 'down');
    const { x } = forwarder(lab, privateBpffs());
    await x.start();
    expect(xdpQuery(lab.r2, { netns: lab.router }).attachMode).toBe('none');
    // the operator's own program, attached while the device is down
    const prog = BpfProgram.loadXdpPass();
    const link = BpfLink.attachXdp(prog, lab.r2, { netns: lab.router });
    ip(lab.router, 'link', 'set', 'r2', 'up');
    await x.resync();
    expect(x.status().find((d) => d.name === 'r2')).toMatchObject({ attached: 'foreign' });
    expect(xdpQuery(lab.r2, { netns: lab.router }).progId).toBe(prog.id);
    link.close();
    prog.close();
    await x.resync();
    expect(x.status().find((d) => d.name === 'r2')).toMatchObject({ attached: 'ours' });
    // down again: detached, its slot kept
    const slot = x.status().find((d) => d.name === 'r2')?.slot;
    ip(lab.router, 'link', 'set', 'r2', 'down');
    await x.resync();
    expect(xdpQuery(lab.r2, { netns: lab.router }).attachMode).toBe('none');
    expect(x.status().find((d) => d.name === 'r2')).toMatchObject({ attached: 'none', slot });
  });

  it('auto after a run in generic mode: the next start attaches native', async () => {
    const lab = makeLab('lg');
    const pinDir = privateBpffs();
    const a = forwarder(lab, pinDir, { mode: 'generic' });
    await a.x.start();
    expect(xdpQuery(lab.r1, { netns: lab.router }).attachMode).toBe('generic');
    await a.x.stop();
    const b = forwarder(lab, pinDir, { mode: 'auto' });
    await b.x.start();
    expect(xdpQuery(lab.r1, { netns: lab.router }).attachMode).toBe('native');
    expect(b.x.status().find((d) => d.name === 'r1')?.mode).toBe('native');
  });

  it('an agent that fails to start after attaching XDP leaves no program and no pin behind', async () => {
    const lab = makeLab('la');
    const dir = mkdtempSync(join(tmpdir(), 'fkt-agent-'));
    cleanupLater(() => rmSync(dir, { recursive: true, force: true }));
    const pinDir = privateBpffs();
    // the external-IP holder's name is taken by a veth (r2): the agent fails when it starts
    // the external IPs, a step after XDP
    const cfg = join(dir, 'config.yaml');
    writeFileSync(
      cfg,
      [
        `netns: ${lab.router}`,
        'devices: ["r1", "r2"]',
        'stateFile: ""',
        'xdp:',
        `  pinDir: ${pinDir}`,
        'neighbor:',
        '  enabled: false',
        'extip:',
        '  enabled: true',
        '  holderKind: bridge',
        '  holderName: r2',
        '  interface: r1',
        'api:',
        `  socket: ${join(dir, 'api.sock')}`,
        'metrics:',
        '  address: ""',
      ].join('\n') + '\n',
    );
    const r = spawnSync('node', ['bin/fibkeeper.js', 'run', '--config', cfg], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect({ status: r.status, stderr: r.stderr }).toEqual({
      status: 1,
      stderr: expect.stringMatching(/r2/),
    });
    for (const ifindex of [lab.r1, lab.r2]) {
      expect(xdpQuery(ifindex, { netns: lab.router }).attachMode).toBe('none');
    }
    const root = pinPaths(pinDir, lab.router).root;
    expect(existsSync(root) ? readdirSync(root) : []).toEqual([]);
    await waitFor(() => true);
  });
});
