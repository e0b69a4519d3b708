// Cluster mode over BGP, active-active: three nodes in one cluster (a real etcd) peered with a
// real FRR router, one cluster IP added with --active-active. Every node holds and announces
// it and the router installs one route with the three of them as next hops (ECMP); a client
// behind the router runs 24 UDP flows (one source port each; the router hashes on ports),
// each answered by the node it reaches, naming itself. A drained node withdraws its route and
// keeps the address for cluster.withdrawLinger; a SIGKILLed node's routes die with its BIRD.
// Throughout, no flow of the other nodes loses a datagram, and the drained node's flows move
// without a loss either: the references are the router's kernel (its FIB, its hash) and the
// answers the client gets.
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { describe, expect, it, onTestFinished } from 'vitest';
import { privileged, sysctl, waitFor } from '../helpers/netns.js';
import { trackChild } from '../helpers/cleanup.js';
import { monitor, nextHops, pingOnce, type AgentHandle, type Router } from '../bgp/lab.js';
import { bgpWorld, fileEtcd } from './bgp-world.js';

const { skip } = privileged();
const IP = '192.0.2.60';
const IP6 = '2001:db8:60::60';
const PORT = 7060;
const FLOWS = 24;
const SCRIPT = 'test/helpers/udp-flows.mjs';

const etcd = fileEtcd(skip);

/** The router's next hops for `dst`, as node numbers (its link to node i is n<i>), sorted. */
function hops(router: Router, dst = IP): string {
  const r = router.kernelRoute(dst.includes(':') ? `${dst}/128` : `${dst}/32`)[0];
  if (r === undefined) return '';
  const devs = r.nexthops ? r.nexthops.map((n) => n.dev) : [r.dev];
  return devs
    .map((d) => d?.replace(/^n/, ''))
    .sort()
    .join(' ');
}

/** A process in `ns` running udp-flows.mjs; its stdout lines come in order. */
function run(ns: string, ...args: string[]): { proc: ChildProcess; line: () => Promise<string> } {
  const proc = trackChild(
    spawn('ip', ['netns', 'exec', ns, process.execPath, SCRIPT, ...args], {
      stdio: ['pipe', 'pipe', 'inherit'],
    }),
  );
  const lines: string[] = [];
  const waiting: ((l: string) => void)[] = [];
  createInterface({ input: proc.stdout! }).on('line', (l) => {
    const w = waiting.shift();
    if (w) w(l);
    else lines.push(l);
  });
  const line = (): Promise<string> => {
    const l = lines.shift();
    return l !== undefined ? Promise.resolve(l) : new Promise((r) => waiting.push(r));
  };
  return { proc, line };
}

type Phase = ReturnType<typeof phase>;

interface Summary {
  marks: Record<string, number>;
  flows: (string | null)[][];
}

/**
 * Per flow: the node that answered its first datagram from mark `from` on (the router's path
 * for it then), and the datagrams lost from `from` to `to` (or the end).
 */
function phase(s: Summary, from: string, to?: string) {
  const a = s.marks[from]!;
  return s.flows.map((f) => {
    const end = to === undefined ? f.length : s.marks[to]!;
    const home = f.slice(a, end).find((x) => x !== null) ?? undefined;
    const lost = f.slice(a, end).filter((x) => x === null).length;
    return { home, lost };
  });
}

const extipHeld = (a: AgentHandle, ip = IP): boolean =>
  (JSON.parse(a.cli('extip', 'list', '--json').stdout || '[]') as { ip: string }[]).some(
    (e) => e.ip === ip,
  );

