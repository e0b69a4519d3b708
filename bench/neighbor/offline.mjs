#!/usr/bin/env node
// The neighbor subsystem's own JavaScript cost, without the kernel: NeighborSubsystem (from
// dist/) runs against a fake netlink handle that answers lookups at once, accepts every
// write and sends back the two events the kernel sends per new managed entry (created
// INCOMPLETE, then REACHABLE). Converges N on-link IPs like run.mjs does and reports the
// time. With --profile FILE it writes a CPU profile of the convergences alone (not of the
// clearing in between): unlike a profile of the real thing, no kernel time is attributed to
// the JavaScript that runs after a syscall. Needs no root.
// With --heap-profile FILE it writes a sampling heap profile of what the convergences
// allocate (FILE.heapprofile: bytes per function, collected objects included).
// With --snapshot FILE (run node with --expose-gc) it loads N once more at the end, keeps
// them, and writes a heap snapshot after a full GC, with the heap figures: what the tables
// cost per forwardable IP.
// Usage: node bench/neighbor/offline.mjs [--n 100000] [--rounds 5] [--profile FILE]
//          [--heap-profile FILE] [--snapshot FILE]
import { writeFileSync } from 'node:fs';
import { writeHeapSnapshot } from 'node:v8';
import { Session } from 'node:inspector/promises';
import { join } from 'node:path';
import { root } from './lab.mjs';

const a = process.argv.slice(2);
const get = (name, def) => (a.includes(name) ? a[a.indexOf(name) + 1] : def);
const N = Number(get('--n', '100000'));
const ROUNDS = Number(get('--rounds', '5'));
const PROFILE = get('--profile', undefined);
const HEAP_PROFILE = get('--heap-profile', undefined);
const SNAPSHOT = get('--snapshot', undefined);

const nl = await import(join(root, 'dist', 'netlink', 'index.js'));
const { NeighborSubsystem } = await import(join(root, 'dist', 'neighbor', 'index.js'));
const { silentLogger } = await import(join(root, 'dist', 'log', 'index.js'));

const IFINDEX = 2;

/** Just enough of NetlinkHandle for the subsystem. */
class FakeHandle {
  subs = new Set();
  entries = new Map();
  /** Keep no entries (a heap snapshot then shows the subsystem's memory alone). */
  lean = false;

  async linkList() {
    return [
      {
        family: 0,
        type: nl.ARPHRD_ETHER,
        index: IFINDEX,
        flags: nl.IFF_UP | nl.IFF_RUNNING | nl.IFF_LOWER_UP,
        change: 0,
        name: 'fkb0',
        address: '02:00:00:00:00:02',
      },
    ];
  }
  async addrList() {
    return [
      {
        family: nl.AF_INET,
        prefixlen: 12,
        flags: 0,
        scope: 0,
        index: IFINDEX,
        local: '10.0.0.1',
        address: '10.0.0.1',
      },
    ];
  }
  async routeList() {
    return [this.connected()];
  }
  connected() {
    return {
      family: nl.AF_INET,
      dstLen: 12,
      srcLen: 0,
      tos: 0,
      table: nl.RT_TABLE_MAIN,
      protocol: nl.RTPROT_KERNEL,
      scope: nl.RT_SCOPE_LINK,
      type: nl.RTN_UNICAST,
      flags: 0,
      dst: '10.0.0.0',
      oif: IFINDEX,
    };
  }
  async ruleList() {
    const rule = (priority, table) => ({
      family: nl.AF_INET,
      dstLen: 0,
      srcLen: 0,
      tos: 0,
      table,
      action: nl.FR_ACT_TO_TBL,
      flags: 0,
      priority,
      suppressPrefixlen: 0xffffffff,
      protocol: nl.RTPROT_KERNEL,
    });
    return [rule(undefined, 255), rule(32766, 254), rule(32767, 253)];
  }
  async neighList() {
    return [...this.entries.values()];
  }
  async neighEach(each) {
    const all = [...this.entries.values()];
    for (const n of all) each(n);
    return all.length;
  }
  async routeGetMany(queries) {
    return queries.map(() => this.connected());
  }
  emit(kind, msg) {
    for (const h of this.subs) h.onEvent({ kind, object: 'neigh', msg });
  }
  neigh(dst, state, s) {
    return {
      // A string of its own, as a message read from a socket is.
      dst: dst.split('').join(''),
      family: nl.AF_INET,
      ifindex: s.ifindex,
      state,
      flags: nl.NTF_EXT_LEARNED,
      type: 1,
      flagsExt: s.managed ? nl.NTF_EXT_MANAGED : 0,
      protocol: s.protocol,
      lladdr: state === nl.NUD_REACHABLE ? '02:00:00:00:00:99' : undefined,
    };
  }
  async neighSetMany(specs) {
    const created = [];
    for (const s of specs) {
      const n = this.neigh(s.dst, nl.NUD_INCOMPLETE, s);
      if (!this.lean) this.entries.set(`${s.ifindex}|${s.dst}`, n);
      created.push(s);
      this.emit('new', n);
    }
    // The answers to the ARP requests come a little later.
    setImmediate(() => {
      for (const s of created) {
        const n = this.neigh(s.dst, nl.NUD_REACHABLE, s);
        if (!this.lean) this.entries.set(`${s.ifindex}|${s.dst}`, n);
        this.emit('new', n);
      }
    });
    return { ok: specs.length, failures: [] };
  }
  async neighDelMany(keys) {
    for (const k of keys) {
      const n = this.entries.get(`${k.ifindex}|${k.dst}`);
      if (n === undefined) continue;
      this.entries.delete(`${k.ifindex}|${k.dst}`);
      this.emit('del', n);
    }
    return { ok: keys.length, failures: [] };
  }
  async neighGet(k) {
    const n = this.entries.get(`${k.ifindex}|${k.dst}`);
    if (n === undefined) throw new nl.NetlinkError('neighGet', 2);
    return n;
  }
  subscribe(groups, handlers) {
    const neigh = groups.includes('neigh');
    if (neigh) this.subs.add(handlers);
    return { close: () => this.subs.delete(handlers), ref() {}, unref() {} };
  }
  close() {}
}

