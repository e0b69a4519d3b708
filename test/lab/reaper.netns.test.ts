// The reaper (src/lab/reaper.ts) sweeps what a lab's process made when that process dies
// without its own cleanup: a process that spawned an agent-like child outside any namespace
// (as `fibkeeper run --netns` is: `ip netns pids` never finds it) and a namespace with a
// process inside, a temp dir, and the scratch namespace a probe of that child would leave, then is SIGKILLed together with its whole process group. Afterwards the
// child is gone (ended by its PID), the namespace is deleted, and the reaper has exited.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { privileged, waitFor } from '../helpers/netns.js';

const { skip } = privileged();
const LAB = new URL('../../dist/lab/index.js', import.meta.url).href;

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Runs `body` in a node process of its own (a new process group); returns it and its JSON line. */
async function owner(body: string) {
  const script = [
    `const { Reaper } = await import(${JSON.stringify(LAB)});`,
    "const { spawn, execFileSync } = await import('node:child_process');",
    'const reaper = Reaper.start();',
    body,
    'setInterval(() => {}, 1000);',
  ].join('\n');
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    detached: true,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  const line = await waitFor(() => (out.includes('\n') ? out.split('\n')[0] : undefined), {
    timeoutMs: 10_000,
    what: 'the owner to start',
  });
  const exited = new Promise((r) => child.once('exit', r));
  return { child, info: JSON.parse(line) as Record<string, number>, exited };
}

describe.skipIf(skip)('Reaper', () => {
  it('ends the processes and deletes the namespaces of an owner killed with its process group', async () => {
    const ns = `fkt-reap-${process.pid}`;
    const dir = mkdtempSync(join(tmpdir(), 'fkt-reap-'));
    writeFileSync(join(dir, 'state.json'), '{}');
    const { child, info, exited } = await owner(
      [
        `const ns = ${JSON.stringify(ns)};`,
        'reaper.netns(ns);',
        `reaper.dir(${JSON.stringify(dir)});`,
        "execFileSync('ip', ['netns', 'add', ns]);",
        // a child in a session of its own (it would outlive a kill of our group)
        "const agent = reaper.agent(spawn('sleep', ['300'], { detached: true, stdio: 'ignore' }));",
        // the scratch namespace an agent killed in the middle of a probe leaves
        "execFileSync('ip', ['netns', 'add', `fkprobe-${agent.pid}-a1b2c3`]);",
        // a process inside the namespace, also in a session of its own
        "const inside = spawn('ip', ['netns', 'exec', ns, 'sleep', '300'], { detached: true, stdio: 'ignore' });",
        "process.stdout.write(JSON.stringify({ agent: agent.pid, inside: inside.pid, reaper: reaper.pid }) + '\\n');",
      ].join('\n'),
    );
    try {
      await waitFor(() => alive(info.inside!) && existsSync(`/run/netns/${ns}`), {
        what: 'the namespace and its process',
      });
      expect(alive(info.agent!)).toBe(true);
      process.kill(-child.pid!, 'SIGKILL'); // the owner and its whole process group
      await exited;
      await waitFor(() => !alive(info.agent!), { what: 'the agent-like child to be ended' });
      await waitFor(() => !existsSync(`/run/netns/${ns}`), { what: 'the namespace to go' });
      await waitFor(() => !alive(info.inside!), { what: 'the process inside to be ended' });
      await waitFor(() => !alive(info.reaper!), { what: 'the reaper to exit' });
      expect(existsSync(`/run/netns/fkprobe-${info.agent}-a1b2c3`)).toBe(false);
      expect(existsSync(dir)).toBe(false); // its temp dir too
    } finally {
      for (const pid of [info.agent, info.inside, info.reaper]) {
        if (pid && alive(pid)) process.kill(pid, 'SIGKILL');
      }
      rmSync(dir, { recursive: true, force: true });
      for (const n of [ns, `fkprobe-${info.agent}-a1b2c3`]) {
        if (existsSync(`/run/netns/${n}`)) spawn('ip', ['netns', 'del', n]);
      }
    }
  });

  it('spares a process that exited and a PID it did not start; exits when its owner does', async () => {
    const { child, info, exited } = await owner(
      [
        "const gone = reaper.child(spawn('true', [], { stdio: 'ignore' }));",
        "await new Promise((r) => gone.once('exit', r));",
        'reaper.netns("fkt-reap-never-made");',
        "process.stdout.write(JSON.stringify({ reaper: reaper.pid }) + '\\n');",
      ].join('\n'),
    );
    // A process of ours that the owner never registered.
    const bystander = spawn('sleep', ['300'], { stdio: 'ignore' });
    try {
      process.kill(child.pid!, 'SIGTERM');
      await exited;
      await waitFor(() => !alive(info.reaper!), { what: 'the reaper to exit' });
      expect(alive(bystander.pid!)).toBe(true);
    } finally {
      bystander.kill('SIGKILL');
    }
  });
});