describe.skipIf(skip)('cluster mode over BGP, active-active', () => {
  it('three nodes announce one IP (ECMP); a drained node withdraws first, a SIGKILLed one dies with its routes: no flow of the others loses a datagram', async () => {
    // 2 s rather than the default 1 s: room for a loaded machine's BIRD and FRR
    const w = await bgpWorld(etcd(), 3, 'bga', ['  withdrawLinger: 2s']);
    const { router, client, agents } = w;
    // the router spreads flows by their ports too (a real fabric's default), not by IPs only
    sysctl(router.ns, 'net.ipv4.fib_multipath_hash_policy', 1);
    const mon = monitor(router, IP);
    onTestFinished(() => mon.stop());
    for (const [k, ns] of w.nodes.entries()) {
      const s = run(ns, 'serve', String(PORT), `n${k + 1}`);
      expect(await s.line()).toBe('listening');
    }
    const add = agents[0]!.cli('cluster', 'extip', 'add', IP, '--active-active');
    expect(add.status, add.stderr).toBe(0);
    await waitFor(() => hops(router) === '1 2 3', {
      timeoutMs: 20_000,
      what: () => `ECMP over the three nodes: ${JSON.stringify(router.kernelRoute(`${IP}/32`))}`,
    });
    const list = JSON.parse(agents[1]!.cli('cluster', 'extip', 'list', '--json').stdout) as {
      mode: string;
      owner: string | null;
    }[];
    expect(list).toMatchObject([{ ip: IP, mode: 'active-active', owner: null }]);

    const flows = run(client, 'flows', IP, String(PORT), String(FLOWS), '10');
    expect(await flows.line()).toBe('ready');
    const mark = async (name: string) => {
      flows.proc.stdin!.write(`mark ${name}\n`);
      expect(await flows.line()).toBe(`marked ${name}`);
    };

    // Drain n3: its route goes first, the address cluster.withdrawLinger (2 s) later.
    await mark('drain');
    const t0 = performance.now();
    expect(agents[0]!.cli('cluster', 'drain', 'n3').status).toBe(0);
    await waitFor(() => hops(router) === '1 2', {
      timeoutMs: 10_000,
      intervalMs: 5,
      what: () => `n3 withdrawn: ${hops(router)}`,
    });
    const withdrawnMs = performance.now() - t0;
    expect(extipHeld(agents[2]!), 'n3 still holds the address after its route went').toBe(true);
    await waitFor(() => !extipHeld(agents[2]!), { timeoutMs: 10_000, what: 'n3 drops it' });
    const droppedMs = performance.now() - t0;

    // Back: n3 announces again; then n2's agent is SIGKILLed.
    await mark('uncordon');
    expect(agents[0]!.cli('cluster', 'uncordon', 'n3').status).toBe(0);
    await waitFor(() => hops(router) === '1 2 3', { timeoutMs: 10_000, what: 'n3 back' });
    await mark('kill');
    const t1 = performance.now();
    agents[1]!.proc.kill('SIGKILL');
    await waitFor(() => hops(router) === '1 3', {
      timeoutMs: 10_000,
      intervalMs: 5,
      what: () => `n2's route gone: ${hops(router)}`,
    });
    const killMs = performance.now() - t1;
    await mark('end');
    flows.proc.stdin!.write('stop\n');
    const summary = JSON.parse(await flows.line()) as Summary;

    const drain = phase(summary, 'drain', 'uncordon');
    const drained = phase(summary, 'uncordon', 'kill'); // n3 drained, not yet back
    const kill = phase(summary, 'kill', 'end');
    const killed = phase(summary, 'end'); // n2 dead, its route gone
    const on = (p: Phase, node: string) => p.filter((x) => x.home === node);
    const others = (p: Phase, node: string) => p.filter((x) => x.home !== node);
    const lost = (p: Phase) => p.reduce((n, x) => n + x.lost, 0);
    const moved = drain.filter((x, i) => x.home !== 'n3' && drained[i]!.home !== x.home).length;
    console.log(
      [
        `drain n3: route gone after ${withdrawnMs.toFixed(0)} ms, address after ${droppedMs.toFixed(0)} ms;`,
        `flows on n3 ${on(drain, 'n3').length} (lost ${lost(on(drain, 'n3'))}),`,
        `others ${others(drain, 'n3').length} (lost ${lost(others(drain, 'n3'))}, moved ${moved});`,
        `SIGKILL n2: route gone after ${killMs.toFixed(0)} ms; flows on n2 ${on(kill, 'n2').length} lost ${lost(on(kill, 'n2'))} datagrams (10 ms apart),`,
        `others lost ${lost(others(kill, 'n2'))}`,
      ].join(' '),
    );
    // the drained node had flows, and they moved to the others without a loss
    expect(on(drain, 'n3').length).toBeGreaterThan(0);
    expect(lost(drain), 'datagrams lost while n3 drained').toBe(0);
    expect(on(drained, 'n3')).toEqual([]);
    // a dead node's flows lose what was on its way; nobody else's do
    expect(on(kill, 'n2').length).toBeGreaterThan(0);
    expect(lost(others(kill, 'n2')), 'datagrams of n1 and n3 lost').toBe(0);
    expect(on(killed, 'n2')).toEqual([]);
    expect(lost(killed)).toBe(0);
    // the router's FIB went 3 -> 2 -> 3 -> 2 next hops, never through none
    expect(mon.events.map(nextHops)).not.toContain(0);

    // IPv6 too (MP-BGP), on the two live nodes; then both IPs deleted: every route goes
    const add6 = agents[0]!.cli('cluster', 'extip', 'add', IP6, '--active-active');
    expect(add6.status, add6.stderr).toBe(0);
    await waitFor(() => hops(router, IP6) === '1 3', {
      timeoutMs: 10_000,
      what: () => `IPv6 ECMP: ${JSON.stringify(router.kernelRoute(`${IP6}/128`))}`,
    });
    await waitFor(() => pingOnce(client, IP6), { timeoutMs: 5000, what: `ping ${IP6}` });
    const del = agents[0]!.cli('cluster', 'extip', 'del', IP, IP6);
    expect(del.status, del.stderr).toBe(0);
    await waitFor(() => hops(router) === '' && hops(router, IP6) === '', {
      timeoutMs: 10_000,
      what: () => `both withdrawn: ${hops(router)} / ${hops(router, IP6)}`,
    });
    await waitFor(
      () => [0, 2].every((k) => !extipHeld(agents[k]!) && !extipHeld(agents[k]!, IP6)),
      {
        timeoutMs: 10_000,
        what: 'the addresses gone after the linger',
      },
    );
  });
});
