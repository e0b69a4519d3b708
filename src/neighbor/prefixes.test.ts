import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { groupLength, NO_GROUP4, PrefixIndex } from './prefixes.js';

describe('PrefixIndex', () => {
  it('groups IPv4 addresses from 128.0.0.0 on like the others (keys of signed networks)', () => {
    const p = new PrefixIndex();
    for (const d of ['128.0.0.0/1', '192.168.0.0/16', '255.255.255.255/32', '10.0.0.0/8']) p.add(d);
    expect(p.groupOf('255.255.255.255')).toBe(p.keyOf('255.255.255.255/32'));
    expect(p.groupOf('192.168.7.9')).toBe(p.keyOf('192.168.0.0/16'));
    expect(p.groupOf('200.1.2.3')).toBe(p.keyOf('128.0.0.0/1'));
    expect(p.groupOf('10.9.9.9')).toBe(p.keyOf('10.0.0.0/8'));
    expect(p.groupOf('11.0.0.1')).toBe(NO_GROUP4);
    expect(p.keyOf('192.168.0.0/16')).toBe(16 * 2 ** 32 + 0xc0a80000);
    expect(groupLength(p.groupOf('192.168.7.9'))).toBe(16);
    expect(groupLength(p.groupOf('255.255.255.255'))).toBe(32);
    p.remove('192.168.0.0/16');
    expect(p.groupOf('192.168.7.9')).toBe(p.keyOf('128.0.0.0/1'));
    p.add('0.0.0.0/0');
    expect(p.groupOf('11.0.0.1')).toBe(p.keyOf('0.0.0.0/0'));
    expect(p.size).toBe(4);
  });

  it('allocates nothing per lookup under the agent’s --max-opt=2 (a full resync does one per IP)', () => {
    const scavenges = (lookup: string): number => {
      const script = [
        "const { PrefixIndex } = await import('./dist/neighbor/prefixes.js');",
        'const p = new PrefixIndex();',
        "for (const d of ['0.0.0.0/0', '10.0.0.0/8', '198.18.0.0/15', '198.19.0.0/16']) p.add(d);",
        'const ips = Array.from({ length: 1000 }, (_, i) => `198.19.${i >> 8}.${i & 255}`);',
        'let s = 0;',
        `for (let i = 0; i < 2e6; i++) { const ip = ips[i % 1000]; if (${lookup} === 1) s++; }`,
        'if (s === 0.5) console.log(s);',
      ].join('\n');
      const r = spawnSync(
        process.execPath,
        ['--max-opt=2', '--trace-gc', '--input-type=module', '-e', script],
        { encoding: 'utf8', cwd: process.cwd() },
      );
      expect(r.status, r.stderr).toBe(0);
      return r.stdout.split('\n').filter((l) => l.includes('Scavenge')).length;
    };
    // The same loop without the lookup is the reference (the script's own allocations).
    const base = scavenges('ip.length');
    expect(scavenges('p.groupOf(ip)') - base).toBeLessThanOrEqual(3);
  });
});
