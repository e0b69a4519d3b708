// Cluster mode of the external-IP subsystem on one node, checked on the wire against the
// peer's own kernel: cluster IPs go on the cluster holder (a TUN device of the process)
// without duplicate address detection, are announced and answered for only while the
// cluster gate (the lease) allows, leave the holder before setClusterIps resolves; the
// kernel itself never speaks for them at the ARP/NDP level (arp_ignore, arp_announce; IPv6
// by the kernel's own rules) and, past the hold deadline, not at the IP level either (the
// fence) — so a hung agent's node stays silent, and a stopped one leaves nothing. The
// references: the peer's kernel resolving the IP, and the same checks with the sysctls at
// the kernel defaults, where the kernel does answer.
import { spawnSync } from 'node:child_process';
import { Registry } from 'prom-client';
import { describe, expect, it, onTestFinished } from 'vitest';
import { ExternalIpSubsystem, decodeFrame, type ClusterGate } from '../../src/extip/index.js';
import { silentLogger } from '../../src/log/index.js';
import { monotonicClock } from '../../src/sched/index.js';
import { ip, nsExec, privileged, sysctl, waitFor } from '../helpers/netns.js';
import {
  NODE_MAC,
  NODE_V4,
  PEER_V4,
  PEER_V6,
  capture,
  holderAddrs,
  makeLab,
  metric,
  nsExecAsync,
  testConfig,
  type Lab,
} from './lab.js';

const { skip } = privileged();

const C4 = '10.20.0.50';
const C6 = '2001:db8:20::50';
const HOLDER = 'fkxc0';
const AHEAD = () => monotonicClock.now() + 3_600_000;

interface TestGate extends ClusterGate {
  valid: boolean;
  held: Set<string>;
}

function gate(): TestGate {
  const g: TestGate = {
    valid: true,
    held: new Set(),
    mayHold: (ipText) => g.valid && g.held.has(ipText),
    holderName: HOLDER,
  };
  return g;
}

async function startCluster(lab: Lab, g: ClusterGate) {
  const registry = new Registry();
  const extip = new ExternalIpSubsystem({
    netns: lab.node,
    config: testConfig(),
    registry,
    log: silentLogger(),
    cluster: g,
  });
  onTestFinished(() => extip.stop());
  await extip.start();
  await extip.setDesired([]);
  extip.setClusterDeadline(AHEAD()); // the lease's proof: the fence lets the kernel answer
  return { extip, registry };
}

const value = (ns: string, key: string) => Number(nsExec(ns, 'sysctl', '-n', key).trim());

/** Whether the peer's kernel resolves `target` now: its entry flushed, one ping. */
async function peerReaches(lab: Lab, target: string): Promise<boolean> {
  ip(lab.peer, target.includes(':') ? '-6' : '-4', 'neigh', 'flush', 'dev', 'peer0');
  try {
    await nsExecAsync(lab.peer, 'ping', '-c', '1', '-W', '1', target);
    return true;
  } catch {
    return false;
  }
}

/** ARP replies and NAs that speak for `target`, from the node's MAC, among `frames`. */
function answersFor(frames: readonly Buffer[], target: string): number {
  return frames.filter((f) => {
    const d = decodeFrame(f);
    if (d.kind === 'arp') return d.eth.src === NODE_MAC && d.senderIp === target;
    return d.kind === 'na' && d.eth.src === NODE_MAC && d.target === target;
  }).length;
}

