// The fault soak: `fibkeeper run` in the lab's router (topology.ts) with errors injected at
// the native boundary (FIBKEEPER_TEST_FAULTS, src/native/faults.ts), under route churn, link
// flaps and control API traffic; then the kernel is compared with the desired state computed
// without the agent: for every forwardable IP and selected device `ip route get IP oif DEV
// fibmatch` names the next hop (the gateway, or the IP itself on a link), the external IPs
// are what the API acknowledged, and every selected device carries an XDP program. Meanwhile
// /livez and the API must answer. test/agent/faults.netns.test.ts runs it for a few seconds
// per class; bench/faults runs the two-minute soak.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from '../util/index.js';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { labDown, labUp } from './lab.js';
import type { Lab } from './topology.js';

export interface SoakOptions {
  /** Lab prefix (1-8 lowercase letters or digits): the namespaces are `${prefix}-*`. */
  prefix: string;
  /** FIBKEEPER_TEST_FAULTS for the agent. */
  faults: string;
  /** How long churn, flaps and API traffic go on, ms. */
  churnMs: number;
  /** How long the kernel may take afterwards to match the desired state, ms. */
  settleMs: number;
  /** A fresh directory for the config, the state file, the sockets and the log. */
  dir: string;
  /** bin/fibkeeper.js and the node to run it with. */
  bin: string;
  node: string;
  /** extip.checkInterval of the agent (default 500ms; issue 24's reproduction: 50ms). */
  extipCheckInterval?: string;
  /** Progress lines. */
  say?: (line: string) => void;
}

export interface SoakResult {
  faults: string;
  /** How often each fault fired (the agent's last "test faults injected" line). */
  injected: Record<string, number>;
  /** fibkeeper_socket_reopens_total by socket at the end. */
  reopens: Record<string, number>;
  /** /livez answers during the run: 200s, other statuses, and no answer within 2 s. */
  livez: { ok: number; failed: number; unanswered: number; reasons: string[] };
  /** Control API calls: answered 2xx, answered otherwise, not answered within 15 s. */
  api: { ok: number; refused: number; unanswered: number };
  /** Time the kernel took to match after the churn, ms; undefined: it never did. */
  convergedMs: number | undefined;
  /** What differed at the last comparison (empty when it converged). */
  diff: string[];
  /** The desired state at the end: neighbor entries, holder addresses, devices with XDP. */
  desired: { neigh: string[]; holder: string[]; xdp: string[] };
  /** SIGTERM to exit, ms, and the exit code. */
  stop: { ms: number; code: number | null };
  log: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** IPs that stay forwardable, and the pools the API traffic adds and removes. */
const STATIC_FORWARDABLE = ['10.77.2.2', '10.77.4.2', '10.77.1.2', '10.77.50.5', '10.77.51.7'];
const STATIC_FORWARDABLE6 = ['fd77:2::2', 'fd77:4::2'];
const FORWARDABLE_POOL = [
  ...Array.from({ length: 12 }, (_, i) => `10.77.50.${20 + i}`),
  ...Array.from({ length: 6 }, (_, i) => `10.77.2.${50 + i}`),
];
const STATIC_EXTIP = ['10.77.1.100'];
const EXTIP_POOL = Array.from({ length: 6 }, (_, i) => `10.77.1.${150 + i}`);
const FLAPPED = 'r-server1';

function config(lab: Lab, dir: string, checkInterval: string): string {
  const list = (v: string[]) => `[${v.map((x) => `"${x}"`).join(', ')}]`;
  return [
    'netns: ""',
    `devices: ${list(lab.routerDevices)}`,
    `stateFile: ${join(dir, 'state.json')}`,
    'xdp:',
    '  enabled: true',
    `  pinDir: ${join(dir, 'bpf')}`,
    'neighbor:',
    '  resyncInterval: 1s',
    'forwardable:',
    `  static: ${list([...STATIC_FORWARDABLE, ...STATIC_FORWARDABLE6])}`,
    'extip:',
    '  enabled: true',
    '  holderKind: bridge',
    `  interface: ${lab.routerExternal}`,
    '  announceCount: 1',
    `  checkInterval: ${checkInterval}`,
    '  dad: false',
    `  static: ${list(STATIC_EXTIP)}`,
    'api:',
    `  socket: ${join(dir, 'api.sock')}`,
    'metrics:',
    '  address: 127.0.0.1:9470',
    'log:',
    '  level: info',
  ].join('\n');
}

/**
 * One control API call; the status, or undefined when no answer came within `ms` (longer than
 * api.requestTimeout, 10 s, after which the agent answers 503 itself).
 */
function api(sock: string, method: string, path: string, body?: unknown, ms = 15_000) {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise<{ status: number; body: string } | undefined>((resolve) => {
    const req = request(
      {
        socketPath: sock,
        method,
        path,
        agent: false,
        timeout: ms,
        headers: payload
          ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }
          : {},
      },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        res.on('error', () => resolve(undefined));
      },
    );
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(undefined));
    req.end(payload);
  });
}

