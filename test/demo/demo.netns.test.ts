// The README's first command runs the demo: it must work, and say what the kernel shows.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { privileged } from '../helpers/netns.js';

const { skip } = privileged();

describe.skipIf(skip)('fibkeeper demo', () => {
  it('forwards in XDP, repairs a deleted entry, announces the external IP, and cleans up', () => {
    const r = spawnSync('node', ['bin/fibkeeper.js', 'demo'], {
      encoding: 'utf8',
      timeout: 150_000,
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
    // The cluster act (etcd is installed where this runs): the holder killed, another node
    // announced the IP, the client's entry followed, the killed node never answered after the
    // new holder, and its holder went with its process.
    expect(out).toContain('[6/6] cluster mode:');
    const killed = /SIGKILL to the agent of (n\d)/.exec(out)?.[1];
    const took = /(n\d) took the IP over: its gratuitous ARP \d+ ms after the kill/.exec(out)?.[1];
    expect(killed, out).toBeDefined();
    expect(took, out).toBeDefined();
    expect(took).not.toBe(killed);
    expect(out).toMatch(
      new RegExp(
        `the client's neighbor entry now points to \\S+ \\(${took}\\); the client went \\d+ ms without a reply \\(pings every 20 ms\\), and no echo replies came from ${killed} after ${took}'s first`,
      ),
    );
    expect(out).toContain(`${killed}'s cluster holder went with its process`);
    // This demo's lab namespaces are gone (another demo may run beside it).
    const prefix = /lab "(fkd[0-9a-f]+)"/.exec(out)?.[1];
    expect(prefix, out).toBeDefined();
    const after = spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' }).stdout;
    expect(after.split('\n').filter((l) => l.startsWith(`${prefix}-`))).toEqual([]);
    expect(after.split('\n').filter((l) => l.startsWith(`${prefix}c-`))).toEqual([]);
  }, 180_000);

  it('cleans up everything on Ctrl-C in the middle of the cluster act', async () => {
    const child = spawn('node', ['bin/fibkeeper.js', 'demo'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    const deadline = Date.now() + 80_000;
    // Both labs, three cluster agents and an etcd exist at this point.
    while (!out.includes('SIGKILL to the agent of') && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    const prefix = /lab "(fkd[0-9a-f]+)"/.exec(out)?.[1];
    expect(prefix, out).toBeDefined();
    const etcdPort = Number(/etcd \(single member, 127\.0\.0\.1:(\d+)\)/.exec(out)?.[1]);
    expect(etcdPort, out).toBeGreaterThan(0);
    child.kill('SIGINT');
    expect(await exited).toBe(130);
    expect(out).toContain('interrupted: cleaning up');
    expect(out).toContain('cleanup: agent stopped, XDP detached, namespaces removed');
    for (const role of ['client', 'router', 'server1', 'gw', 'server2']) {
      expect(existsSync(`/run/netns/${prefix}-${role}`), role).toBe(false);
    }
    for (const role of ['n1', 'n2', 'n3', 'client', 'br']) {
      expect(existsSync(`/run/netns/${prefix}c-${role}`), role).toBe(false);
    }
    expect(existsSync(`/tmp/fibkeeper-demo-${prefix}`)).toBe(false);
    // its etcd is gone: nothing listens on its port any more
    const refused = await new Promise<boolean>((resolve) => {
      const s = connect(etcdPort, '127.0.0.1');
      s.once('connect', () => (s.destroy(), resolve(false)));
      s.once('error', () => resolve(true));
    });
    expect(refused).toBe(true);
  }, 120_000);
});
