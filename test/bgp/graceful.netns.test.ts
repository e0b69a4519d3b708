// Graceful restart (bgp.gracefulRestart) against a real FRR router: a planned restart of the
// agent (SIGTERM, the next agent on the same state) loses no packet from a client behind the
// router, while a crash of the agent (SIGKILL) and a node gone silent still drop the route at
// once, GR negotiated or not. Times are printed.
import { spawn, spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { sleep, systemClock } from '../../src/sched/index.js';
import { makeNetns, privileged, waitFor } from '../helpers/netns.js';
import { makeRouter, monitor, nodeV4, runAgent, startAgent, type Router } from './lab.js';

const { skip } = privileged();
const V4 = '192.0.2.30';
const GR = ['  gracefulRestart: 30s', '  bfd:', '    interval: 100ms', '    multiplier: 3'];

async function lab() {
  const node = makeNetns('bggn');
  const client = makeNetns('bggc');
  const router = await makeRouter([node], client, { nodes: 1, bfd: true });
  const agent = await startAgent(node, 1, GR);
  await waitFor(() => bfdUp(router), { timeoutMs: 20_000, what: 'BFD session up' });
  const add = agent.cli('extip', 'add', V4);
  expect(add.status, add.stderr).toBe(0);
  await waitFor(() => router.kernelRoute(`${V4}/32`).length === 1, {
    timeoutMs: 10_000,
    what: 'route',
  });
  // The router has negotiated GR with the node (the node's restart time is what we set).
  const nbr = router.vtysh(`show bgp neighbors ${nodeV4(1)}`);
  expect(nbr).toMatch(/Remote GR Mode: Restart/);
  // and the node says so: the router sent the capability (FRR is a GR helper by default)
  const st = () =>
    JSON.parse(agent.cli('bgp', 'status', '--json').stdout) as {
      gracefulRestartS: number;
      peers: { gracefulRestart: string }[];
    };
  expect(st().gracefulRestartS).toBe(30);
  await waitFor(() => st().peers.every((p) => p.gracefulRestart === 'on'), {
    timeoutMs: 10_000,
    what: () => `GR on with both peers: ${JSON.stringify(st().peers)}`,
  });
  return { node, client, router, agent };
}

function bfdUp(router: Router): boolean {
  const peers = JSON.parse(router.vtysh('show bfd peers json')) as {
    peer: string;
    status: string;
  }[];
  return peers.find((p) => p.peer === nodeV4(1))?.status === 'up';
}

async function untilGone(router: Router, timeoutMs: number): Promise<number> {
  const t0 = performance.now();
  await waitFor(() => router.kernelRoute(`${V4}/32`).length === 0, {
    timeoutMs,
    intervalMs: 5,
    what: `${V4} withdrawn`,
  });
  return performance.now() - t0;
}

describe.skipIf(skip)('graceful restart', () => {
  it('a planned restart (SIGTERM, start again) loses no packet through the router', async () => {
    const { client, router, agent } = await lab();
    const mon = monitor(router, V4);
    const count = 600; // 6 s at 10 ms
    const ping = spawn(
      'ip',
      ['netns', 'exec', client, 'ping', '-n', '-q', '-i', '0.01', '-W', '1', '-c', `${count}`, V4],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    ping.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    const pinged = new Promise<number | null>((r) => ping.once('exit', r));
    await sleep(systemClock, 500); // traffic flows before the restart
    const exited = new Promise((r) => agent.proc.once('exit', r));
    const t0 = performance.now();
    agent.proc.kill('SIGTERM');
    await exited;
    // The router keeps the route, marked stale, while no agent runs.
    const stale = router.vtysh(`show bgp ipv4 unicast ${V4}/32`);
    expect(stale, stale).toMatch(/Stale/i);
    expect(router.kernelRoute(`${V4}/32`)).toHaveLength(1);
    const next = await runAgent(agent.dir, agent.sock, agent.port);
    await waitFor(() => bfdUp(router), { timeoutMs: 20_000, what: 'BFD up again' });
    const back = performance.now() - t0;
    // The next agent's End-of-RIB clears the stale mark: the path is fresh again.
    await waitFor(() => !/Stale/i.test(router.vtysh(`show bgp ipv4 unicast ${V4}/32`)), {
      timeoutMs: 10_000,
      what: 'stale mark cleared',
    });
    // The new session said the node kept its forwarding state (bird -R: the F bit).
    const nbr = router.vtysh(`show bgp neighbors ${nodeV4(1)}`);
    expect(nbr, nbr).toMatch(/IPv4 Unicast\(preserved\)/);
    await pinged;
    mon.stop();
    const m = /(\d+) packets transmitted, (\d+) received/.exec(out);
    expect(m, out).not.toBeNull();
    console.log(
      `planned restart with GR: ${m![1]} sent, ${m![2]} answered; sessions back in ${back.toFixed(0)} ms; router FIB events: ${JSON.stringify(mon.events)}`,
    );
    expect(Number(m![2])).toBe(Number(m![1]));
    expect(mon.events.filter((e) => e.startsWith('Deleted'))).toEqual([]);
    expect(next.proc.exitCode).toBeNull();
  });

  it('SIGKILL of the agent with GR negotiated: the router drops the route at once', async () => {
    const { router, agent } = await lab();
    const exited = new Promise((r) => agent.proc.once('exit', r));
    agent.proc.kill('SIGKILL');
    const ms = await untilGone(router, 5000);
    await exited;
    console.log(`SIGKILL with GR negotiated -> route gone from the router in ${ms.toFixed(0)} ms`);
    // Far below the restart time (30 s) the router would keep a stale route for.
    expect(ms).toBeLessThan(3000);
  });

  it('a node gone silent with GR negotiated: BFD drops the route', async () => {
    const { node, router } = await lab();
    const nft = [
      'table inet fkcut {',
      '  chain i { type filter hook input priority -300; policy drop; }',
      '  chain o { type filter hook output priority -300; policy drop; }',
      '}',
    ].join('\n');
    const r = spawnSync('ip', ['netns', 'exec', node, 'nft', '-f', '-'], {
      input: nft,
      encoding: 'utf8',
    });
    expect(r.status, r.stderr).toBe(0);
    const ms = await untilGone(router, 10_000);
    console.log(
      `silent node with GR negotiated -> route gone in ${ms.toFixed(0)} ms (BFD 3 x 100 ms)`,
    );
    expect(ms).toBeLessThan(3000);
  });
});
