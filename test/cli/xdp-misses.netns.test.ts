// `fibkeeper xdp misses` (GET /v1/xdp/misses) lists the destinations XDP passed to the kernel
// for want of a neighbor entry (NO_NEIGH). The reference is the kernel's own count of what it
// forwarded (IpForwDatagrams in the router's /proc/net/snmp, Ip6OutForwDatagrams in
// snmp6): every packet XDP could not forward, the kernel did, so the hits listed grow by
// exactly that much. The three output forms carry the same rows.
import { mkdtempSync, rmSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import type { XdpMissesDocument } from '../../src/cli/xdp.js';
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
import { makeLab, ping, snmp, V4, V6, type Lab } from '../fib/lab.js';

const { skip } = privileged();

describe.skipIf(skip)('fibkeeper xdp misses', () => {
  let lab: Lab;
  let w: AgentWorld;
  let agent: AgentProc;

  beforeAll(async () => {
    lab = makeLab('xm');
    const dir = mkdtempSync(join(tmpdir(), 'fk-xm-'));
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

  const doc = (...more: string[]): XdpMissesDocument => {
    const r = cli('xdp', 'misses', '-o', 'json', '--socket', w.sock, ...more);
    expect(r.code, r.err).toBe(0);
    return JSON.parse(r.out) as XdpMissesDocument;
  };
  const hits = (d: XdpMissesDocument, dst: string) =>
    d.misses.filter((m) => m.dst === dst).reduce((n, m) => n + m.hits, 0);

  for (const [family, addr, counter] of [
    [4, V4, 'IpForwDatagrams'],
    [6, V6, 'Ip6OutForwDatagrams'],
  ] as const) {
    it(`lists an IPv${family} destination without a neighbor entry with the count the kernel forwarded`, () => {
      const dst = addr.server;
      expect(ping(lab.client, dst, 3)).toBe(3); // XDP attached, entries resolved
      const before = hits(doc(), dst);
      const fwd = snmp(lab.router, counter);
      ip(lab.router, 'neigh', 'del', dst, 'dev', 'r2');
      expect(ping(lab.client, dst, 20)).toBe(20);
      const passed = snmp(lab.router, counter) - fwd;
      expect(passed).toBeGreaterThanOrEqual(1);

      const d = doc();
      expect(hits(d, dst) - before).toBe(passed);
      expect(d.misses).toContainEqual(expect.objectContaining({ dst, nexthop: dst, device: 'r2' }));
      // The same rows as YAML, and as a text table.
      const y = cli('xdp', 'misses', '-o', 'yaml', '--socket', w.sock);
      expect(y.code, y.err).toBe(0);
      const yd = parseYaml(y.out) as XdpMissesDocument;
      expect(yd.tracker).toBe(d.tracker);
      expect(hits(yd, dst)).toBe(hits(d, dst));
      const t = cli('xdp', 'misses', '--socket', w.sock);
      expect(t.code, t.err).toBe(0);
      const q = dst.replaceAll('.', '\\.');
      expect(t.out).toMatch(/^DESTINATION +NEXT HOP +DEVICE +HITS +LAST SEEN\n/);
      expect(t.out).toMatch(new RegExp(`\\n${q} +${q} +r2 +${hits(d, dst)} +[\\d.]+ s ago\\n`));
    });
  }

  it('takes --limit, and refuses a bad one as a usage error that sends nothing', () => {
    // After the tests above, both families' destinations are listed, most hits first.
    const all = doc().misses;
    expect(all.length).toBeGreaterThanOrEqual(2);
    for (let i = 1; i < all.length; i++) {
      expect(all[i]!.hits).toBeLessThanOrEqual(all[i - 1]!.hits);
    }
    const one = doc('--limit', '1').misses;
    expect(one.map((m) => [m.dst, m.device, m.hits])).toEqual([
      [all[0]!.dst, all[0]!.device, all[0]!.hits],
    ]);
    const bad = cli('xdp', 'misses', '--limit', '0', '--socket', w.sock);
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/--limit 0: give a whole number from 1 to 4096/);
  });
});
