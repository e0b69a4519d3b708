// One cluster member in its own process, for the integration tests and bench/cluster:
// node test/cluster/member-proc.mjs '{"endpoint":"127.0.0.1:2379","nodeName":"a",...}'
// Prints JSON lines on stdout: {"type":"hold",node,at,ips,deadline,reason} for every hold
// set (times on CLOCK_MONOTONIC, comparable across processes), {"type":"ready"},
// {"type":"resync",reason}, {"type":"renew-failure",reason} (a keep-alive or grant that
// failed), {"type":"stopped"}. SIGTERM: graceful stop (handover), exit 0.
import { ClusterMember, EtcdStore, noopClusterMetrics } from '../../dist/cluster/index.js';
import { monotonicClock } from '../../dist/sched/index.js';

const cfg = JSON.parse(process.argv[2] ?? '{}');
const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');
const store = new EtcdStore({
  endpoints: [cfg.endpoint],
  requestTimeoutMs: cfg.requestTimeoutMs ?? 500,
});
const metrics = {
  ...noopClusterMetrics(),
  resync: (reason) => out({ type: 'resync', reason }),
  renewFailure: (reason) => out({ type: 'renew-failure', reason }),
};
const member = new ClusterMember({
  store,
  metrics,
  options: { nodeName: cfg.nodeName, ...(cfg.options ?? {}) },
  onHold: (s) =>
    out({
      type: 'hold',
      node: cfg.nodeName,
      at: s.at,
      ips: s.ips,
      deadline: Number.isFinite(s.deadline) ? s.deadline : null,
      reason: s.reason,
    }),
});
// Our parent (the test) is gone when our stdin ends: so are we.
process.stdin.on('end', () => process.exit(1));
process.stdin.resume();
let stopping = false;
process.on('SIGTERM', () => {
  if (stopping) return;
  stopping = true;
  const t0 = monotonicClock.now();
  void member.stop().then(() => {
    out({ type: 'stopped', at: monotonicClock.now(), tookMs: monotonicClock.now() - t0 });
    store.close();
    process.exit(0);
  });
});
await member.start();
await member.ready();
out({ type: 'ready', at: monotonicClock.now() });
