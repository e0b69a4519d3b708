// `fibkeeper status IP` lists the IP's XDP misses (NO_NEIGH: XDP found no neighbor entry and
// passed the packet to the kernel). The reference is the kernel's own count of what it
// forwarded (IpForwDatagrams in the router's /proc/net/snmp): every packet XDP could not
// forward, the kernel did, so the hits that status shows grow by exactly that much.
import { mkdtempSync, rmSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IpExplanation, StatusDocument } from '../../src/agent/index.js';
import {
  cli,
  startAgent,
  stopAgent,
  writeConfig,
  type AgentProc,
  type AgentWorld,
} from '../agent/harness.js';
import { cleanupLater } from '../helpers/cleanup.js';
import { ip, privileged } from '../helpers/netns.js';
import { makeLab, ping, snmp, V4, type Lab } from '../fib/lab.js';

const { skip } = privileged();

describe.skipIf(skip)('fibkeeper status IP: XDP misses', () => {
  let lab: Lab;
  let w: AgentWorld;
  let agent: AgentProc;

  beforeAll(async () => {
    lab = makeLab('sm');
    const dir = mkdtempSync(join(tmpdir(), 'fk-sm-'));
    cleanupLater(() => rmSync(dir, { recursive: true, force: true }));
    cleanupLater(() => spawnSync('umount', [join(dir, 'bpf')]));
    w = {
      ns: lab.router,
      peer: lab.server,
      dev: 'r1',
      dir,
      sock: join(dir, 'api.sock'),
      stateFile: join(dir, 'state.json'),
      configFile: join(dir, 'config.yaml'),
    };
    writeConfig(
      w,
      [
        `netns: ${lab.router}`,
        'devices: ["r1", "r2"]',
        `stateFile: ${w.stateFile}`,
        'xdp:',
        `  pinDir: ${join(dir, 'bpf')}`,
        'extip:',
        '  enabled: false',
        'api:',
        `  socket: ${w.sock}`,
        'metrics:',
        '  address: ""',
      ].join('\n'),
    );
    agent = await startAgent(w);
  }, 60_000);
  afterAll(async () => {
    await stopAgent(agent);
  });

  const explain = (): IpExplanation => {
    const r = cli('status', V4.server, '-o', 'json', '--socket', w.sock);
    expect(r.code, r.err).toBe(0);
    return (JSON.parse(r.out) as StatusDocument).explain!;
  };
  const hits = (x: IpExplanation) =>
    x.misses.filter((m) => m.dst === V4.server).reduce((n, m) => n + m.hits, 0);

  it('counts the packets the kernel forwarded for want of a neighbor entry', () => {
    expect(ping(lab.client, V4.server, 3)).toBe(3); // XDP attached, entries resolved
    const before = hits(explain());
    const fwd = snmp(lab.router, 'IpForwDatagrams');
    ip(lab.router, 'neigh', 'del', V4.server, 'dev', 'r2');
    expect(ping(lab.client, V4.server, 20)).toBe(20);
    const passed = snmp(lab.router, 'IpForwDatagrams') - fwd;
    expect(passed).toBeGreaterThanOrEqual(1);
    const x = explain();
    expect(hits(x) - before).toBe(passed);
    expect(x.misses).toContainEqual(
      expect.objectContaining({ dst: V4.server, nexthop: V4.server, device: 'r2' }),
    );
    const text = cli('status', V4.server, '--socket', w.sock).out;
    expect(text).toMatch(
      new RegExp(
        `\\n  ${V4.server.replaceAll('.', '\\.')} +${V4.server.replaceAll('.', '\\.')} +r2 +${hits(x)} +[\\d.]+ s ago\\n`,
      ),
    );
  });
});
