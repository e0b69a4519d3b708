#!/usr/bin/env node
// The whole agent, as a user runs it: `fibkeeper run` (bin/fibkeeper.js, its own V8 flags)
// managing the bench namespace with every node subsystem on — the control API, the state
// file, XDP on the bench device, external IPs, metrics, the miss tracker — and the
// forwardable IPs sent through the control API. For each size and refresh mode, in one run:
//   1. `ip -batch` writes the N entries the agent will write (the same flags: extern_learn
//      managed, or extern_learn use on the legacy path; proto 241), timed, then cleared: the
//      reference of the convergence;
//   2. the agent starts (state file empty); the N IPs go through the API in one streamed
//      request (text/plain, one IP a line: the bulk form), and the time runs from the call
//      to the last of the N entries seen in the kernel (the driver counts the new marked
//      entries from neighbor events; a final dump checks the count);
//   3. with N loaded: route change → the new gateway's entry (p50/p99), while another
//      owner's IP is added and removed through the API every 200 ms (each a state-file save
//      of the whole table);
//   4. (--fresh-seconds S, default 60 at up to 100,000) the usable share of the N entries
//      with the kernel's default reachable time (30 s), sampled every 5 s;
//   5. the agent's peak RSS (VmHWM of /proc/PID/status: the whole run, load included) and
//      its state file's size and last save time (from its metrics).
// Every entry is extern_learn, so none counts against gc_thresh3.
//
// Usage: node bench/neighbor/whole.mjs [--sizes 100000,1000000] [--modes auto,managed,legacy]
//          [--iterations 300] [--fresh-seconds S] [--api stream|json] [--out FILE]
// Writes FILE (default bench/results/neighbor-whole.json; --out '' for none). Needs root and
// `make build`.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  BASE,
  DEV,
  GW_BASE,
  PROTO,
  clear,
  ip,
  ipOf,
  latencyProbe,
  pct,
  r2,
  root,
  setup,
  sleep,
  sysctl,
} from './lab.mjs';
import { flagValue } from '../args.mjs';
import { report } from './whole-report.mjs';

function args() {
  const a = process.argv.slice(2);
  const get = (name, def) => flagValue(a, name, def);
  return {
    sizes: get('--sizes', '100000,1000000').split(',').map(Number),
    modes: get('--modes', 'auto,managed,legacy').split(','),
    iterations: Number(get('--iterations', '300')),
    freshSeconds: get('--fresh-seconds', undefined),
    api: get('--api', 'stream'),
    saver: get('--saver', 'on') !== 'off',
    // --xdp off: the agent without XDP (experiments: what the forwarder costs the rest).
    xdp: get('--xdp', 'on') !== 'off',
    out: get('--out', join(root, 'bench', 'results', 'neighbor-whole.json')),
  };
}

const statusOf = (pid) => readFileSync(`/proc/${pid}/status`, 'utf8');
/** A process's start in clock ticks since boot (USER_HZ, 100 a second on Linux). */
function startTicks(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
}
/**
 * When the process started (ms since the epoch; to ~100 ms: the agent re-executes itself
 * with its flags, same PID): about the origin of its --trace-gc times, to line them up with
 * the slow samples. Measured against this process's own start, whose epoch time we know.
 */
const startedAt = (pid) =>
  Math.round(performance.timeOrigin + (startTicks(pid) - startTicks(process.pid)) * 10);
const kib = (text, key) => Number(new RegExp(`${key}:\\s+(\\d+) kB`).exec(text)?.[1] ?? NaN);
const mib = (k) => r2(k / 1024);

