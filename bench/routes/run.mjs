#!/usr/bin/env node
// Route churn on the whole agent: what a routing daemon's updates cost `fibkeeper run`
// (XDP, neighbors, external IPs, API and state file on) when the namespace holds N routes.
//   1. N routes (/24s via a gateway on the bench device) are loaded with `ip -batch`, then the
//      agent starts and 1,000 forwardable IPs go through the API;
//   2. each round replaces C of the routes (the other gateway) with one `ip -batch`, and the
//      agent's CPU time (utime + stime of /proc/PID/stat) is read from before the batch until
//      it is quiet again (less than 30 ms of CPU in a second), and so is the wall time;
//   3. the reference, same run: the CPU time `ip -batch` itself took for the same changes
//      (the kernel does the route work inside its sendmsg calls).
// The agent's idle CPU (its timers) is measured before the rounds, once the agent is done
// starting, and subtracted.
//
// Usage: node bench/routes/run.mjs [--routes 100000] [--churn 10000] [--rounds 5] [--out FILE]
// Writes FILE (default bench/results/route-churn.json; --out '' for none). Needs root and
// `make build`.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { flagValue } from '../args.mjs';
import { BASE, DEV, ip, ipOf, r2, root, setup, sleep, sysctl } from '../neighbor/lab.mjs';
import { call, startAgent } from '../neighbor/whole.mjs';

const argv = process.argv.slice(2);
const opts = {
  routes: Number(flagValue(argv, '--routes', '100000')),
  churn: Number(flagValue(argv, '--churn', '10000')),
  rounds: Number(flagValue(argv, '--rounds', '5')),
  out: flagValue(argv, '--out', join(root, 'bench', 'results', 'route-churn.json')),
};
const TICK_MS = 1000 / 100; // USER_HZ

/** utime + stime of a process, ms. */
function cpuMs(pid) {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const rest = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return (Number(rest[11]) + Number(rest[12])) * TICK_MS;
}

/** cutime + cstime of this process: the CPU of the children it waited for, ms. */
const childCpuMs = () => {
  const f = readFileSync('/proc/self/stat', 'utf8');
  const rest = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return (Number(rest[13]) + Number(rest[14])) * TICK_MS;
};

/** The /24 of route i: 20.0.0.0/24, 20.0.1.0/24, ... */
const prefixOf = (i) => `${ipOf(0x14000000 + i * 256)}/24`;

function batch(r, dir, lines) {
  const file = join(dir, `batch-${randomBytes(3).toString('hex')}`);
  writeFileSync(file, lines.join('\n') + '\n');
  const c0 = childCpuMs();
  const t0 = performance.now();
  ip(r, '-batch', file);
  const wall = performance.now() - t0;
  rmSync(file);
  return { cpuMs: childCpuMs() - c0, wallMs: wall };
}

/** Waits until the agent used less than `idlePerSec` + 30 ms of CPU in a second. */
async function quiet(pid, idlePerSec, t0, c0) {
  let last = cpuMs(pid);
  for (let i = 0; i < 600; i++) {
    await sleep(1000);
    const now = cpuMs(pid);
    if (now - last < idlePerSec + 30) {
      // the quiet second is not part of the work
      return { cpuMs: last - c0, wallMs: performance.now() - 1000 - t0 };
    }
    last = now;
  }
  throw new Error('the agent never went quiet');
}

