// Routes are read once on the whole agent (`fibkeeper run` with XDP, neighbors and external
// IPs on): one netlink socket of the agent listens to route events, and both parts that need
// routes still follow them — the neighbor subsystem writes the entry of a forwardable IP's new
// gateway after a route change, and XDP is attached and forwarding-ready throughout.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isBpffs, unmount } from '../../src/native/index.js';
import { ip, nsExec, privileged, waitFor } from '../helpers/netns.js';
import {
  baseConfig,
  call,
  makeWorld,
  ownedNeighbors,
  startAgent,
  stopAgent,
  writeConfig,
  type AgentProc,
  type AgentWorld,
} from './harness.js';

const { skip } = privileged();

const NETLINK_ROUTE = 0;
/** /proc/net/netlink "Groups" bits (the first 32 groups): RTNLGRP_IPV4_ROUTE, _IPV6_ROUTE. */
const RTMGRP_IPV4_ROUTE = 1 << 6;
const RTMGRP_IPV6_ROUTE = 1 << 10;

/** The rtnetlink sockets of `pid` in `ns` that listen to IPv4 or IPv6 route events. */
function routeListeners(ns: string, pid: number): number {
  const rows = nsExec(ns, 'cat', '/proc/net/netlink').trim().split('\n').slice(1);
  // a socket's inode, to tell the agent's sockets from those of anyone else in the namespace
  const inodes = new Set<string>();
  const fds = nsExec(ns, 'ls', '-l', `/proc/${pid}/fd`);
  for (const m of fds.matchAll(/socket:\[(\d+)\]/g)) inodes.add(m[1] as string);
  let n = 0;
  for (const row of rows) {
    // sk Eth Pid Groups Rmem Wmem Dump Locks Drops Inode
    const f = row.trim().split(/\s+/);
    if (Number(f[1]) !== NETLINK_ROUTE || !inodes.has(f[9] as string)) continue;
    const groups = parseInt(f[3] as string, 16);
    if (groups & (RTMGRP_IPV4_ROUTE | RTMGRP_IPV6_ROUTE)) n++;
  }
  return n;
}

describe.skipIf(skip)('the whole agent reads routes once', () => {
  let w: AgentWorld;
  let a: AgentProc | undefined;

  beforeAll(() => {
    w = makeWorld('rts');
    ip(w.ns, 'route', 'add', '10.90.0.0/24', 'via', '10.88.0.2');
  });
  afterAll(async () => {
    if (a) await stopAgent(a);
    const bpf = join(w.dir, 'bpf');
    if (existsSync(bpf) && isBpffs(bpf)) unmount(bpf, { lazy: true });
  });

  it('one route listener for XDP and neighbors; a route change moves the neighbor entry to the new gateway', async () => {
    writeConfig(w, baseConfig(w, { xdp: true, forwardableStatic: ['10.90.0.5'] }));
    a = await startAgent(w);
    await waitFor(() => ownedNeighbors(w.ns, w.dev).includes('10.88.0.2'), {
      what: 'the entry of the gateway of 10.90.0.5',
    });
    expect(routeListeners(w.ns, a.pid)).toBe(1);
    ip(w.ns, 'route', 'replace', '10.90.0.0/24', 'via', '10.88.0.3');
    await waitFor(() => ownedNeighbors(w.ns, w.dev).includes('10.88.0.3'), {
      what: () => `the entry of the new gateway: ${ownedNeighbors(w.ns, w.dev).join(',')}`,
    });
    // XDP still attached (its route facts come from the same listener)
    const st = await call(w.sock, 'GET', '/v1/status');
    const devices = (st.body.xdp as { devices: { name: string; attached: string }[] }).devices;
    expect(devices.find((d) => d.name === w.dev)?.attached).toBe('ours');
    expect(routeListeners(w.ns, a.pid)).toBe(1);
  }, 60_000);
});
