// The bench namespace lab and helpers shared by bench/neighbor/run.mjs and profile.mjs:
// router namespace R with device DEV towards a peer P that answers every ARP request (proxy
// ARP), the agent child process (agent.mjs), and small statistics helpers.
import { execFileSync, fork, spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const here = dirname(fileURLToPath(import.meta.url));
export const root = join(here, '..', '..');
export const DEV = 'fkb0';
export const PROTO = 241;
// All inside R's connected 10.0.0.0/8 and apart from each other at 1,000,000 IPs.
export const BASE = 0x0a010001; // 10.1.0.1: forwardable IPs (10.1.0.1-10.16.66.64 for 1M)
export const WARM_BASE = 0x0a400001; // 10.64.0.1: the IPs an agent warms up with
export const GW_BASE = 0x0a800001; // 10.128.0.1: gateways for the route-change runs
export const FLOOR_BASE = 0x0a810001; // 10.129.0.1: the driver's own writes (reference latency)

export const ipOf = (v) => `${v >>> 24}.${(v >>> 16) & 255}.${(v >>> 8) & 255}.${v & 255}`;
export const ipsFrom = (base, n) => Array.from({ length: n }, (_, i) => ipOf(base + i));
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
export const median = (xs) => {
  const s = [...xs].sort((x, y) => x - y);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
export const pct = (xs, p) => {
  const s = [...xs].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};
export const r2 = (x) => Math.round(x * 100) / 100;

export function ip(ns, ...argv) {
  const r = spawnSync('ip', ['-n', ns, ...argv], { encoding: 'utf8', maxBuffer: 1 << 30 });
  if (r.status !== 0) throw new Error(`ip -n ${ns} ${argv.join(' ')}: ${r.stderr.trim()}`);
  return r.stdout;
}

export function sysctl(ns, ...kv) {
  execFileSync('ip', ['netns', 'exec', ns, 'sysctl', '-qw', ...kv]);
}

/**
 * Router R with DEV towards peer P; P answers ARP for all of 10.0.0.0/8 (proxy ARP).
 * `reachableMs`: base_reachable_time of DEV (default one hour: no re-probing while the
 * convergence and latency figures are measured; null keeps the kernel default of 30 s).
 */
export function setup(r, p, { reachableMs = 3_600_000 } = {}) {
  for (const ns of [r, p]) execFileSync('ip', ['netns', 'add', ns]);
  ip(r, 'link', 'set', 'lo', 'up');
  ip(r, 'link', 'add', DEV, 'type', 'veth', 'peer', 'name', 'fkp0', 'netns', p);
  ip(p, 'link', 'add', 'fkq0', 'type', 'veth', 'peer', 'name', 'fkq1');
  for (const d of ['fkp0', 'fkq0', 'fkq1']) ip(p, 'link', 'set', d, 'up');
  ip(r, 'link', 'set', DEV, 'up');
  ip(r, 'addr', 'add', '10.0.0.1/8', 'dev', DEV);
  if (reachableMs !== null) {
    sysctl(r, `net.ipv4.neigh.${DEV}.base_reachable_time_ms=${reachableMs}`);
  }
  sysctl(
    p,
    'net.ipv4.ip_forward=1',
    'net.ipv4.conf.all.rp_filter=0',
    'net.ipv4.conf.fkp0.rp_filter=0',
    'net.ipv4.conf.fkp0.proxy_arp=1',
    'net.ipv4.neigh.fkp0.proxy_delay=0',
  );
  ip(p, 'route', 'add', '10.0.0.0/8', 'dev', 'fkq0');
  ip(p, 'route', 'add', '10.0.0.1/32', 'dev', 'fkp0');
}

/**
 * The agent child: call(cmd, args) → its answer. It runs with the V8 flags `fibkeeper run`
 * gives itself (src/cli/node-flags.ts); FKB_AGENT_FLAGS replaces them (experiments, e.g.
 * FKB_AGENT_FLAGS=' ' for Node's defaults).
 */
export async function spawnAgent(r, execArgv = []) {
  const { AGENT_NODE_FLAGS } = await import(join(root, 'dist', 'cli', 'node-flags.js'));
  const flags = process.env.FKB_AGENT_FLAGS?.split(' ').filter(Boolean) ?? AGENT_NODE_FLAGS;
  const child = fork(join(here, 'agent.mjs'), [root, r, DEV], {
    stdio: 'inherit',
    execArgv: [...flags, ...execArgv],
  });
  let seq = 0;
  const pending = new Map();
  await new Promise((resolve, reject) => {
    child.once('error', reject);
    child.on('message', (m) => {
      if (m.ready) return resolve();
      const w = pending.get(m.id);
      pending.delete(m.id);
      if (m.error) w?.reject(new Error(m.error));
      else w?.resolve(m.result);
    });
  });
  const call = (cmd, a) =>
    new Promise((resolve, reject) => {
      const id = ++seq;
      pending.set(id, { resolve, reject });
      child.send({ id, cmd, args: a });
    });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  return {
    call,
    pid: child.pid,
    pause: () => child.kill('SIGSTOP'),
    resume: () => child.kill('SIGCONT'),
    stop: async () => (await call('stop'), await exited),
  };
}

export async function owned(nl, ifindex) {
  return (await nl.neighList({ ifindex })).filter((x) => x.protocol === PROTO);
}

/** Deletes every entry with the mark; waits until resolution traffic has died down. */
export async function clear(nl, ifindex) {
  const all = await owned(nl, ifindex);
  if (all.length > 0) await nl.neighDelMany(all.map((x) => ({ ifindex, dst: x.dst })));
  await sleep(300);
}

/** Waits until no entry is still resolving (the ARP of the last write has been answered). */
export async function quiet(nl, ifindex, INCOMPLETE) {
  for (let i = 0; i < 200; i++) {
    const busy = (await owned(nl, ifindex)).filter((x) => x.state & INCOMPLETE).length;
    if (busy === 0) return;
    await sleep(100);
  }
}

export async function check(nl, ifindex, n) {
  const have = (await owned(nl, ifindex)).length;
  if (have !== n) throw new Error(`kernel has ${have} marked entries, expected ${n}`);
}

/** What measure() gives for a sample whose event did not come within PROBE_TIMEOUT_MS. */
export const PROBE_TIMEOUT_MS = 2000;

/**
 * Times `act()` until a new marked extern_learn entry for `dst` is seen: the milliseconds;
 * Infinity when it is not seen within PROBE_TIMEOUT_MS (a percentile counts it as the
 * worst); NaN when the probe's own event socket overflowed meanwhile (its event may have
 * been lost by the probe, not late: the sample says nothing about the agent).
 */
export async function latencyProbe(ctx) {
  const { mod } = ctx;
  const { defaultTuning } = await import(join(root, 'dist', 'neighbor', 'config.js'));
  const waiters = new Map();
  // Every neighbor event of the namespace comes here too (a million entries going STALE at
  // once, ~250,000 in one tick of the kernel's timer wheel): each is read in place (no
  // object, no text), so that the probe's own backlog adds as little as possible to what
  // it measures, into a socket as large as the agent's.
  const fields = mod.neighFields();
  let overflows = 0;
  const sub = ctx.nl.subscribe(
    ['neigh'],
    {
      onMessage: (type, buf, off, len) => {
        if (type !== mod.RTM_NEWNEIGH || waiters.size === 0) return true;
        const m = mod.readNeighFields(buf, off, len, fields);
        if (m.protocol !== PROTO || !(m.flags & mod.NTF_EXT_LEARNED)) return true;
        const w = waiters.get(m.dst);
        if (w) {
          waiters.delete(m.dst);
          w(performance.now());
        }
        return true;
      },
      onEvent: (ev) => {
        if (ev.kind === 'overflow') overflows++;
      },
    },
    { rcvbuf: defaultTuning().neighRcvbuf },
  );
  const measure = async (dst, act) => {
    const seen = new Promise((resolve) => waiters.set(dst, resolve));
    const lostBefore = overflows;
    const t0 = performance.now();
    await act();
    const t1 = await Promise.race([seen, sleep(PROBE_TIMEOUT_MS).then(() => Infinity)]);
    waiters.delete(dst);
    if (t1 === Infinity && overflows !== lostBefore) return NaN;
    return t1 - t0;
  };
  return { measure, close: () => sub.close() };
}

/**
 * Route change → new entry, `ip neigh del` → re-inserted, and the driver's own neighSet →
 * its event (the reference), `iterations` times each, with `loaded` IPs (from BASE) loaded.
 */
export async function latencies(ctx, agent, iterations, loaded = 100_000) {
  const { nl, ifindex, mod } = ctx;
  await nl.routeReplace({ dst: '10.200.0.0/24', gateway: ipOf(GW_BASE) });
  await agent.call('upsert', { owner: 'bench-route', list: ['10.200.0.5'] });
  await quiet(nl, ifindex, mod.NUD_INCOMPLETE);
  const probe = await latencyProbe(ctx);
  const floor = [];
  const route = [];
  const reinsert = [];
  // Samples over 20 ms, with when they started (Date.now()): what was going on then.
  const slow = [];
  const timed = async (kind, xs, dst, act) => {
    const at = Date.now();
    const ms = await probe.measure(dst, act);
    xs.push(ms);
    if (!(ms <= 20)) slow.push({ kind, ms, at });
  };
  try {
    for (let k = 0; k < iterations; k++) {
      const dst = ipOf(FLOOR_BASE + k);
      floor.push(
        await probe.measure(dst, () =>
          nl.neighSet({
            ifindex,
            dst,
            state: 0,
            externLearned: true,
            managed: true,
            protocol: PROTO,
          }),
        ),
      );
      await nl.neighDel({ ifindex, dst });
      const gw = ipOf(GW_BASE + 1 + k);
      await timed('route', route, gw, () => nl.routeReplace({ dst: '10.200.0.0/24', gateway: gw }));
      const victim = ipOf(BASE + ((k * 7919) % loaded));
      await timed('reinsert', reinsert, victim, () => nl.neighDel({ ifindex, dst: victim }));
      await sleep(5);
    }
  } finally {
    probe.close();
  }
  // Timed out: kept (as Infinity, the worst a percentile sees). Lost by the probe: dropped.
  const late = (xs) => xs.filter((x) => x === Infinity).length;
  const lost = (xs) => xs.filter((x) => Number.isNaN(x)).length;
  const ok = (xs) => xs.filter((x) => !Number.isNaN(x));
  return {
    floor: ok(floor),
    route: ok(route),
    reinsert: ok(reinsert),
    timeouts: { floor: late(floor), route: late(route), reinsert: late(reinsert) },
    probeLost: { floor: lost(floor), route: lost(route), reinsert: lost(reinsert) },
    slow,
  };
}