function ips(base, count) {
  const out = new Array(count);
  for (let i = 0; i < count; i++) {
    const v = base + i;
    out[i] = `${v >>> 24}.${(v >>> 16) & 255}.${(v >>> 8) & 255}.${v & 255}`;
  }
  return out;
}

const fake = new FakeHandle();
const n = new NeighborSubsystem({
  netlink: fake,
  config: {
    devices: ['fkb0'],
    holderName: 'fibkeeper0',
    refresh: 'auto',
    resyncInterval: 300_000,
    retryMin: 100,
    retryMax: 60_000,
    rateLimit: 1000,
  },
  managedSupported: true,
  log: silentLogger(),
});
await n.start();
await n.waitReady();
const times = [];
const profiler = PROFILE === undefined ? undefined : new Session();
if (profiler !== undefined) {
  profiler.connect();
  await profiler.post('Profiler.enable');
  await profiler.post('Profiler.setSamplingInterval', { interval: 100 });
}
const heap = HEAP_PROFILE === undefined ? undefined : new Session();
if (heap !== undefined) {
  heap.connect();
  await heap.post('HeapProfiler.enable');
}
const sampling = {
  samplingInterval: 4096,
  includeObjectsCollectedByMajorGC: true,
  includeObjectsCollectedByMinorGC: true,
};
for (let k = 0; k < ROUNDS; k++) {
  const list = ips(0x0a010001 + (k % 2) * 0x40000, N);
  // The first round warms up: only the later ones are profiled.
  if (k > 0) await profiler?.post('Profiler.start');
  if (k > 0) await heap?.post('HeapProfiler.startSampling', sampling);
  const t0 = performance.now();
  n.setOwner('bench', list);
  await n.settled();
  times.push(performance.now() - t0);
  if (k > 0 && heap !== undefined) {
    const { profile } = await heap.post('HeapProfiler.stopSampling');
    writeFileSync(`${HEAP_PROFILE}.${k}.heapprofile`, JSON.stringify(profile));
  }
  if (k > 0 && profiler !== undefined) {
    const { profile } = await profiler.post('Profiler.stop');
    writeFileSync(`${PROFILE}.${k}.cpuprofile`, JSON.stringify(profile));
  }
  await new Promise((r) => setImmediate(r));
  n.setOwner('bench', []);
  await n.settled();
}
if (SNAPSHOT !== undefined) {
  fake.lean = true;
  fake.entries.clear();
  n.setOwner('bench', ips(0x0a010001, N));
  await n.settled();
  await new Promise((r) => setTimeout(r, 500));
  globalThis.gc?.();
  const m = process.memoryUsage();
  const mb = (x) => (x / 2 ** 20).toFixed(1);
  console.log(
    `with ${N} loaded after a full GC: heapUsed ${mb(m.heapUsed)} MiB (${Math.round(m.heapUsed / N)} B per IP), rss ${mb(m.rss)} MiB`,
  );
  writeHeapSnapshot(SNAPSHOT);
}
await n.stop();
const sorted = [...times].sort((x, y) => x - y);
console.log(
  `offline converge N=${N}: ${times.map((t) => t.toFixed(1)).join(', ')} ms (median ${sorted[sorted.length >> 1].toFixed(1)}); rss ${(process.memoryUsage().rss / 2 ** 20).toFixed(1)} MiB`,
);
