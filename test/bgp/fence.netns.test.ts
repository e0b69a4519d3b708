// The announcement dies with the agent: SIGKILL of the agent kills its BIRD child (parent
// death signal) and the router drops the route; a node that falls silent (every packet to
// and from the router dropped, the link still up) loses its route within the BFD bound
// (3 × 100 ms), far below the BGP hold time (90 s). Times are printed, measured from the
// fault to the route leaving the router's kernel FIB.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { makeNetns, nsExec, privileged, waitFor } from '../helpers/netns.js';
import { makeRouter, nodeV4, startAgent, type Router } from './lab.js';

const { skip } = privileged();
const V4 = '192.0.2.20';
const BFD = ['  bfd:', '    interval: 100ms', '    multiplier: 3'];

async function lab() {
  const node = makeNetns('bgfn');
  const client = makeNetns('bgfc');
  const router = await makeRouter([node], client, { nodes: 1, bfd: true });
  const agent = await startAgent(node, 1, BFD);
  await waitFor(
    () => {
      const peers = JSON.parse(router.vtysh('show bfd peers json')) as {
        peer: string;
        status: string;
      }[];
      return peers.find((p) => p.peer === nodeV4(1))?.status === 'up';
    },
    {
      timeoutMs: 20_000,
      what: () =>
        `BFD session up: router ${router.vtysh('show bfd peers')}; node ${spawnSync('birdc', ['-s', `${agent.dir}/bgp/bird.ctl`, 'show', 'bfd', 'sessions'], { encoding: 'utf8' }).stdout} ${router.vtysh('show bgp neighbors 10.77.1.2')}`,
    },
  );
  const add = agent.cli('extip', 'add', V4);
  expect(add.status, add.stderr).toBe(0);
  await waitFor(() => router.kernelRoute(`${V4}/32`).length === 1, {
    timeoutMs: 10_000,
    what: 'route',
  });
  return { node, client, router, agent };
}

/** ms from now until the route has left the router's FIB (polled every 5 ms). */
async function untilGone(router: Router, timeoutMs: number): Promise<number> {
  const t0 = performance.now();
  await waitFor(() => router.kernelRoute(`${V4}/32`).length === 0, {
    timeoutMs,
    intervalMs: 5,
    what: `${V4} withdrawn`,
  });
  return performance.now() - t0;
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe.skipIf(skip)('the announcement dies with the agent', () => {
  it('SIGKILL of the agent: its BIRD dies with it and the router drops the route', async () => {
    const { router, agent } = await lab();
    const st = JSON.parse(agent.cli('bgp', 'status', '--json').stdout) as {
      daemon: { pid: number };
    };
    const bird = st.daemon.pid;
    expect(alive(bird)).toBe(true);
    const exited = new Promise((r) => agent.proc.once('exit', r));
    const t0 = performance.now();
    agent.proc.kill('SIGKILL');
    const ms = await untilGone(router, 5000);
    await exited;
    await waitFor(() => !alive(bird), { timeoutMs: 2000, what: `bird ${bird} gone` });
    console.log(`SIGKILL of the agent -> route gone from the router in ${ms.toFixed(0)} ms`);
    expect(performance.now() - t0).toBeLessThan(5000);
  });

  it('a node gone silent (link up, packets dropped): BFD drops the route within its bound', async () => {
    const { node, router } = await lab();
    const nft = [
      'table inet fkcut {',
      '  chain i { type filter hook input priority -300; policy drop; }',
      '  chain o { type filter hook output priority -300; policy drop; }',
      '}',
    ].join('\n');
    const t0 = performance.now();
    const r = spawnSync('ip', ['netns', 'exec', node, 'nft', '-f', '-'], {
      input: nft,
      encoding: 'utf8',
    });
    expect(r.status, r.stderr).toBe(0);
    const ms = await untilGone(router, 10_000).catch((err: unknown) => {
      throw new Error(`${String(err)}: ${router.vtysh('show bfd peers')}`);
    });
    console.log(
      `node silent -> route gone from the router in ${ms.toFixed(0)} ms (BFD 3 x 100 ms)`,
    );
    expect(nsExec(node, 'nft', 'list', 'tables')).toContain('fkcut');
    // BFD's bound, with room for a busy machine; the hold time (90 s) would be far beyond.
    expect(performance.now() - t0).toBeLessThan(3000);
    const bfd = JSON.parse(router.vtysh('show bfd peers json')) as {
      peer: string;
      status: string;
    }[];
    expect(bfd.find((p) => p.peer === nodeV4(1))?.status).toBe('down');
  });
});