/** One request over the agent's socket; `body` a string (with its type) or a JSON value. */
export function call(sock, method, path, body, type = 'application/json') {
  const payload =
    body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        socketPath: sock,
        agent: false,
        method,
        path,
        timeout: 600_000,
        headers: payload
          ? { 'content-type': type, 'content-length': String(Buffer.byteLength(payload)) }
          : {},
      },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed;
          try {
            parsed = JSON.parse(text);
          } catch {
            parsed = { raw: text };
          }
          if ((res.statusCode ?? 500) >= 400) {
            reject(new Error(`${method} ${path}: ${res.statusCode} ${text.slice(0, 500)}`));
          } else resolve(parsed);
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no answer`)));
    req.on('error', reject);
    req.end(payload);
  });
}

/** The config of the agent under test: every node subsystem on. */
function configOf(dir, r, mode, xdp = true, neighbor = []) {
  return [
    `netns: ${r}`,
    `devices: ["${DEV}"]`,
    `stateFile: ${join(dir, 'state', 'state.json')}`,
    'xdp:',
    `  enabled: ${xdp}`,
    `  pinDir: ${join(dir, 'bpf')}`,
    '  missTracker:',
    `    enabled: ${xdp}`,
    'neighbor:',
    `  refresh: ${mode}`,
    ...neighbor.map((l) => `  ${l}`),
    'extip:',
    '  enabled: true',
    '  holderKind: bridge',
    `  interface: ${DEV}`,
    '  announceCount: 1',
    'api:',
    `  socket: ${join(dir, 'api.sock')}`,
    '  requestTimeout: 10m',
    'metrics:',
    '  address: "127.0.0.1:0"',
    'log:',
    '  level: warn',
  ].join('\n');
}

export async function startAgent(
  dir,
  r,
  mode,
  { nodeOptions = '', xdp = true, neighbor = [] } = {},
) {
  const cfg = join(dir, 'config.yaml');
  writeFileSync(cfg, configOf(dir, r, mode, xdp, neighbor) + '\n');
  const log = join(dir, 'agent.log');
  const flags = process.env.FKB_AGENT_FLAGS?.split(' ').filter(Boolean) ?? [];
  const bin = join(root, 'bin', 'fibkeeper.js');
  const child = spawn(process.execPath, [...flags, bin, 'run', '--config', cfg], {
    // FKB_AGENT_OUT=FILE keeps the agent's stdout (e.g. --trace-gc in FKB_AGENT_FLAGS).
    stdio: [
      'ignore',
      process.env.FKB_AGENT_OUT ? openSync(process.env.FKB_AGENT_OUT, 'a') : 'ignore',
      'pipe',
    ],
    env: nodeOptions ? { ...process.env, NODE_OPTIONS: nodeOptions } : process.env,
  });
  let errText = '';
  child.stderr.on('data', (c) => {
    errText = (errText + c.toString()).slice(-4000);
  });
  const exited = new Promise((res) => child.once('exit', (code, sig) => res(code ?? sig)));
  const sock = join(dir, 'api.sock');
  const t0 = performance.now();
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`agent exited: ${errText}`);
    }
    const st = await call(sock, 'GET', '/v1/status').catch(() => undefined);
    if (st?.ready === true) break;
    if (performance.now() - t0 > 60_000) throw new Error(`agent not ready: ${errText}`);
    await sleep(100);
  }
  void log;
  return {
    pid: child.pid,
    sock,
    status: () => call(sock, 'GET', '/v1/status?limit=10'),
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
    errText: () => errText,
  };
}

/** Sends `n` IPs from BASE for `owner`: one streamed request, or JSON lists of 50,000. */
export async function sendIps(agent, owner, n, api) {
  if (api === 'stream') {
    const lines = new Array(n);
    for (let i = 0; i < n; i++) lines[i] = ipOf(BASE + i);
    return call(
      agent.sock,
      'PUT',
      `/v1/owners/${owner}/forwardable`,
      lines.join('\n') + '\n',
      'text/plain',
    );
  }
  const per = [];
  for (let from = 0; from < n; from += 50_000) {
    const list = [];
    for (let i = from; i < Math.min(n, from + 50_000); i++) list.push(ipOf(BASE + i));
    const t0 = performance.now();
    await call(agent.sock, 'POST', '/v1/forwardable', { owner, ips: list });
    per.push(r2(performance.now() - t0));
  }
  return { perRequestMs: per };
}

/**
 * Counts the distinct new marked extern_learn entries for BASE..BASE+n from neighbor events;
 * wait() resolves with the time the last one was seen. Events can be lost without a trace
 * (a managed entry brings three or more, and the probe socket does not report every
 * overflow), so once no new entry has been seen for 500 ms the kernel is dumped and its
 * count decides (the time is then the dump's: later than the truth, never earlier).
 */
async function entryCounter(ctx, n) {
  const { nl, mod } = ctx;
  const { defaultTuning } = await import(join(root, 'dist', 'neighbor', 'config.js'));
  const seen = new Uint8Array(n);
  let count = 0;
  let lastNew = performance.now();
  let doneAt;
  const fields = mod.neighFields();
  const toNum = (s) => s.split('.').reduce((v, x) => v * 256 + Number(x), 0);
  const sub = nl.subscribe(
    ['neigh'],
    {
      onMessage: (type, buf, off, len) => {
        if (type !== mod.RTM_NEWNEIGH) return true;
        const m = mod.readNeighFields(buf, off, len, fields);
        if (m.protocol !== PROTO || !(m.flags & mod.NTF_EXT_LEARNED)) return true;
        const i = toNum(m.dst) - BASE;
        if (i >= 0 && i < n && seen[i] === 0) {
          seen[i] = 1;
          lastNew = performance.now();
          if (++count === n) doneAt = lastNew;
        }
        return true;
      },
      onEvent: () => true,
    },
    { rcvbuf: defaultTuning().neighRcvbuf },
  );
  /** The marked entries in the kernel, counted from a dump read in place (no objects). */
  const inKernel = () => {
    let have = 0;
    return nl
      .neighEach(
        (f) => {
          if (f.protocol === PROTO) have++;
        },
        { ifindex: ctx.ifindex },
        () => (have = 0),
      )
      .then(() => have);
  };
  const wait = async (timeoutMs) => {
    const end = performance.now() + timeoutMs;
    let dumped = false;
    let dumpAt = 0;
    while (performance.now() < end) {
      if (doneAt !== undefined) return { ms: doneAt, dumped };
      await sleep(100);
      // No new entry for a second (events lost?): the kernel's count decides, at most every
      // 3 s (a dump of a million entries takes the machine a while).
      const now = performance.now();
      if (now - lastNew < 1000 || now - dumpAt < 3000) continue;
      dumpAt = now;
      dumped = true;
      if ((await inKernel()) >= n) return { ms: performance.now(), dumped };
    }
    throw new Error(`only ${count} of ${n} entries seen in ${timeoutMs} ms`);
  };
  return { wait, close: () => sub.close(), count: () => count };
}

/** `ip -batch` writing the entries the agent writes in `path`; its time, then cleared. */
async function ipBatch(ctx, dir, n, path) {
  const file = join(dir, `batch-${n}-${path}`);
  const lines = new Array(n);
  const flag = path === 'managed' ? 'managed' : 'use';
  for (let i = 0; i < n; i++) {
    lines[i] = `neigh replace ${ipOf(BASE + i)} dev ${DEV} extern_learn ${flag} proto ${PROTO}`;
  }
  writeFileSync(file, lines.join('\n') + '\n');
  const t0 = performance.now();
  ip(ctx.r, '-batch', file);
  const ms = performance.now() - t0;
  rmSync(file);
  let have = 0;
  await ctx.nl.neighEach(
    (f) => {
      if (f.protocol === PROTO) have++;
    },
    { ifindex: ctx.ifindex },
    () => (have = 0),
  );
  if (have !== n) throw new Error(`ip -batch left ${have} entries, not ${n}`);
  return ms;
}

/**
 * Waits until no marked entry is resolving (INCOMPLETE), for at most `maxMs`: managed
 * entries by the million are re-probed by the kernel without end, so the table is never
 * quite quiet. Counted from dumps read in place.
 */
async function waitQuiet(ctx, maxMs = 20_000) {
  const end = performance.now() + maxMs;
  while (performance.now() < end) {
    let busy = 0;
    await ctx.nl.neighEach(
      (f) => {
        if (f.protocol === PROTO && f.state & ctx.mod.NUD_INCOMPLETE) busy++;
      },
      { ifindex: ctx.ifindex },
      () => (busy = 0),
    );
    if (busy === 0) return;
    await sleep(500);
  }
}

/** Route change → entry, `iterations` times, while another owner's IP comes and goes. */
async function routeLatency(ctx, agent, iterations, withSaver = true) {
  const { nl } = ctx;
  await nl.routeReplace({ dst: '10.200.0.0/24', gateway: ipOf(GW_BASE) });
  await call(agent.sock, 'POST', '/v1/forwardable', { owner: 'bench-route', ips: ['10.200.0.5'] });
  await waitQuiet(ctx);
  const probe = await latencyProbe(ctx);
  let saving = withSaver;
  let saves = 0;
  const saver = (async () => {
    for (let k = 0; saving; k++) {
      const body = { owner: 'bench-saver', ips: [ipOf(GW_BASE + 0x8000 + (k % 1000))] };
      await call(agent.sock, k % 2 ? 'DELETE' : 'POST', '/v1/forwardable', body);
      saves++;
      await sleep(200);
    }
  })();
  const route = [];
  const floor = [];
  // Samples over 5 ms, with when they started (Date.now(): the agent's --trace-gc lines).
  const slow = [];
  try {
    for (let k = 0; k < iterations; k++) {
      const fdst = ipOf(GW_BASE + 0x4000 + k);
      floor.push(
        await probe.measure(fdst, () =>
          nl.neighSet({
            ifindex: ctx.ifindex,
            dst: fdst,
            state: 0,
            externLearned: true,
            managed: true,
            protocol: PROTO,
          }),
        ),
      );
      await nl.neighDel({ ifindex: ctx.ifindex, dst: fdst });
      const gw = ipOf(GW_BASE + 1 + k);
      const at = performance.timeOrigin + performance.now();
      const ms = await probe.measure(gw, () =>
        nl.routeReplace({ dst: '10.200.0.0/24', gateway: gw }),
      );
      route.push(ms);
      if (!(ms <= 5)) slow.push({ ms: r2(ms), at: Math.round(at) });
      await sleep(5);
    }
  } finally {
    saving = false;
    await saver;
    probe.close();
  }
  const ok = (xs) => xs.filter((x) => !Number.isNaN(x));
  return { route: ok(route), floor: ok(floor), saves, slow };
}

async function fresh(ctx, n, seconds) {
  const samples = [];
  const end = performance.now() + seconds * 1000;
  while (performance.now() < end) {
    await sleep(5000);
    let usable = 0;
    for (const e of await ctx.nl.neighList({ ifindex: ctx.ifindex })) {
      if (e.protocol !== PROTO) continue;
      const v = e.dst.split('.').reduce((x, o) => x * 256 + Number(o), 0);
      if (!(v >= BASE && v < BASE + n)) continue; // the bench's own IPs only
      const s = ctx.mod.nudStateNames(e.state)[0] ?? 'NONE';
      if (['REACHABLE', 'STALE', 'DELAY', 'PROBE'].includes(s) && e.lladdr) usable++;
    }
    samples.push(usable / n);
  }
  return samples;
}

async function one(opts, n, mode, mod) {
  const tag = randomBytes(3).toString('hex');
  const r = `fkt-nbw-r-${tag}`;
  const p = `fkt-nbw-p-${tag}`;
  const dir = mkdtempSync(join(tmpdir(), 'fk-whole-'));
  let nl;
  let agent;
  try {
    setup(r, p, { reachableMs: null });
    sysctl(r, 'net.ipv4.ip_forward=1', 'net.ipv6.conf.all.forwarding=1');
    nl = mod.NetlinkHandle.open({ netns: r });
    const ifindex = await nl.ifindex(DEV);
    const ctx = { nl, ifindex, r, mod };
    // The path the agent's entries take at this size: auto runs legacy above
    // neighbor.rateLimit (1000).
    const path = mode === 'auto' ? (n > 1000 ? 'legacy' : 'managed') : mode;
    const batchMs = await ipBatch(ctx, dir, n, path);
    await waitQuiet(ctx);
    await clear(nl, ifindex);
    agent = await startAgent(dir, r, mode, {
      nodeOptions: process.env.FKB_NODE_OPTIONS ?? '',
      xdp: opts.xdp,
    });
    const idle = kib(statusOf(agent.pid), 'VmRSS');
    const agentStart = startedAt(agent.pid);
    const counter = await entryCounter(ctx, n);
    const t0 = performance.now();
    const answer = await sendIps(agent, 'bench', n, opts.api);
    const ackMs = performance.now() - t0;
    const seen = await counter.wait(600_000);
    counter.close();
    const convergeMs = seen.ms - t0;
    const afterLoad = statusOf(agent.pid);
    console.log(
      `[${n} ${mode}] converge ${r2(convergeMs)} ms (API answered at ${r2(ackMs)} ms), ip -batch ${r2(batchMs)} ms: ${r2(convergeMs / batchMs)}x; RSS ${mib(kib(afterLoad, 'VmRSS'))} MiB, peak ${mib(kib(afterLoad, 'VmHWM'))} MiB${answer.perRequestMs ? `; per request ${answer.perRequestMs.join(', ')} ms` : ''}`,
    );
    await waitQuiet(ctx);
    const lat = await routeLatency(ctx, agent, opts.iterations, opts.saver);
    console.log(
      `[${n} ${mode}] route change → entry p50 ${r2(pct(lat.route, 50))} ms, p99 ${r2(pct(lat.route, 99))} ms (floor p99 ${r2(pct(lat.floor, 99))} ms) with ${lat.saves} saves meanwhile`,
    );
    const freshSeconds =
      opts.freshSeconds === undefined ? (n <= 100_000 ? 60 : 0) : Number(opts.freshSeconds);
    const usable = freshSeconds > 0 ? await fresh(ctx, n, freshSeconds) : [];
    if (usable.length > 0) {
      console.log(
        `[${n} ${mode}] usable min ${r2(Math.min(...usable) * 100)}% over ${freshSeconds} s`,
      );
    }
    const end = statusOf(agent.pid);
    const journal = join(dir, 'state', 'state.json.journal');
    const journalBytes = existsSync(journal) ? statSync(journal).size : 0;
    const stateBytes = statSync(join(dir, 'state', 'state.json')).size;
    const st = await agent.status();
    // The reference again, after the agent (stopped: it leaves its entries, which go first),
    // so that a change of the machine's load during the run shows: the ratio is against the
    // mean of the two.
    await agent.stop();
    await waitQuiet(ctx);
    await clear(nl, ifindex);
    const batchAfterMs = await ipBatch(ctx, dir, n, path);
    const refMs = (batchMs + batchAfterMs) / 2;
    console.log(
      `[${n} ${mode}] ip -batch again after the agent: ${r2(batchAfterMs)} ms; converge ${r2(convergeMs / refMs)}x their mean`,
    );
    return {
      n,
      mode,
      path: st.neighbor?.mode ?? path,
      convergeMs: r2(convergeMs),
      ackMs: r2(ackMs),
      ipBatchMs: r2(batchMs),
      ipBatchAfterMs: r2(batchAfterMs),
      ratio: r2(convergeMs / refMs),
      perRequestMs: answer.perRequestMs,
      completedByDump: seen.dumped,
      agentStartedAt: agentStart,
      rssIdleMiB: mib(idle),
      rssMiB: mib(kib(end, 'VmRSS')),
      rssPeakMiB: mib(kib(end, 'VmHWM')),
      rssAnonMiB: mib(kib(end, 'RssAnon')),
      rssFileMiB: mib(kib(end, 'RssFile')),
      routeP50Ms: r2(pct(lat.route, 50)),
      routeP99Ms: r2(pct(lat.route, 99)),
      floorP99Ms: r2(pct(lat.floor, 99)),
      savesDuringLatency: lat.saves,
      slowRouteSamples: lat.slow,
      usableMinPct: usable.length ? r2(Math.min(...usable) * 100) : null,
      stateFileBytes: stateBytes,
      journalBytes,
    };
  } finally {
    await agent?.stop().catch(() => undefined);
    nl?.close();
    for (const ns of [r, p]) spawnSync('ip', ['netns', 'del', ns]);
    // The agent mounted bpffs on its pin dir (XDP on): unmounted before the folder goes.
    spawnSync('umount', [join(dir, 'bpf')]);
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main() {
  const opts = args();
  const argv = process.argv.slice(2);
  // --merge A.json,B.json: one results file of several runs of this script (rounds).
  const merge = flagValue(argv, '--merge', undefined);
  if (merge !== undefined) {
    const rounds = merge.split(',').map((f) => JSON.parse(readFileSync(f, 'utf8')));
    const runs = rounds.flatMap((x, i) => x.runs.map((r) => ({ ...r, round: i + 1 })));
    const cmds = [...new Set(rounds.map((x) => x.command))].join('; ');
    writeFileSync(opts.out, JSON.stringify(report(runs, cmds), null, 1) + '\n');
    return;
  }
  if (process.getuid?.() !== 0) throw new Error('needs root (network namespaces)');
  const mod = await import(join(root, 'dist', 'netlink', 'index.js'));
  const runs = [];
  for (const n of opts.sizes) {
    for (const mode of opts.modes) {
      const res = await one(opts, n, mode, mod);
      console.log(JSON.stringify(res));
      runs.push(res);
    }
  }
  if (opts.out) {
    mkdirSync(join(opts.out, '..'), { recursive: true });
    const command = `node bench/neighbor/whole.mjs ${argv.join(' ')}`.trim();
    writeFileSync(opts.out, JSON.stringify(report(runs, command), null, 1) + '\n');
  }
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((err) => {
    console.error(`neighbor whole: ${err.stack ?? err}`);
    process.exitCode = 1;
  });
}