async function main() {
  if (process.getuid?.() !== 0) throw new Error('needs root (network namespaces)');
  const tag = randomBytes(3).toString('hex');
  const r = `fkrc-r-${tag}`;
  const p = `fkrc-p-${tag}`;
  const dir = mkdtempSync(join(tmpdir(), 'fkrc-'));
  let agent;
  try {
    setup(r, p);
    sysctl(r, 'net.ipv4.ip_forward=1', 'net.ipv6.conf.all.forwarding=1');
    const gw = ['10.128.0.1', '10.128.0.2'];
    const load = batch(
      r,
      dir,
      Array.from({ length: opts.routes }, (_, i) => `route add ${prefixOf(i)} via ${gw[0]}`),
    );
    console.log(`${opts.routes} routes loaded in ${r2(load.wallMs)} ms`);
    agent = await startAgent(dir, r, 'auto');
    const ips = Array.from({ length: 1000 }, (_, i) => ipOf(BASE + i));
    await call(
      agent.sock,
      'PUT',
      '/v1/owners/bench/forwardable',
      ips.join('\n') + '\n',
      'text/plain',
    );
    // the agent's idle CPU per second (its timers), measured over 5 s once it is done
    // starting (a second with less than 30 ms of CPU)
    for (let i = 0, c = cpuMs(agent.pid); i < 60; i++) {
      await sleep(1000);
      const now = cpuMs(agent.pid);
      if (now - c < 30) break;
      c = now;
    }
    const i0 = cpuMs(agent.pid);
    await sleep(5000);
    const idlePerSec = (cpuMs(agent.pid) - i0) / 5;
    console.log(`idle: ${r2(idlePerSec)} ms CPU per second`);
    const rounds = [];
    for (let k = 0; k < opts.rounds; k++) {
      const via = gw[(k + 1) % 2];
      const lines = Array.from(
        { length: opts.churn },
        (_, i) => `route replace ${prefixOf(i)} via ${via}`,
      );
      const c0 = cpuMs(agent.pid);
      const t0 = performance.now();
      const ref = batch(r, dir, lines);
      const got = await quiet(agent.pid, idlePerSec, t0, c0);
      const agentCpu = Math.max(0, got.cpuMs - (idlePerSec * got.wallMs) / 1000);
      rounds.push({ agentCpuMs: r2(agentCpu), wallMs: r2(got.wallMs), ipCpuMs: r2(ref.cpuMs) });
      console.log(
        `round ${k + 1}: ${opts.churn} route replaces: agent ${r2(agentCpu)} ms CPU over ${r2(got.wallMs)} ms; ip -batch ${r2(ref.cpuMs)} ms CPU`,
      );
    }
    const sum = (f) => rounds.reduce((a, x) => a + f(x), 0);
    const agentPer = sum((x) => x.agentCpuMs) / rounds.length;
    const ipPer = sum((x) => x.ipCpuMs) / rounds.length;
    const st = await agent.status();
    const result = {
      benchmark: 'route-churn',
      kernel: spawnSync('uname', ['-r'], { encoding: 'utf8' }).stdout.trim(),
      date: new Date().toISOString(),
      command: `node bench/routes/run.mjs ${argv.join(' ')}`.trim(),
      routes: opts.routes,
      churn: opts.churn,
      rounds,
      xdpPasses: st.xdp?.passes,
      figures: [
        {
          name: `route_churn_cpu_${opts.routes}`,
          value: r2(agentPer),
          unit: 'ms',
          reference: r2(ipPer),
          referenceName: `ip -batch's own CPU for the same ${opts.churn} route replaces, same run (mean of ${rounds.length} rounds)`,
          ratio: r2(agentPer / ipPer),
          target: null,
          targetKind: '<=',
          targetOf: 'ratio',
          targetMeaning: null,
          pass: null,
          note: `the agent's CPU (idle subtracted) to follow ${opts.churn} route replaces among ${opts.routes} routes`,
        },
      ],
    };
    console.log(JSON.stringify(result.figures[0]));
    if (opts.out) {
      mkdirSync(join(opts.out, '..'), { recursive: true });
      writeFileSync(opts.out, JSON.stringify(result, null, 1) + '\n');
    }
  } finally {
    await agent?.stop().catch(() => undefined);
    for (const ns of [r, p]) spawnSync('ip', ['netns', 'del', ns]);
    spawnSync('umount', [join(dir, 'bpf')]);
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(`route churn: ${err.stack ?? err}`);
  process.exitCode = 1;
});
void DEV;
