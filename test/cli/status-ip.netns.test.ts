// `fibkeeper status IP` against a real agent (XDP on) in a namespace: the explanation must
// agree with what the kernel itself says — the route as `ip route get IP fibmatch` gives it,
// the next hop's entry as `ip neigh` shows it, the XDP program as `ip link` shows it.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StatusDocument } from '../../src/agent/index.js';
import {
  baseConfig,
  cli,
  makeWorld,
  ownedNeighbors,
  startAgent,
  stopAgent,
  writeConfig,
  type AgentProc,
  type AgentWorld,
} from '../agent/harness.js';
import { cleanupLater } from '../helpers/cleanup.js';
import { ip, ipJson, privileged, waitFor } from '../helpers/netns.js';

const { skip } = privileged();

interface NeighJson {
  dst: string;
  lladdr?: string;
  state: string[];
}

describe.skipIf(skip)('fibkeeper status IP', () => {
  let w: AgentWorld;
  let agent: AgentProc;

  beforeAll(async () => {
    w = makeWorld('sip');
    // 10.89.0.5 is behind the peer: its next hop is the gateway 10.88.0.2.
    ip(w.ns, 'route', 'add', '10.89.0.0/24', 'via', '10.88.0.2', 'dev', w.dev);
    writeConfig(w, baseConfig(w, { xdp: true, forwardableStatic: ['10.89.0.5'] }));
    // The agent mounts bpffs on its pin dir: unmounted before the directory is removed.
    cleanupLater(() => spawnSync('umount', [join(w.dir, 'bpf')]));
    agent = await startAgent(w);
    await waitFor(() => ownedNeighbors(w.ns, w.dev).includes('10.88.0.2'), {
      timeoutMs: 15_000,
      what: 'the entry for the gateway 10.88.0.2',
    });
  }, 60_000);
  afterAll(async () => {
    await stopAgent(agent);
  });

  it('explains a forwardable IP as the kernel has it: route, next hop entry, XDP', () => {
    const neighBefore = ipJson<NeighJson[]>(w.ns, 'neigh', 'show', '10.88.0.2', 'dev', w.dev);
    const r = cli('status', '10.89.0.5', '-o', 'json', '--socket', w.sock);
    const neighAfter = ipJson<NeighJson[]>(w.ns, 'neigh', 'show', '10.88.0.2', 'dev', w.dev);
    expect(r.code, r.err).toBe(0);
    const doc = JSON.parse(r.out) as StatusDocument;
    const x = doc.explain!;
    expect(doc.query).toEqual({ ip: '10.89.0.5', owner: null, device: null, state: null });
    expect(x.owners).toEqual(['config']);
    expect(x.external).toBeNull();
    // The route, against the kernel's own answer.
    const [kr] = ipJson<{ dst: string; gateway: string; dev: string }[]>(
      w.ns,
      'route',
      'get',
      '10.89.0.5',
      'fibmatch',
    );
    expect(x.route).toMatchObject({
      type: 'unicast',
      prefix: kr!.dst,
      table: 254,
      nexthops: [{ device: kr!.dev, gateway: kr!.gateway }],
    });
    expect(x.route!.text).toBe(`${kr!.dst} via ${kr!.gateway} dev ${kr!.dev} table 254`);
    // XDP on the route's device, against `ip link`.
    const [link] = ipJson<{ xdp?: { prog?: { id: number } } }[]>(w.ns, 'link', 'show', w.dev);
    expect(x.xdp).toEqual([
      { device: w.dev, attached: 'ours', mode: expect.any(String), progId: link!.xdp!.prog!.id },
    ]);
    // The next hop's kernel entry, against `ip neigh` (read just before and just after).
    const row = doc.neighbor!.forwardable.find((f) => f.ip === '10.89.0.5');
    expect(doc.neighbor!.forwardable.map((f) => f.ip)).toEqual(['10.89.0.5']);
    const nh = row!.devices.find((d) => d.device === w.dev)!.nexthops[0]!;
    expect(nh.nexthop).toBe('10.88.0.2');
    expect(nh.kernel!.lladdr).toBe(neighAfter[0]!.lladdr);
    expect([neighBefore[0]!.state, neighAfter[0]!.state]).toContainEqual(nh.kernel!.state);
  });

  it('prints it as text: one line each, the kernel entry as `ip neigh` names it', () => {
    const r = cli('status', '10.89.0.5', '--socket', w.sock);
    expect(r.code, r.err).toBe(0);
    const [n] = ipJson<NeighJson[]>(w.ns, 'neigh', 'show', '10.88.0.2', 'dev', w.dev);
    expect(r.out).toMatch(/^10\.89\.0\.5\n {2}owners: +config\n {2}external IP: no\n/);
    expect(r.out).toContain('  route:       10.89.0.0/24 via 10.88.0.2 dev fk-a table 254\n');
    expect(r.out).toMatch(/ {2}xdp: +fk-a program \d+ \((native|generic)\)\n/);
    expect(r.out).toMatch(
      new RegExp(`\\n  fk-a +10\\.88\\.0\\.2 +done +lladdr ${n!.lladdr} .*\\(fibkeeper\\)\\n`),
    );
  });

  it('explains an IP nobody asked for: no owners, the route still shown', () => {
    const r = cli('status', '10.88.0.77', '-o', 'json', '--socket', w.sock);
    expect(r.code, r.err).toBe(0);
    const doc = JSON.parse(r.out) as StatusDocument;
    expect(doc.explain).toMatchObject({
      ip: '10.88.0.77',
      owners: [],
      route: { prefix: '10.88.0.0/16', nexthops: [{ device: 'fk-a', gateway: null }] },
    });
    expect(doc.neighbor!.forwardable).toEqual([]);
  });

  it('a malformed IP is a usage error (exit 2), asked of no agent', () => {
    const r = cli('status', '10.89.0.300', '--socket', w.sock);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/^fibkeeper status: .*10\.89\.0\.300.*\n\nUsage: fibkeeper status /);
  });

  it('events: the XDP attach as `ip link` shows it, and `xdp detach` as xdp.detached', async () => {
    const [link] = ipJson<{ xdp?: { prog?: { id: number } } }[]>(w.ns, 'link', 'show', w.dev);
    const read = () =>
      cli('events', '--type', 'xdp', '-o', 'json', '--socket', w.sock)
        .out.split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(read()).toContainEqual(
      expect.objectContaining({ type: 'xdp.attached', device: w.dev, progId: link!.xdp!.prog!.id }),
    );
    expect(cli('xdp', 'detach', '--socket', w.sock).code).toBe(0);
    const [after] = ipJson<{ xdp?: unknown }[]>(w.ns, 'link', 'show', w.dev);
    expect(after!.xdp).toBeUndefined();
    const detached = read().filter((e) => e.type === 'xdp.detached');
    expect(detached).toEqual([
      expect.objectContaining({
        device: w.dev,
        summary: `${w.dev}: program detached (fibkeeper xdp detach)`,
      }),
    ]);
  });
});
