// Measures what the lease defaults of cluster mode rest on, against a local etcd started
// here (loopback, random ports, temp data dir, killed by PID at the end):
//  - the TTL etcd grants for a request of 1 s (with the raft timers given);
//  - keep-alive round trips (send → answer) at the renew interval, with and without a busy
//    event loop beside them, and how late the renew timer fires;
//  - expiry detection: from the last keep-alive's send to a watcher seeing the lease's key
//    deleted (etcd revokes expired leases in a loop, so this exceeds the TTL).
// Run: flock /work/wt/bench.lock node bench/cluster/lease.mjs [--renews N] [--expiries N]
//      [--interval MS] [--heartbeat MS] [--election MS] [--json FILE]
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { EtcdStore, LocalEtcd } from '../../dist/cluster/index.js';
import { monotonicClock } from '../../dist/sched/index.js';

const { values: args } = parseArgs({
  options: {
    renews: { type: 'string', default: '600' },
    expiries: { type: 'string', default: '12' },
    interval: { type: 'string', default: '250' },
    heartbeat: { type: 'string', default: '50' },
    election: { type: 'string', default: '500' },
    json: { type: 'string' },
  },
});
const now = () => monotonicClock.now();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function summary(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p) => s[Math.min(s.length - 1, Math.floor(p * s.length))];
  const r = (x) => Math.round(x * 100) / 100;
  return { n: s.length, p50: r(q(0.5)), p99: r(q(0.99)), max: r(s[s.length - 1]), min: r(s[0]) };
}

/** A busy event loop: synchronous work slices of 5-30 ms, like an agent applying a batch. */
function busyLoop(stopAt) {
  const step = () => {
    if (now() > stopAt) return;
    const until = now() + 5 + Math.random() * 25;
    while (now() < until);
    setTimeout(step, Math.random() * 20);
  };
  step();
}

async function renewRound(store, id, n, interval, busy) {
  const rtt = [];
  const late = [];
  let failures = 0;
  if (busy) busyLoop(now() + n * interval + 1000);
  let due = now() + interval;
  for (let i = 0; i < n; i++) {
    await new Promise((r) => setTimeout(r, Math.max(0, due - now())));
    late.push(now() - due);
    due += interval;
    const sent = now();
    try {
      const ttl = await store.keepAlive(id);
      if (ttl <= 0) throw new Error('lease lost');
      rtt.push(now() - sent);
    } catch {
      failures++;
    }
  }
  return { rtt: summary(rtt), timerLate: summary(late), failures };
}

async function expiryRound(store, etcdRun, n) {
  const out = [];
  for (let i = 0; i < n; i++) {
    const { id, ttlSeconds } = await store.grantLease(1);
    const key = `/fk-bench/expiry/${etcdRun}/${i}`;
    await store.createIfAbsent(key, 'x', id);
    // Let the key live a random part of a revoke-loop period before the last keep-alive.
    await sleep(Math.random() * 500);
    const sent = now();
    await store.keepAlive(id);
    const { revision } = await store.getPrefix(key);
    const seen = await new Promise((resolve, reject) => {
      const w = store.watchPrefix(key, revision + 1, {
        onEvents(evs) {
          if (evs.some((e) => e.type === 'delete')) {
            w.cancel();
            resolve(now());
          }
        },
        onEnd: reject,
      });
    });
    out.push({ afterLastRenew: seen - sent, overTtl: seen - sent - ttlSeconds * 1000 });
  }
  return {
    afterLastRenew: summary(out.map((o) => o.afterLastRenew)),
    overTtl: summary(out.map((o) => o.overTtl)),
  };
}

const etcd = await LocalEtcd.start({
  heartbeatMs: Number(args.heartbeat),
  electionMs: Number(args.election),
});
const store = new EtcdStore({ endpoints: [etcd.endpoint], requestTimeoutMs: 2000 });
try {
  const granted = await store.grantLease(1);
  const interval = Number(args.interval);
  const n = Number(args.renews);
  console.log(etcd.describe());
  console.log(`requested TTL 1 s, granted ${granted.ttlSeconds} s`);
  const idle = await renewRound(store, granted.id, n, interval, false);
  console.log(
    'renew (idle loop)  rtt ms',
    idle.rtt,
    'timer late ms',
    idle.timerLate,
    'failures',
    idle.failures,
  );
  const busy = await renewRound(store, granted.id, n, interval, true);
  console.log(
    'renew (busy loop)  rtt ms',
    busy.rtt,
    'timer late ms',
    busy.timerLate,
    'failures',
    busy.failures,
  );
  const expiry = await expiryRound(store, Date.now(), Number(args.expiries));
  console.log('expiry seen after last renew send ms', expiry.afterLastRenew);
  console.log('  of which beyond the TTL ms', expiry.overTtl);
  const result = {
    etcd: etcd.describe(),
    grantedTtlSeconds: granted.ttlSeconds,
    intervalMs: interval,
    idle,
    busy,
    expiry,
  };
  if (args.json) writeFileSync(args.json, JSON.stringify(result, null, 2) + '\n');
} finally {
  store.close();
  await etcd.destroy();
}
