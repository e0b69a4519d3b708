// The run command `fibkeeper lab up` prints, run as printed: the agent comes up in the lab's
// router with the lab's own control socket, state file, pin directory and metrics port —
// none of the defaults an agent of the node uses — and leaves no pins when it stops.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, rmSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { StatusDocument } from '../../src/agent/index.js';
import { defaultConfig } from '../../src/config/index.js';
import { labDown } from '../../src/lab/index.js';
import { BIN, call } from '../agent/harness.js';
import { cleanupLater } from '../helpers/cleanup.js';
import { privileged, waitFor } from '../helpers/netns.js';

const { skip } = privileged();

describe.skipIf(skip)('fibkeeper lab up', () => {
  it('prints a run command that works as written and uses none of the default paths', async () => {
    const prefix = `fl${randomBytes(3).toString('hex')}`;
    cleanupLater(() => {
      labDown(prefix);
      rmSync(`/run/fibkeeper/${prefix}`, { recursive: true, force: true });
      rmSync(`/run/fibkeeper/${prefix}.sock`, { force: true });
      if (existsSync(`/sys/fs/bpf/fibkeeper-${prefix}`)) {
        spawnSync('node', [BIN, 'xdp', 'detach', '--pin-dir', `/sys/fs/bpf/fibkeeper-${prefix}`]);
        rmSync(`/sys/fs/bpf/fibkeeper-${prefix}`, { recursive: true, force: true });
      }
    });
    const up = spawnSync('node', [BIN, 'lab', 'up', '--prefix', prefix], { encoding: 'utf8' });
    expect(up.status, up.stderr).toBe(0);
    const line = up.stdout.split('\n').find((l) => l.startsWith('  fibkeeper run '));
    expect(line, up.stdout).toBeDefined();
    const argv = line!.trim().split(/\s+/).slice(1); // as a shell splits it: no quotes in it
    const opt = (name: string) => {
      expect(argv, `${name} in the printed command`).toContain(name);
      return argv[argv.indexOf(name) + 1]!;
    };
    const d = defaultConfig();
    expect(opt('--api-socket')).not.toBe(d.api.socket);
    expect(opt('--state-file')).not.toBe(d.stateFile);
    expect(opt('--xdp-pin-dir')).not.toBe(d.xdp.pinDir);
    expect(opt('--metrics-address')).not.toBe(d.metrics.address);

    const agent = spawn('node', [BIN, ...argv], { stdio: ['ignore', 'pipe', 'pipe'] });
    let log = '';
    agent.stdout.setEncoding('utf8').on('data', (c: string) => (log += c));
    agent.stderr.setEncoding('utf8').on('data', (c: string) => (log += c));
    const exited = new Promise((r) => agent.once('exit', r));
    try {
      const sock = opt('--api-socket');
      const doc = await waitFor(
        async () => {
          const r = await call(sock, 'GET', '/v1/status', undefined, { timeoutMs: 5000 });
          return r.body.ready === true ? (r.body as unknown as StatusDocument) : undefined;
        },
        { timeoutMs: 30_000, what: () => `the lab agent ready; log: ${log.slice(-1500)}` },
      );
      expect(doc.stateFile.path).toBe(opt('--state-file'));
      expect(doc.xdp!.devices.filter((x) => x.attached === 'ours').length).toBeGreaterThan(0);
      expect(existsSync(opt('--xdp-pin-dir'))).toBe(true);
      const metrics = await (await fetch(`http://${opt('--metrics-address')}/metrics`)).text();
      expect(metrics).toMatch(/^fibkeeper_agent_ready 1$/m);
    } finally {
      agent.kill('SIGTERM');
      await exited;
    }
    // Throwaway: nothing of it stays pinned.
    expect(spawnSync('ls', [opt('--xdp-pin-dir')], { encoding: 'utf8' }).stdout.trim()).toBe('');
  }, 90_000);
});
