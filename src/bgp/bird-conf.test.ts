// The generated BIRD configuration, checked by BIRD itself (`bird -p`, parse only) and for
// what it must say: only the held IPs as /32 and /128, one protocol per peer, BFD timers.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { parseBgpIpAttributes, parseBgpPeer } from '../config/index.js';
import { birdConf, type BirdConfInput } from './bird-conf.js';

const hasBird = spawnSync('bird', ['--version']).status === 0;

const input = (over: Partial<BirdConfInput> = {}): BirdConfInput => ({
  asn: 65001,
  routerId: '10.0.0.2',
  peers: [
    parseBgpPeer('10.0.0.1 as 65000'),
    parseBgpPeer('fd00::1 as 65001 source fd00::2 multihop 4 bfd off port 1179'),
  ],
  passwords: new Map([['10.0.0.1', 's3cret']]),
  communities: ['65000:100'],
  largeCommunities: ['65000:1:2'],
  localPreference: 200,
  holdTimeMs: 9000,
  gracefulRestartMs: 0,
  ipAttributes: [],
  bfdIntervalMs: 100,
  bfdMultiplier: 3,
  ips: ['192.0.2.10', '2001:db8::10'],
  ...over,
});

function birdParses(conf: string): { ok: boolean; out: string } {
  const dir = mkdtempSync(join(tmpdir(), 'fk-birdconf-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'bird.conf');
  writeFileSync(file, conf);
  const r = spawnSync('bird', ['-p', '-c', file], { encoding: 'utf8' });
  return { ok: r.status === 0, out: r.stderr + r.stdout };
}

describe('birdConf', () => {
  it('routes exactly the held IPs, per family, and a protocol per peer', () => {
    const c = birdConf(input());
    expect(c).toContain('protocol static fk_ips4 {\n  ipv4;\n  route 192.0.2.10/32 blackhole;\n}');
    expect(c).toContain(
      'protocol static fk_ips6 {\n  ipv6;\n  route 2001:db8::10/128 blackhole;\n}',
    );
    expect(c).toContain('neighbor 10.0.0.1 port 179 as 65000;');
    expect(c).toContain('password "s3cret";');
    expect(c).toContain('local fd00::2 as 65001;');
    expect(c).toContain('multihop 4;');
    expect(c).toContain('bgp_community.add((65000, 100));');
    expect(c).toContain('bgp_large_community.add((65000, 1, 2));');
    expect(c).toContain('bgp_local_pref = 200;');
    expect(c).toContain('min rx interval 100 ms;');
    expect(c).toMatch(/protocol bgp fk_peer1 \{[^}]*bfd off;/);
    expect(c).not.toContain('protocol kernel'); // never touches the node's FIB
  });

  it('negotiates graceful restart with its time only when asked', () => {
    expect(birdConf(input())).not.toContain('graceful restart');
    const c = birdConf(input({ gracefulRestartMs: 30_000 }));
    expect(c).toMatch(
      /protocol bgp fk_peer0 \{[^}]*graceful restart on;\n  graceful restart time 30;/,
    );
    expect(c).toMatch(/protocol bgp fk_peer1 \{[^}]*graceful restart time 30;/);
  });

  it("adds the per-IP attributes in the export filter of the IP's family", () => {
    const c = birdConf(
      input({
        ipAttributes: [parseBgpIpAttributes('192.0.2.10 community 65000:7 local-preference 150')],
      }),
    );
    expect(c).toContain(
      '  if net = 192.0.2.10/32 then {\n    bgp_community.add((65000, 7));\n    bgp_local_pref = 150;\n  }\n  accept;',
    );
    expect(c.split('filter fk_export6')[1]).not.toContain('192.0.2.10');
  });

  it('is the same text for the same input', () => {
    expect(birdConf(input())).toBe(birdConf(input()));
  });

  it.skipIf(!hasBird)('parses in BIRD 2 (bird -p), with IPs, without any, without BFD', () => {
    for (const conf of [
      birdConf(input()),
      birdConf(input({ ips: [] })),
      birdConf(input({ peers: [parseBgpPeer('10.0.0.1 as 65000 bfd off')], routerId: '' })),
      birdConf(input({ gracefulRestartMs: 30_000 })),
      birdConf(
        input({
          ipAttributes: [
            parseBgpIpAttributes('192.0.2.10 community 65000:7 large-community 1:2:3'),
            parseBgpIpAttributes('2001:db8::10 local-preference 150'),
          ],
        }),
      ),
    ]) {
      const r = birdParses(conf);
      expect(r.ok, `${r.out}\n${conf}`).toBe(true);
    }
  });

  it.skipIf(!hasBird)(
    'bird -p refuses what the checks must catch first (a reference for them)',
    () => {
      const r = birdParses(
        birdConf(input({ communities: [] })).replace('as 65000;', 'as 70000000000;'),
      );
      expect(r.ok).toBe(false);
    },
  );
});
