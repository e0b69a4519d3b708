// The agent side of bench/neighbor/run.mjs: a child process that runs fibkeeper's
// NeighborSubsystem (from dist/) against the bench namespace and answers the driver's
// requests over the IPC channel. Run separately so that its RSS is the agent's alone.
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';
import { getHeapSpaceStatistics, writeHeapSnapshot } from 'node:v8';

const [root, netns, device] = process.argv.slice(2);
const { NeighborSubsystem } = await import(join(root, 'dist', 'neighbor', 'index.js'));
const { createLogger, silentLogger } = await import(join(root, 'dist', 'log', 'index.js'));

/** N consecutive IPv4 addresses from `base` (a 32-bit number). */
function ips(base, count) {
  const out = new Array(count);
  for (let i = 0; i < count; i++) {
    const v = base + i;
    out[i] = `${v >>> 24}.${(v >>> 16) & 255}.${(v >>> 8) & 255}.${v & 255}`;
  }
  return out;
}

let n;
let profiler;

const handlers = {
  /**
   * Starts the subsystem; `config` overrides the agent's neighbor options (the defaults of
   * src/config but devices and holder), `tuning` its tuning defaults (experiments).
   */
  async start({ tuning, config = {} }) {
    n = new NeighborSubsystem({
      netns,
      config: {
        devices: [device],
        holderName: 'fibkeeper0',
        refresh: 'auto',
        resyncInterval: 300_000,
        retryMin: 100,
        retryMax: 60_000,
        rateLimit: 1000,
        ...config,
      },
      managedSupported: true,
      // FKB_AGENT_LOG=warn (or info, debug) shows the agent's log on stderr.
      log: process.env.FKB_AGENT_LOG ? createLogger(process.env.FKB_AGENT_LOG) : silentLogger(),
      tuning,
    });
    await n.start();
    await n.waitReady();
    // timeOrigin: --trace-gc's times are milliseconds since it (slow samples, scale.mjs).
    return { mode: n.mode, rss: process.memoryUsage().rss, timeOrigin: performance.timeOrigin };
  },
  /** Makes `owner` hold `count` IPs from `base`; the time until the kernel has them all. */
  async load({ owner, base, count }) {
    const list = ips(base, count);
    const t0 = performance.now();
    n.setOwner(owner, list);
    await n.settled();
    const ms = performance.now() - t0;
    const s = n.status({ limit: 0 });
    return { ms, summary: s.summary, counters: s.counters };
  },
  /** Releases everything `owner` holds and waits until the entries are gone. */
  async clear({ owner }) {
    n.setOwner(owner, []);
    await n.settled();
    return {};
  },
  /**
   * Waits until the agent has nothing queued (after a pause, say): no work, and its event
   * socket read down (what the references wrote while it was stopped is not its turn's).
   */
  async settle() {
    await n.settled();
    const until = Date.now() + 30_000;
    while (n.eventsQueued() > 1000 && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 10));
    }
    await n.settled();
    return { eventsQueued: n.eventsQueued() };
  },
  async upsert({ owner, list }) {
    n.upsert(owner, list);
    await n.settled();
    return {};
  },
  async status() {
    const s = n.status({ limit: 0 });
    return { mode: s.mode, summary: s.summary, counters: s.counters, health: n.health().level };
  },
  /** How long the status document takes to build and serialize (as the API serves it). */
  async statusTimed({ limit = 1000 }) {
    const t0 = performance.now();
    const text = JSON.stringify(n.status({ limit }));
    return { ms: performance.now() - t0, bytes: text.length };
  },
  /** Resident memory now and at its peak (getrusage maxrss), in bytes. */
  async rss() {
    return { ...process.memoryUsage(), maxRss: process.resourceUsage().maxRSS * 1024 };
  },
  /** Starts the V8 CPU profiler (bench/neighbor/profile.mjs). */
  async profileStart({ intervalUs = 100 }) {
    profiler = new Session();
    profiler.connect();
    await profiler.post('Profiler.enable');
    await profiler.post('Profiler.setSamplingInterval', { interval: intervalUs });
    await profiler.post('Profiler.start');
    return {};
  },
  /** Stops the profiler and writes the profile (a .cpuprofile, as `node --cpu-prof` does). */
  async profileStop({ file }) {
    const { profile } = await profiler.post('Profiler.stop');
    profiler.disconnect();
    profiler = undefined;
    writeFileSync(file, JSON.stringify(profile));
    return {};
  },
  /** Heap spaces (bytes used and committed), and a heap snapshot when `file` is given. */
  async heap({ file, gc = false }) {
    if (gc) globalThis.gc?.();
    if (file !== undefined) writeHeapSnapshot(file);
    const spaces = getHeapSpaceStatistics().map((s) => ({
      name: s.space_name,
      used: s.space_used_size,
      committed: s.physical_space_size,
    }));
    return { memory: process.memoryUsage(), spaces };
  },
  async stop() {
    await n?.stop();
    setImmediate(() => process.exit(0));
    return {};
  },
};

process.on('message', async (m) => {
  try {
    const result = await handlers[m.cmd](m.args ?? {});
    process.send({ id: m.id, result });
  } catch (err) {
    process.send({ id: m.id, error: String(err?.stack ?? err) });
  }
});
process.send({ ready: true });