function ipJson<T>(ns: string, ...args: string[]): T | undefined {
  const r = spawnSync('ip', ['-j', '-n', ns, ...args], { encoding: 'utf8' });
  if (r.status !== 0) return undefined;
  const out = r.stdout.trim();
  return (out === '' ? [] : JSON.parse(out)) as T;
}

/** Polls /livez inside the router every 250 ms; one JSON line per answer. */
const LIVEZ_POLLER = `
const url = 'http://127.0.0.1:9470/livez';
setInterval(async () => {
  const t = Date.now();
  try {
    const r = await fetch(url, { signal: AbortSignal.timeout(2000) });
    console.log(JSON.stringify({ t, status: r.status, body: (await r.text()).trim() }));
  } catch (e) {
    console.log(JSON.stringify({ t, status: 0, body: String(e.cause?.code ?? e.name) }));
  }
}, 250);`;

interface World {
  lab: Lab;
  r: string;
  forwardable: Set<string>;
  extip: Set<string>;
}

/** The desired state, computed from the kernel's FIB and what the API acknowledged. */
function desired(w: World): { neigh: string[]; holder: string[]; xdp: string[] } {
  const neigh = new Set<string>();
  for (const ipAddr of [...STATIC_FORWARDABLE, ...STATIC_FORWARDABLE6, ...w.forwardable]) {
    for (const dev of w.lab.routerDevices) {
      const args = ['route', 'get', ipAddr, 'oif', dev, 'fibmatch'];
      const r = ipJson<{ dev?: string; gateway?: string; type?: string }[]>(w.r, ...args);
      const route = r?.[0];
      if (route === undefined || route.dev !== dev || (route.type ?? 'unicast') !== 'unicast') {
        continue;
      }
      neigh.add(`${dev} ${route.gateway ?? ipAddr}`);
    }
  }
  return {
    neigh: [...neigh].sort(),
    holder: [...STATIC_EXTIP, ...w.extip].sort(),
    xdp: [...w.lab.routerDevices].sort(),
  };
}

/** What the kernel holds: the agent's neighbor entries, the holder's addresses, XDP. */
function actual(w: World): { neigh: string[]; holder: string[]; xdp: string[] } {
  type N = { dst: string; dev: string; protocol?: string };
  const neigh = (ipJson<N[]>(w.r, 'neigh', 'show', 'nud', 'all') ?? [])
    .filter((n) => n.protocol === '241')
    .map((n) => `${n.dev} ${n.dst}`)
    .sort();
  type A = { addr_info: { local: string; scope: string }[] };
  const holder = (ipJson<A[]>(w.r, 'addr', 'show', 'dev', 'fibkeeper0')?.[0]?.addr_info ?? [])
    .filter((a) => a.scope === 'global')
    .map((a) => a.local)
    .sort();
  type L = { ifname: string; xdp?: unknown };
  const xdp = (ipJson<L[]>(w.r, '-d', 'link', 'show') ?? [])
    .filter((l) => l.xdp !== undefined)
    .map((l) => l.ifname)
    .sort();
  return { neigh, holder, xdp };
}

function compare(w: World, want = desired(w)): string[] {
  const have = actual(w);
  const diff: string[] = [];
  for (const key of ['neigh', 'holder', 'xdp'] as const) {
    const missing = want[key].filter((x) => !have[key].includes(x));
    const extra = have[key].filter((x) => !want[key].includes(x));
    if (missing.length > 0) diff.push(`${key} missing: ${missing.join(', ')}`);
    if (extra.length > 0) diff.push(`${key} extra: ${extra.join(', ')}`);
  }
  return diff;
}

