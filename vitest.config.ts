import { defineConfig } from 'vitest/config';

// Four projects, in three groups that run one after the other (sequence.groupOrder):
//  0 unit:   pure logic, no root, runs anywhere, in parallel;
//    netns:  privileged tests that build their own network namespaces. They run one file
//            at a time (the machine has few cores and some tests measure timing) and fail,
//            never skip, when FIBKEEPER_REQUIRE_PRIVILEGED=1 and the process is not root.
//  1 cluster-netns: agents in cluster mode on a namespace segment (root, a real etcd).
//  2 cluster: cluster members against a real etcd started by the tests (no root needed).
// The cluster files start several processes each (agents or members, an etcd, proxies):
// beside the netns files they starved the timing-sensitive ones (the history checker's
// tmpfs run acknowledged 80 of 1,000 requests instead of ~550), so they run after them.
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
          testTimeout: 20_000,
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
          sequence: { groupOrder: 2 },
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
          sequence: { groupOrder: 1 },
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          name: 'netns',
          include: ['src/**/*.netns.test.ts', 'test/**/*.netns.test.ts'],
          exclude: ['test/cluster/**', 'node_modules/**', 'dist/**'],
          fileParallelism: false,
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
    ],
  },
});
