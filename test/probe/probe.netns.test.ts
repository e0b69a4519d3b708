// The probes against this machine's real kernel: nothing may be reported missing on a kernel
// newer than its minimum, and what the probe says must match what `ip` can do.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { release } from 'node:os';
import { describe, expect, it, onTestFinished } from 'vitest';
import { buildConfig } from '../../src/config/index.js';
import { buildReport, compareKernel, probeKernel } from '../../src/probe/index.js';
import { makeNetns, privileged, sysctl } from '../helpers/netns.js';

const { skip } = privileged();

describe.skipIf(skip)('probe on this kernel', () => {
  it('reports no version-gated feature missing on a kernel newer than its minimum', async () => {
    const features = await probeKernel({ pinDir: '/sys/fs/bpf/fibkeeper' });
    expect(features.length).toBeGreaterThan(15);
    for (const f of features) {
      if (f.minKernel === null || f.name.startsWith('cap_')) continue;
      if (compareKernel(release(), f.minKernel) >= 0) {
        expect({ name: f.name, outcome: f.outcome, detail: f.detail }).toEqual({
          name: f.name,
          outcome: 'supported',
          detail: f.detail,
        });
      }
    }
    expect(features.find((f) => f.name === 'kernel')?.value).toBe(release());
  });

  it('reports the dummy link type exactly as the kernel has it', async () => {
    const ns = makeNetns('probe');
    const canCreate =
      spawnSync('ip', ['-n', ns, 'link', 'add', 'name', 'd0', 'type', 'dummy']).status === 0;
    const features = await probeKernel({ pinDir: '/sys/fs/bpf/fibkeeper' });
    const dummy = features.find((f) => f.name === 'dummy_link');
    expect(dummy?.outcome).toBe(canCreate ? 'supported' : 'not supported');
    // External IPs on the default holder kind need dummy; bridge does not.
    const withDummy = buildReport(
      features,
      buildConfig(undefined, { 'xdp-enabled': false, 'extip-enabled': true }),
    );
    const withBridge = buildReport(
      features,
      buildConfig(undefined, {
        'xdp-enabled': false,
        'extip-enabled': true,
        'extip-holder-kind': 'bridge',
      }),
    );
    expect(withDummy.missing.some((f) => f.name === 'dummy_link')).toBe(!canCreate);
    expect(withBridge.missing.some((f) => f.name === 'dummy_link')).toBe(false);
  });

  it('reads sysctls in the managed namespace and needs forwarding for XDP', async () => {
    const ns = makeNetns('probe');
    sysctl(ns, 'net.ipv4.ip_forward', 1);
    let features = await probeKernel({ netns: ns, pinDir: '/sys/fs/bpf/fibkeeper' });
    const value = (n: string) => features.find((f) => f.name === n)?.value;
    expect(value('ip_forward')).toBe(1);
    // The table defaults are global: read in the initial namespace.
    const host = (k: string) =>
      Number(readFileSync(`/proc/sys/net/ipv4/neigh/default/${k}`, 'utf8'));
    expect(value('gc_thresh3')).toBe(host('gc_thresh3'));
    expect(value('base_reachable_time_ms')).toBe(host('base_reachable_time_ms'));
    const cfg = buildConfig(undefined, { 'extip-holder-kind': 'bridge', 'xdp-ipv6': false });
    expect(buildReport(features, cfg).missing.map((f) => f.name)).toEqual([]);
    sysctl(ns, 'net.ipv4.ip_forward', 0);
    features = await probeKernel({ netns: ns, pinDir: '/sys/fs/bpf/fibkeeper' });
    expect(buildReport(features, cfg).missing.map((f) => f.name)).toEqual(['ip_forward']);
  });

  it('leaves no scratch namespace behind', async () => {
    await probeKernel({ pinDir: '/sys/fs/bpf/fibkeeper' });
    expect(spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' }).stdout).not.toContain(
      `fkprobe-${process.pid}-`,
    );
  });

  it('deletes the scratch namespace of a prober that was killed, and no live one', async () => {
    // A process that has exited: its pid names a leaked scratch namespace.
    const gone = spawnSync('sh', ['-c', 'echo $$'], { encoding: 'utf8' }).stdout.trim();
    const leaked = `fkprobe-${gone}-a1b2c3`;
    const live = `fkprobe-${process.pid}-d4e5f6`;
    for (const n of [leaked, live]) {
      spawnSync('ip', ['netns', 'add', n]);
      onTestFinished(() => void spawnSync('ip', ['netns', 'del', n]));
    }
    await probeKernel({ pinDir: '/sys/fs/bpf/fibkeeper' });
    const list = spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' }).stdout;
    expect(list).not.toContain(leaked);
    expect(list).toContain(live);
  });

  it('prints JSON and exits 1 when a needed feature is missing', () => {
    const r = spawnSync('node', ['bin/fibkeeper.js', 'probe', '--json'], { encoding: 'utf8' });
    const report = JSON.parse(r.stdout) as {
      missing: { name: string }[];
      features: { name: string }[];
    };
    expect(report.features.map((f) => f.name)).toContain('managed_neighbors');
    expect(r.status).toBe(report.missing.length > 0 ? 1 : 0);
  });
});