/** Route replaces every 20 ms, a delete/add every 100 ms, a link flap every 2 s. */
async function churn(until: number, batch: ChildProcess): Promise<void> {
  const gws = ['10.77.2.2', '10.77.3.2'];
  for (let n = 0; Date.now() < until; n++) {
    const lines = [`route replace 10.77.50.0/24 via ${gws[n % 2]}`];
    if (n % 5 === 0)
      lines.push(
        n % 10 === 0 ? 'route del 10.77.51.0/24' : 'route add 10.77.51.0/24 via 10.77.3.2',
      );
    if (n % 100 === 50) lines.push(`link set ${FLAPPED} down`);
    if (n % 100 === 65) lines.push(`link set ${FLAPPED} up`);
    batch.stdin?.write(lines.join('\n') + '\n');
    await sleep(20);
  }
  batch.stdin?.end(
    [
      `link set ${FLAPPED} up`,
      'route replace 10.77.50.0/24 via 10.77.2.2',
      'route replace 10.77.51.0/24 via 10.77.3.2',
    ].join('\n') + '\n',
  );
  await new Promise((r) => batch.once('exit', r));
}

/** Adds and removes forwardable and external IPs every 50 ms; the model follows the answers. */
async function traffic(w: World, sock: string, until: number, counts: SoakResult['api']) {
  const pending = new Map<string, { path: string; body: unknown; add: boolean }>();
  const one = async (path: string, body: unknown, add: boolean, key: string) => {
    const r = await api(sock, add ? 'POST' : 'DELETE', path, body);
    if (r === undefined) counts.unanswered++;
    else if (r.status >= 200 && r.status < 300) counts.ok++;
    else counts.refused++;
    if (r !== undefined && r.status >= 200 && r.status < 300) pending.delete(key);
    else pending.set(key, { path, body, add }); // the outcome is unknown: repeated at the end
    return r !== undefined && r.status >= 200 && r.status < 300;
  };
  for (let n = 0; Date.now() < until; n++) {
    if (n % 3 === 2) {
      const ipAddr = EXTIP_POOL[n % EXTIP_POOL.length]!;
      const add = !w.extip.has(ipAddr);
      if (add) w.extip.add(ipAddr);
      else w.extip.delete(ipAddr);
      await one('/v1/extip', { ips: [ipAddr] }, add, `x ${ipAddr}`);
    } else {
      const ipAddr = FORWARDABLE_POOL[(n * 7) % FORWARDABLE_POOL.length]!;
      const add = !w.forwardable.has(ipAddr);
      if (add) w.forwardable.add(ipAddr);
      else w.forwardable.delete(ipAddr);
      await one('/v1/forwardable', { owner: 'soak', ips: [ipAddr] }, add, `f ${ipAddr}`);
    }
    await sleep(50);
  }
  // What was not acknowledged is asked again until it is (the requests are idempotent).
  for (let round = 0; pending.size > 0 && round < 20; round++) {
    for (const [key, p] of [...pending]) await one(p.path, p.body, p.add, key);
    if (pending.size > 0) await sleep(500);
  }
}

async function waitReady(sock: string, agent: ChildProcess, log: () => string): Promise<void> {
  const deadline = Date.now() + 90_000;
  while (Date.now() < deadline) {
    if (agent.exitCode !== null) throw new Error(`agent exited: ${log().slice(-2000)}`);
    const r = await api(sock, 'GET', '/v1/status', undefined, 5000);
    if (r?.status === 200 && (JSON.parse(r.body) as { ready?: boolean }).ready === true) return;
    await sleep(200);
  }
  throw new Error(`agent not ready in 90 s: ${log().slice(-2000)}`);
}

function metricsIn(ns: string): Record<string, number> {
  const script =
    "fetch('http://127.0.0.1:9470/metrics').then(async (r) => process.stdout.write(await r.text()), () => {})";
  const r = spawnSync('ip', ['netns', 'exec', ns, process.execPath, '-e', script], {
    encoding: 'utf8',
    timeout: 15_000,
  });
  const out: Record<string, number> = {};
  for (const m of (r.stdout ?? '').matchAll(
    /^fibkeeper_socket_reopens_total\{socket="(\w+)"\} (\d+)/gm,
  )) {
    out[m[1]!] = Number(m[2]);
  }
  return out;
}