describe.skipIf(skip)('extip in cluster mode', () => {
  it('sets arp_ignore=1 and arp_announce=2 on the external interface, and sets them back', async () => {
    const lab = await makeLab('xc1');
    expect(value(lab.node, 'net.ipv4.conf.ext0.arp_ignore')).toBe(0);
    expect(value(lab.node, 'net.ipv4.conf.ext0.arp_announce')).toBe(0);
    const { extip, registry } = await startCluster(lab, gate());
    expect(value(lab.node, 'net.ipv4.conf.ext0.arp_ignore')).toBe(1);
    expect(value(lab.node, 'net.ipv4.conf.ext0.arp_announce')).toBe(2);
    expect(value(lab.node, 'net.ipv4.conf.all.arp_ignore')).toBe(0); // only the interface's
    sysctl(lab.node, 'net.ipv4.conf.ext0.arp_ignore', 0);
    sysctl(lab.node, 'net.ipv4.conf.ext0.arp_announce', 1);
    await extip.check();
    expect(value(lab.node, 'net.ipv4.conf.ext0.arp_ignore')).toBe(1);
    expect(value(lab.node, 'net.ipv4.conf.ext0.arp_announce')).toBe(2);
    expect(await metric(registry, 'fibkeeper_extip_repairs_total', { kind: 'sysctl' })).toBe(2);
  });

  it('holds cluster IPs without DAD and speaks for them only while the gate allows', async () => {
    const lab = await makeLab('xc2');
    const g = gate();
    const { extip } = await startCluster(lab, g);
    const cap = capture(lab.peer, 'peer0');
    g.held = new Set([C4, C6]);
    await extip.setClusterIps([C4, C6]);
    await waitFor(() => holderAddrs(lab.node, HOLDER).length === 2, {
      what: 'both on the cluster holder',
    });
    expect(holderAddrs(lab.node, HOLDER)).toEqual([`${C4}/32`, `${C6}/128 nodad`]);
    expect(holderAddrs(lab.node, 'fkx0')).toEqual([]);
    await waitFor(() => answersFor(cap.frames, C4) >= 2 && answersFor(cap.frames, C6) >= 1, {
      what: 'the first announcements',
    });
    // no duplicate address detection: no ARP probe (sender 0.0.0.0), no NS from ::
    const probes = cap.frames.filter((f) => {
      const d = decodeFrame(f);
      return d.kind === 'arp' && d.senderIp === '0.0.0.0';
    });
    expect(probes).toEqual([]);
    expect(
      cap.frames.filter((f) => f.readUInt16BE(12) === 0x86dd && f[54] === 135 && f[22] === 0),
    ).toEqual([]);
    expect(extip.list()).toMatchObject([
      { ip: C4, state: 'assigned', cluster: true },
      { ip: C6, state: 'assigned', cluster: true },
    ]);
    expect(await peerReaches(lab, C4)).toBe(true);
    expect(await peerReaches(lab, C6)).toBe(true);

    // The lease can no longer be proven valid (the hold set has not changed yet, as in a
    // process whose timers run late): no answer, no announcement.
    g.valid = false;
    const before = cap.frames.length;
    expect(await peerReaches(lab, C4)).toBe(false);
    expect(await peerReaches(lab, C6)).toBe(false);
    expect(answersFor(cap.frames.slice(before), C4)).toBe(0);
    expect(answersFor(cap.frames.slice(before), C6)).toBe(0);
    g.valid = true;
    expect(await peerReaches(lab, C4)).toBe(true);

    // Released: off the holder before setClusterIps resolves.
    g.held = new Set([C6]);
    await extip.setClusterIps([C6]);
    expect(holderAddrs(lab.node, HOLDER)).toEqual([`${C6}/128 nodad`]);
    expect(extip.list().map((s) => s.ip)).toEqual([C6]);
    g.held = new Set();
    await extip.setClusterIps([]);
    expect(holderAddrs(lab.node, HOLDER)).toEqual([]);
  });

  it('the kernel never speaks for cluster IPs by itself: a hung agent goes silent, a stopped one leaves nothing', async () => {
    const lab = await makeLab('xc3');
    const g = gate();
    const { extip } = await startCluster(lab, g);
    g.held = new Set([C4, C6]);
    await extip.setClusterIps([C4, C6]);
    await waitFor(() => holderAddrs(lab.node, HOLDER).length === 2, { what: 'both held' });
    g.valid = false; // as a hung agent: its addresses stay, it speaks for nothing
    const cap = capture(lab.peer, 'peer0');
    expect(await peerReaches(lab, C4)).toBe(false);
    expect(await peerReaches(lab, C6)).toBe(false);
    expect(answersFor(cap.frames, C4)).toBe(0);
    expect(answersFor(cap.frames, C6)).toBe(0);
    // A peer that still knows where the IPs were (a static entry, a missed announcement)
    // reaches them at the IP level until the deadline the lease proved, and not after it:
    // the kernel fence, with no help from the agent.
    ip(lab.peer, 'neigh', 'replace', C4, 'lladdr', NODE_MAC, 'dev', 'peer0');
    expect(await pings(lab, C4)).toBe(true);
    extip.setClusterDeadline(monotonicClock.now() - 1);
    expect(await pings(lab, C4)).toBe(false);
    expect(extip.clusterFenceDrops()?.ingress).toBeGreaterThan(0);
    ip(lab.peer, 'neigh', 'del', C4, 'dev', 'peer0');
    extip.setClusterDeadline(AHEAD());

    // The kernel's own ARP requests (the node talking from a holder address) carry the
    // interface's address as sender, never the cluster IP.
    const sent = cap; // what the node puts on the wire, as the peer receives it
    ip(lab.node, 'neigh', 'flush', 'dev', 'ext0');
    spawnSync('ip', ['netns', 'exec', lab.node, 'ping', '-c1', '-W1', '-I', C4, PEER_V4]);
    spawnSync('ip', ['netns', 'exec', lab.node, 'ping', '-6', '-c1', '-W1', '-I', C6, PEER_V6]);
    const requests = () =>
      sent.frames
        .map((f) => decodeFrame(f))
        .filter((d) => d.kind === 'arp' && d.op === 1 && d.targetIp === PEER_V4);
    await waitFor(() => requests().length > 0, { what: "the node's ARP request" });
    expect(requests().map((d) => (d.kind === 'arp' ? d.senderIp : ''))).toContain(NODE_V4);
    expect(requests().map((d) => (d.kind === 'arp' ? d.senderIp : ''))).not.toContain(C4);
    const solicits = () =>
      sent.frames.filter((f) => f.readUInt16BE(12) === 0x86dd && f[20] === 58 && f[54] === 135);
    await waitFor(() => solicits().length > 0, { what: "the node's neighbor solicitation" });
    const c6 = Buffer.from('20010db8002000000000000000000050', 'hex'); // C6
    for (const f of solicits()) expect(f.subarray(22, 38).equals(c6)).toBe(false);

    // The references: at the kernel's defaults the same node does answer ARP for the holder
    // address, and its own requests carry the cluster IP — what cluster mode turns off.
    sysctl(lab.node, 'net.ipv4.conf.ext0.arp_ignore', 0);
    expect(await peerReaches(lab, C4)).toBe(true);
    sysctl(lab.node, 'net.ipv4.conf.ext0.arp_announce', 0);
    const mark = sent.frames.length;
    ip(lab.node, 'neigh', 'flush', 'dev', 'ext0');
    spawnSync('ip', ['netns', 'exec', lab.node, 'ping', '-c1', '-W1', '-I', C4, PEER_V4]);
    await waitFor(
      () =>
        sent.frames
          .slice(mark)
          .map((f) => decodeFrame(f))
          .some((d) => d.kind === 'arp' && d.op === 1 && d.senderIp === C4),
      { what: 'an ARP request from the cluster IP at arp_announce=0' },
    );
    // Stopped (as killed): the cluster holder is gone with its addresses, nothing answers.
    await extip.stop();
    expect(holderAddrs(lab.node, HOLDER)).toEqual([]);
    expect(await peerReaches(lab, C4)).toBe(false);
  });

  it('a routed-only (active-active) IP is held and reached by its route, never announced or answered', async () => {
    const lab = await makeLab('xc5');
    const g: TestGate = { ...gate(), routedOnly: (ipText) => ipText === C4 };
    g.mayHold = (ipText) => g.valid && g.held.has(ipText);
    const { extip, registry } = await startCluster(lab, g);
    const cap = capture(lab.peer, 'peer0');
    g.held = new Set([C4, C6]);
    await extip.setClusterIps([C4, C6]);
    await waitFor(() => holderAddrs(lab.node, HOLDER).length === 2, { what: 'both held' });
    // C6 is announced as usual: once its announcement is seen, C4's would have been too
    await waitFor(() => answersFor(cap.frames, C6) >= 1, { what: "C6's announcement" });
    expect(answersFor(cap.frames, C4)).toBe(0);
    // asked by ARP, nobody answers (neither the agent nor the kernel)
    expect(await peerReaches(lab, C4)).toBe(false);
    expect(answersFor(cap.frames, C4)).toBe(0);
    expect(await metric(registry, 'fibkeeper_extip_responses_sent_total', { family: 'ipv4' })).toBe(
      0,
    );
    // routed to the node (as a BGP route would), it answers
    ip(lab.peer, 'route', 'add', `${C4}/32`, 'via', NODE_V4);
    expect(await pings(lab, C4)).toBe(true);
    expect(extip.list().find((s) => s.ip === C4)).toMatchObject({ state: 'assigned' });
  });

  it('refuses an IP that is both node-local and a cluster IP, either way round', async () => {
    const lab = await makeLab('xc4');
    const g = gate();
    const { extip } = await startCluster(lab, g);
    const LOCAL = '10.20.0.60';
    await extip.assign([LOCAL]);
    g.held = new Set([LOCAL, C4]);
    await extip.setClusterIps([LOCAL, C4]);
    await waitFor(() => holderAddrs(lab.node, HOLDER).length === 1, { what: 'C4 held' });
    expect(extip.list()).toMatchObject([
      { ip: C4, cluster: true },
      { ip: LOCAL, cluster: false },
    ]);
    expect(extip.health().reasons.join('\n')).toMatch(
      /cluster IP 10\.20\.0\.60 is owned by this node but not held: it is a node-local external IP here/,
    );
    await expect(extip.assign([C4])).rejects.toMatchObject({
      code: 'FIBKEEPER_ERR_CONFLICT',
      message: expect.stringMatching(/10\.20\.0\.50 is a cluster external IP that this node holds/),
    });
    // the refused one stays node-local when the cluster lets go of it
    g.held = new Set([C4]);
    await extip.setClusterIps([C4]);
    expect(holderAddrs(lab.node, HOLDER)).toEqual([`${C4}/32`]);
    expect(holderAddrs(lab.node, 'fkx0')).toEqual([`${LOCAL}/32`]);
    expect(extip.health().ok).toBe(true);
  });
});

/** One ping from the peer (its neighbor entry as it is). */
async function pings(lab: Lab, target: string): Promise<boolean> {
  try {
    await nsExecAsync(lab.peer, 'ping', '-c', '1', '-W', '1', target);
    return true;
  } catch {
    return false;
  }
}
