// The README's first command runs the demo: it must work, and say what the kernel shows.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { privileged } from '../helpers/netns.js';

const { skip } = privileged();

describe.skipIf(skip)('fibkeeper demo', () => {
  it('forwards in XDP, repairs a deleted entry, announces the external IP, and cleans up', () => {
    const r = spawnSync('node', ['bin/fibkeeper.js', 'demo'], {
      encoding: 'utf8',
      timeout: 90_000,
    });
    const out = r.stdout;
    expect(out, r.stderr).toContain('cleanup: agent stopped, XDP detached, namespaces removed');
    expect(r.status, out).toBe(0);
    expect(out).toMatch(/UDP 500\/500 to server1, 500\/500 to server2 \(via gw\), ping 20\/20/);
    expect(out).toMatch(/XDP fib_lookup results: success \+\d+/);
    expect(out).toContain(
      'kernel stack forwarded (IpForwDatagrams): +0 -> every packet was forwarded by XDP',
    );
    expect(out).toMatch(/back in the kernel after [\d.]+ ms/);
    expect(out).toMatch(/then UDP 500\/500: SUCCESS \+500, NO_NEIGH \+0/);
    expect(out).toMatch(/10\.77\.2\.2 dev r-server1 lladdr \S+ managed extern_learn \S+ proto 241/);
    expect(out).toMatch(/GARP request 10\.77\.1\.100 is-at/);
    expect(out).toMatch(/GARP reply +10\.77\.1\.100 is-at/);
    expect(out).toMatch(
      /unsolicited NA fd77:1::100 is-at \S+ \(override on, hop limit 255, checksum ok\)/,
    );
    // This demo's lab namespaces are gone (another demo may run beside it).
    const prefix = /lab "(fkd[0-9a-f]+)"/.exec(out)?.[1];
    expect(prefix, out).toBeDefined();
    const after = spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' }).stdout;
    expect(after.split('\n').filter((l) => l.startsWith(`${prefix}-`))).toEqual([]);
  }, 120_000);

  it('cleans up everything on Ctrl-C in the middle', async () => {
    const child = spawn('node', ['bin/fibkeeper.js', 'demo'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    const deadline = Date.now() + 60_000;
    while (!out.includes('[3/5]') && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    const prefix = /lab "(fkd[0-9a-f]+)"/.exec(out)?.[1];
    expect(prefix, out).toBeDefined();
    child.kill('SIGINT');
    expect(await exited).toBe(130);
    expect(out).toContain('interrupted: cleaning up');
    expect(out).toContain('cleanup: agent stopped, XDP detached, namespaces removed');
    for (const role of ['client', 'router', 'server1', 'gw', 'server2']) {
      expect(existsSync(`/run/netns/${prefix}-${role}`), role).toBe(false);
    }
    expect(existsSync(`/tmp/fibkeeper-demo-${prefix}`)).toBe(false);
  }, 90_000);
});
