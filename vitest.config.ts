import { defineConfig } from 'vitest/config';

// Privileged files that must run alone: they time something (a stop bound, a reply within
// a bound, a rate, a storm), push traffic whose every datagram is counted, or load the
// machine (thousands of entries, floods, 1,000 concurrent requests). Every other netns file
// builds its own namespaces (makeNetns, unique lab prefixes), pin dirs (privateBpffs), temp
// dirs, sockets and ports (port 0), sets sysctls only inside its namespaces and keeps its
// kernel neighbor entries far below gc_thresh3, so several of them run side by side.
const NETNS_ALONE = [
  'test/agent/history.netns.test.ts', // acknowledged counts under 1,000 concurrent requests
  'test/agent/memlimit.netns.test.ts', // the agent's memory under its limit, the largest table
  'test/agent/signals.netns.test.ts', // the stop bound, in ms
  'test/demo/demo.netns.test.ts', // outage times in ms, exact UDP counts
  'test/deploy/alerts.netns.test.ts', // floods, Prometheus rule timing
  'test/extip/announce.netns.test.ts', // assign returns within 180 ms
  'test/extip/conflict.netns.test.ts', // a 10,000-frame claim storm
  'test/fib/policy-live.netns.test.ts', // a policy applied within its bound, in ms
  'test/fib/traffic.netns.test.ts', // exact UDP counts across restarts
  'test/native/dump-race.netns.test.ts', // dumps raced for a fixed time
  'test/native/xdp.netns.test.ts', // a flood
  'test/neighbor/bounded.netns.test.ts', // probes per second
  'test/neighbor/entries.netns.test.ts', // an entry back within 2 s
  'test/neighbor/refresh.netns.test.ts', // entries aging in 0.5 s, the kernel's own probes
  'test/neighbor/resilience.netns.test.ts', // 5,000 next hops, bursts of 3,000 entries
];

// Five projects, in groups that run one after the other (sequence.groupOrder):
//  0 unit:   pure logic, no root, runs anywhere, three files at a time;
//    netns:  privileged tests that build their own network namespaces, three files at a time
//            beside the unit files; they fail, never skip, when FIBKEEPER_REQUIRE_PRIVILEGED=1
//            and the process is not root.
//  1 netns-alone: the privileged files of NETNS_ALONE, one at a time, with nothing beside.
//  2 cluster-netns: agents in cluster mode on a namespace segment (root, a real etcd).
//  3 cluster: cluster members against a real etcd started by the tests (no root needed).
// The cluster files start several processes each (agents or members, an etcd, proxies):
// beside the netns files they starved the timing-sensitive ones (the history checker's
// tmpfs run acknowledged 80 of 1,000 requests instead of ~550), so they run after them.
// (vitest runs a project whose maxWorkers is 1 and groupOrder 0 after every group: hence
// the explicit orders.)
export default defineConfig({
  test: {
    // Each file's wall time, kept and its slowest printed when FIBKEEPER_TEST_TIMINGS names a
    // file (make test does): test/helpers/timings-reporter.ts.
    reporters: ['default', './test/helpers/timings-reporter.ts'],
    projects: [
      {
        test: {
          name: 'unit',
          include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
          exclude: ['**/*.netns.test.ts', 'test/cluster/**', 'node_modules/**', 'dist/**'],
          maxWorkers: 3, // vitest wants the same as the netns project of its group
          testTimeout: 20_000,
        },
      },
      {
        test: {
          name: 'netns',
          include: ['src/**/*.netns.test.ts', 'test/**/*.netns.test.ts'],
          exclude: ['test/cluster/**', 'node_modules/**', 'dist/**', ...NETNS_ALONE],
          // three at a time: they spend most of their time waiting on the kernel, agents and
          // peers, not on the two cores (the suite passed with two at a time at load 7-11)
          maxWorkers: 3,
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: 'netns-alone',
          include: NETNS_ALONE,
          fileParallelism: false,
          sequence: { groupOrder: 1 },
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        // Agents in cluster mode on a namespace segment with a real etcd (privileged): each
        // file builds a lab of its own (unique names), so the files run side by side, in a
        // group of their own after the unit and netns files.
        test: {
          name: 'cluster-netns',
          include: ['test/cluster/**/*.netns.test.ts'],
          maxWorkers: 2,
          sequence: { groupOrder: 2 },
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
      {
        // Cluster members as processes against a real etcd (Debian etcd-server) that the
        // tests start on loopback: one file at a time, as they time failovers, last.
        test: {
          name: 'cluster',
          include: ['test/cluster/**/*.test.ts'],
          exclude: ['**/*.netns.test.ts'],
          fileParallelism: false,
          sequence: { groupOrder: 3 },
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
    ],
  },
});