function lastInjected(log: string): Record<string, number> {
  let out: Record<string, number> = {};
  for (const line of log.split('\n')) {
    if (!line.includes('"test faults injected"')) continue;
    try {
      out = (JSON.parse(line) as { injected: Record<string, number> }).injected;
    } catch {
      /* a line cut short */
    }
  }
  return out;
}

export async function faultSoak(o: SoakOptions): Promise<SoakResult> {
  const say = o.say ?? (() => undefined);
  mkdirSync(o.dir, { recursive: true });
  const lab = labUp(o.prefix);
  const r = lab.hosts.router;
  const procs: ChildProcess[] = [];
  try {
    for (const line of [
      'route add 10.77.50.0/24 via 10.77.2.2',
      'route add 10.77.51.0/24 via 10.77.3.2',
    ]) {
      spawnSync('ip', ['-n', r, ...line.split(' ')]);
    }
    // IPv6 addresses stay on a link that goes down (the flapped one).
    spawnSync('ip', [
      'netns',
      'exec',
      r,
      'sysctl',
      '-q',
      '-w',
      'net.ipv6.conf.all.keep_addr_on_down=1',
    ]);
    const cfg = join(o.dir, 'config.yaml');
    writeFileSync(cfg, config(lab, o.dir, o.extipCheckInterval ?? '500ms') + '\n');
    const logPath = join(o.dir, 'agent.log');
    const fd = openSync(logPath, 'a');
    const log = () => readFileSync(logPath, 'utf8');
    const argv = ['netns', 'exec', r, o.node, o.bin, 'run', '--config', cfg];
    const agent = spawn('ip', argv, {
      stdio: ['ignore', fd, fd],
      env: { ...process.env, FIBKEEPER_TEST_FAULTS: o.faults },
    });
    procs.push(agent);
    const sock = join(o.dir, 'api.sock');
    const t0 = Date.now();
    await waitReady(sock, agent, log);
    say(`ready in ${Date.now() - t0} ms`);

    const result: SoakResult = {
      faults: o.faults,
      injected: {},
      reopens: {},
      livez: { ok: 0, failed: 0, unanswered: 0, reasons: [] },
      api: { ok: 0, refused: 0, unanswered: 0 },
      convergedMs: undefined,
      diff: [],
      desired: { neigh: [], holder: [], xdp: [] },
      stop: { ms: 0, code: null },
      log: '',
    };
    const poller = spawn('ip', ['netns', 'exec', r, o.node, '-e', LIVEZ_POLLER], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    procs.push(poller);
    createInterface({ input: poller.stdout! }).on('line', (line) => {
      const s = JSON.parse(line) as { status: number; body: string };
      if (s.status === 200) result.livez.ok++;
      else if (s.status === 0) result.livez.unanswered++;
      else result.livez.failed++;
      if (s.status !== 200 && result.livez.reasons.length < 10) {
        result.livez.reasons.push(`${s.status}: ${s.body}`);
      }
    });

    const w: World = { lab, r, forwardable: new Set(), extip: new Set() };
    const batch = spawn('ip', ['-force', '-n', r, '-batch', '-'], {
      stdio: ['pipe', 'ignore', 'ignore'],
    });
    procs.push(batch);
    const until = Date.now() + o.churnMs;
    await Promise.all([churn(until, batch), traffic(w, sock, until, result.api)]);
    say(`churn done: api ${JSON.stringify(result.api)}`);

    const t1 = Date.now();
    for (;;) {
      result.desired = desired(w);
      result.diff = compare(w, result.desired);
      if (result.diff.length === 0) {
        result.convergedMs = Date.now() - t1;
        break;
      }
      if (Date.now() - t1 > o.settleMs) break;
      await sleep(500);
    }
    say(`converged: ${result.convergedMs ?? 'no'} ${result.diff.join('; ')}`);
    await sleep(300); // one more /livez answer after the comparison
    poller.kill('SIGKILL');
    result.reopens = metricsIn(r);
    const t2 = Date.now();
    agent.kill('SIGTERM');
    result.stop.code = await new Promise<number | null>((res) =>
      agent.exitCode !== null ? res(agent.exitCode) : agent.once('exit', (c) => res(c)),
    );
    result.stop.ms = Date.now() - t2;
    result.log = log();
    result.injected = lastInjected(result.log);
    return result;
  } finally {
    for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
    for (let i = 0; i < 50; i++) {
      try {
        labDown(o.prefix);
        break;
      } catch {
        await sleep(100); // processes in the namespaces still exiting
      }
    }
  }
}
