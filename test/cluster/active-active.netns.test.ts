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
import { monitor, nextHops, nodeV4, type AgentHandle, type Router } from '../bgp/lab.js';
import { bgpWorld, fileEtcd } from './bgp-world.js';

const { skip } = privileged();
const IP = '192.0.2.60';
const PORT = 7060;
const FLOWS = 24;
const SCRIPT = 'test/helpers/udp-flows.mjs';

const etcd = fileEtcd(skip);

/** The router's next hops for IP, as node numbers, sorted ('' when none). */
function hops(router: Router): string {
  const r = router.kernelRoute(`${IP}/32`)[0];
  if (r === undefined) return '';
  const gws = r.nexthops ? r.nexthops.map((n) => n.gateway) : [r.gateway!];
  return gws
    .map((g) => [1, 2, 3].find((i) => nodeV4(i) === g))
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

interface Summary {
  marks: Record<string, number>;
  flows: (string | null)[][];
}

/** Per flow: the node that answered it last before `from`, and the datagrams lost in [from, to). */
function phase(s: Summary, from: string, to?: string) {
  const a = s.marks[from]!;
  return s.flows.map((f) => {
    const end = to === undefined ? f.length : s.marks[to]!;
    const home = f.slice(0, a).findLast((x) => x !== null) ?? undefined;
    const lost = f.slice(a, end).filter((x) => x === null).length;
    const after = f.slice(a, end).findLast((x) => x !== null) ?? undefined;
    return { home, lost, after };
  });
}

const extipHeld = (a: AgentHandle): boolean =>
  (JSON.parse(a.cli('extip', 'list', '--json').stdout || '[]') as { ip: string }[]).some(
    (e) => e.ip === IP,
  );

describe.skipIf(skip)('cluster mode over BGP, active-active', () => {
  it('three nodes announce one IP (ECMP); a drained node withdraws first, a SIGKILLed one dies with its routes: no flow of the others loses a datagram', async () => {
    const w = await bgpWorld(etcd(), 3, 'bga');
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

    // Drain n3: its route goes first, the address cluster.withdrawLinger (1 s) later.
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
    const kill = phase(summary, 'kill', 'end');
    const count = (p: ReturnType<typeof phase>, f: (x: ReturnType<typeof phase>[0]) => boolean) =>
      p.filter(f).length;
    console.log(
      [
        `drain n3: route gone after ${withdrawnMs.toFixed(0)} ms, address after ${droppedMs.toFixed(0)} ms;`,
        `flows on n3 ${count(drain, (x) => x.home === 'n3')} (lost ${drain.filter((x) => x.home === 'n3').reduce((s, x) => s + x.lost, 0)}),`,
        `others ${count(drain, (x) => x.home !== 'n3')} (lost ${drain.filter((x) => x.home !== 'n3').reduce((s, x) => s + x.lost, 0)}, moved ${count(drain, (x) => x.home !== 'n3' && x.after !== x.home)});`,
        `SIGKILL n2: route gone after ${killMs.toFixed(0)} ms; flows on n2 ${count(kill, (x) => x.home === 'n2')} lost ${kill.filter((x) => x.home === 'n2').reduce((s, x) => s + x.lost, 0)} datagrams (10 ms apart),`,
        `others lost ${kill.filter((x) => x.home !== 'n2').reduce((s, x) => s + x.lost, 0)}`,
      ].join(' '),
    );
    // the drained node had flows, and they moved to the others without a loss
    expect(count(drain, (x) => x.home === 'n3')).toBeGreaterThan(0);
    for (const f of drain) {
      expect(f.lost, `a flow on ${f.home} lost datagrams during the drain`).toBe(0);
      expect(f.after).not.toBe('n3');
    }
    // a dead node's flows lose what was on its way; nobody else's do
    for (const f of kill) {
      if (f.home !== 'n2') expect(f.lost, `a flow on ${f.home} lost datagrams`).toBe(0);
      expect(f.after).not.toBe('n2');
    }
    // the router's FIB went 3 -> 2 -> 3 -> 2 next hops, never through none
    expect(mon.events.map(nextHops)).not.toContain(0);
  });
});
