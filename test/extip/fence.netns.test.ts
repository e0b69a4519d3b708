// The kernel side of cluster mode's fencing, checked against the peer's own kernel: the
// cluster holder is a TUN device that the kernel deletes, with every address on it, when the
// process that opened it ends (SIGKILL included), and the fence (bpf/cluster_fence.c, tcx on
// the external interface) stops every IP-level answer for a cluster IP at the deadline by
// the kernel's clock, with no help from userspace. The reference: the peer's ping (ICMP
// echo answered by the node's kernel) and a TCP connect answered with a RST.
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { ClusterFence } from '../../src/extip/fence.js';
import { parseIp } from '../../src/ipaddr/index.js';
import { silentLogger } from '../../src/log/index.js';
import { closeFd, openTun } from '../../src/native/index.js';
import { monotonicClock } from '../../src/sched/index.js';
import { ifindexOf, ip, ipJson, privileged, waitFor } from '../helpers/netns.js';
import { NODE_MAC, makeLab, type Lab } from './lab.js';

const { skip } = privileged();
const C4 = '10.20.0.60';
const C6 = '2001:db8:20::60';

type Drops = { ingress: number; egress: number };
const dropped = (d: Drops) => d.ingress + d.egress;

/**
 * Runs `argv` in the peer namespace; its exit code. With `fence`, the process is ended as
 * soon as the fence's drop count grows (what it sent was dropped: no answer can come, and
 * the counter, not a timeout, says so): exit code null.
 */
function inPeer(lab: Lab, argv: string[], fence?: { drops(): Drops }): Promise<number | null> {
  const from = fence === undefined ? 0 : dropped(fence.drops());
  return new Promise((done) => {
    const c = spawn('ip', ['netns', 'exec', lab.peer, ...argv], { stdio: 'ignore' });
    const poll =
      fence &&
      setInterval(() => {
        if (dropped(fence.drops()) > from) c.kill('SIGKILL');
      }, 10);
    c.on('exit', (code) => {
      if (poll !== undefined) clearInterval(poll);
      done(code);
    });
  });
}

/** One ping from the peer: answered? Without `fence`, "no" takes ping's 1 s wait. */
async function pings(lab: Lab, target: string, fence?: { drops(): Drops }): Promise<boolean> {
  const wait = fence === undefined ? '1' : '5';
  return (await inPeer(lab, ['ping', '-c', '1', '-W', wait, target], fence)) === 0;
}

/** Puts `ips` on a TUN holder of this process in the node namespace (like the agent). */
function tunHolder(lab: Lab, name: string, ips: string[]): number {
  const { fd } = openTun(name, lab.node);
  onTestFinished(() => closeFd(fd));
  ip(lab.node, 'link', 'set', name, 'up');
  for (const a of ips) {
    ip(lab.node, 'addr', 'add', `${a}/${a.includes(':') ? 128 : 32}`, 'dev', name, 'nodad');
  }
  return fd;
}

