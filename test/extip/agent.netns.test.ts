// Duplicate address detection as a user meets it, through the built CLI: the agent starts
// although a static external IP is held by another host (failed, with that host's MAC, in
// the list and in /healthz), `extip add` of another held address fails with the conflict
// named, and a free one is assigned.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { ip, privileged, waitFor } from '../helpers/netns.js';
import { PEER_MAC, holderAddrs, makeLab } from './lab.js';
import { freePort } from '../helpers/ports.js';

const { skip } = privileged();
const BIN = 'bin/fibkeeper.js';

describe.skipIf(skip)('the agent with duplicate address detection', () => {
  it('starts although a static IP is held elsewhere; extip add names the conflict', async () => {
    const lab = await makeLab('xag');
    ip(lab.peer, 'addr', 'add', '10.20.0.230/24', 'dev', 'peer0');
    ip(lab.peer, 'addr', 'add', '2001:db8:20::231/64', 'dev', 'peer0', 'nodad');
    const dir = mkdtempSync(join(tmpdir(), 'fkt-extip-agent-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const port = await freePort();
    const sock = join(dir, 'api.sock');
    const config = join(dir, 'config.yaml');
    writeFileSync(
      config,
      [
        `netns: ${lab.node}`,
        `stateFile: ${join(dir, 'state.json')}`,
        'xdp:\n  enabled: false',
        'neighbor:\n  enabled: false',
        'extip:',
        '  enabled: true',
        '  holderName: fkx0',
        '  holderKind: bridge',
        '  interface: ext0',
        '  dadInterval: 50ms',
        '  dadWait: 200ms',
        '  static: ["10.20.0.230", "10.20.0.232"]',
        `api:\n  socket: ${sock}`,
        `metrics:\n  address: 127.0.0.1:${port}`,
      ].join('\n') + '\n',
    );
    const logFile = join(dir, 'agent.log');
    const agent: ChildProcess = spawn('node', [BIN, 'run', '--config', config], {
      stdio: ['ignore', openSync(logFile, 'a'), openSync(logFile, 'a')],
    });
    onTestFinished(() => {
      if (agent.exitCode === null) agent.kill('SIGTERM');
    });
    await waitFor(
      async () => {
        if (agent.exitCode !== null) {
          throw new Error(`agent exited: ${readFileSync(logFile, 'utf8').slice(-800)}`);
        }
        return (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.ok;
      },
      { timeoutMs: 20_000, what: 'agent ready' },
    );
    const cli = (...args: string[]) =>
      spawnSync('node', [BIN, ...args, '--socket', sock], { encoding: 'utf8', timeout: 30_000 });
    // the held static IP is failed, with the peer's MAC; the free one assigned
    const list = () =>
      JSON.parse(cli('extip', 'list', '--json').stdout) as {
        ip: string;
        state: string;
        conflict: { mac: string; what: string } | null;
      }[];
    expect(list()).toEqual([
      expect.objectContaining({
        ip: '10.20.0.230',
        state: 'failed',
        conflict: { mac: PEER_MAC, what: 'ARP reply' },
      }),
      expect.objectContaining({ ip: '10.20.0.232', state: 'assigned', conflict: null }),
    ]);
    expect(holderAddrs(lab.node)).toEqual(['10.20.0.232/32']);
    const health = await fetch(`http://127.0.0.1:${port}/healthz`);
    expect(health.status).toBe(503);
    expect(await health.text()).toMatch(/1 external IP\(s\) failed/);
    // extip add of an address the peer holds: refused, the conflict named
    const r = cli('extip', 'add', '2001:db8:20::231');
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/2001:db8:20::231: duplicate address/);
    expect(r.stderr).toContain(PEER_MAC);
    // the API's answer: 409 with the conflict's code
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request(
        {
          socketPath: sock,
          path: '/v1/extip',
          method: 'POST',
          headers: { 'content-type': 'application/json' },
        },
        (res) => {
          let body = '';
          res.on('data', (d: Buffer) => (body += d.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on('error', reject);
      req.end(JSON.stringify({ ips: ['2001:db8:20::231'] }));
    });
    expect(answer.status).toBe(409);
    expect(JSON.parse(answer.body)).toMatchObject({ error: { code: 'FIBKEEPER_ERR_CONFLICT' } });
    expect(list().find((e) => e.ip === '2001:db8:20::231')).toMatchObject({
      state: 'failed',
      conflict: { mac: PEER_MAC, what: 'neighbor advertisement' },
    });
    // a free one: assigned
    const ok = cli('extip', 'add', '10.20.0.233');
    expect(ok.status, ok.stderr).toBe(0);
    expect(holderAddrs(lab.node)).toEqual(['10.20.0.232/32', '10.20.0.233/32']);
    const exited = new Promise((res) => agent.once('exit', res));
    agent.kill('SIGTERM');
    await exited;
  });
});