describe.skipIf(skip)('cluster fencing in the kernel', () => {
  it('the TUN holder and its addresses end with the process that opened it (SIGKILL)', async () => {
    const lab = await makeLab('xf1');
    const script = [
      `const { openTun } = await import(${JSON.stringify(resolve('dist/native/index.js'))});`,
      `openTun('fkc1', ${JSON.stringify(lab.node)});`,
      "process.stdout.write('open\\n');",
      'setInterval(() => {}, 1000);',
    ].join('\n');
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    onTestFinished(() => void (child.exitCode === null && child.kill('SIGKILL')));
    await new Promise<void>((done) => child.stdout!.once('data', () => done()));
    ip(lab.node, 'link', 'set', 'fkc1', 'up');
    ip(lab.node, 'addr', 'add', `${C4}/32`, 'dev', 'fkc1');
    expect(await pings(lab, C4)).toBe(true); // the node's kernel answers for it
    const exited = new Promise((done) => child.once('exit', done));
    child.kill('SIGKILL');
    await exited;
    // Once the process is gone, so are the device and its address: nothing to wait for.
    expect(
      ipJson<{ ifname: string }[]>(lab.node, 'link', 'show').map((l) => l.ifname),
    ).not.toContain('fkc1');
    expect(await pings(lab, C4)).toBe(false);
    // A persistent device of that name (`ip tuntap add`, someone else's leftover) is taken
    // over and made to end with the process too.
    ip(lab.node, 'tuntap', 'add', 'fkc1', 'mode', 'tun');
    const again = spawn(process.execPath, ['--input-type=module', '-e', script], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    onTestFinished(() => void (again.exitCode === null && again.kill('SIGKILL')));
    await new Promise<void>((done) => again.stdout!.once('data', () => done()));
    const gone = new Promise((done) => again.once('exit', done));
    again.kill('SIGKILL');
    await gone;
    expect(
      ipJson<{ ifname: string }[]>(lab.node, 'link', 'show').map((l) => l.ifname),
    ).not.toContain('fkc1');
  });

  it('drops every packet to and from a cluster IP once the deadline passes, by the kernel clock', async () => {
    const lab = await makeLab('xf2');
    tunHolder(lab, 'fkc2', [C4, C6]);
    // The kernel answers no solicitation for an address of another device (the agent's
    // responder does): the peer is told where C6 is.
    ip(lab.peer, 'neigh', 'replace', C6, 'lladdr', NODE_MAC, 'dev', 'peer0');
    expect(await pings(lab, C4)).toBe(true);
    const fence = ClusterFence.open({
      ifindex: ifindexOf(lab.node, 'ext0'),
      netns: lab.node,
      log: silentLogger(),
    });
    onTestFinished(() => fence.close());
    // On the list with no deadline yet: dropped.
    fence.follow(parseIp(C4));
    fence.follow(parseIp(C6));
    expect(await pings(lab, C4, fence)).toBe(false);
    expect(fence.drops().ingress).toBeGreaterThan(0);
    // A deadline ahead: answered, IPv4 and IPv6, ICMP and TCP (a RST from the node's kernel).
    fence.setDeadline(monotonicClock.now() + 60_000);
    expect(await pings(lab, C4)).toBe(true);
    expect(await pings(lab, C6)).toBe(true);
    expect(await tcpAnswer(lab, C4)).toBe('refused');
    // Leaving the holder: dropped at once whatever the deadline (ingress; the node's own
    // answers would be dropped on egress).
    fence.block(parseIp(C4));
    expect(await pings(lab, C4, fence)).toBe(false);
    fence.follow(parseIp(C4));
    // A deadline 400 ms ahead and no one to move it: answered now, silent after it.
    const until = monotonicClock.now() + 400;
    fence.setDeadline(until);
    expect(await pings(lab, C6)).toBe(true);
    const before = fence.drops();
    await waitFor(() => monotonicClock.now() > until + 10, { what: 'the deadline' });
    expect(await pings(lab, C4, fence)).toBe(false);
    expect(await pings(lab, C6, fence)).toBe(false);
    expect(await tcpAnswer(lab, C4, fence)).toBe('timeout');
    expect(fence.drops().ingress).toBeGreaterThan(before.ingress);
    // An IP not on the list is not the fence's business (the node's own address answers).
    expect(await pings(lab, '10.20.0.1')).toBe(true);
    // Closed (the agent's process ending does the same): nothing fenced any more.
    fence.close();
    expect(await pings(lab, C4)).toBe(true);
  });
});

/**
 * A TCP connect from the peer to port 9 of `target`: 'refused' (a RST), 'connected', or
 * 'timeout': with `fence`, as soon as its drop count grows (the SYN was dropped), else after
 * 5 s without an answer.
 */
async function tcpAnswer(
  lab: Lab,
  target: string,
  fence?: { drops(): Drops },
): Promise<'refused' | 'timeout' | 'connected'> {
  const script = [
    "const s = require('node:net').connect({ host: process.argv[1], port: 9 });",
    "s.on('connect', () => process.exit(10));",
    "s.on('error', (e) => process.exit(e.code === 'ECONNREFUSED' ? 11 : 12));",
    's.setTimeout(5000, () => process.exit(13));',
  ].join('\n');
  const code = await inPeer(lab, [process.execPath, '-e', script, target], fence);
  return code === 10 ? 'connected' : code === 11 ? 'refused' : 'timeout';
}
