import { defineConfig } from 'vitest/config';

// Three projects:
//  - unit:   pure logic, no root, runs anywhere, in parallel.
//  - cluster: cluster members against a real etcd started by the tests (no root needed).
//  - netns:  privileged tests that build their own network namespaces. They run one file
//            at a time (the machine has few cores and some tests measure timing) and fail,
//            never skip, when FIBKEEPER_REQUIRE_PRIVILEGED=1 and the process is not root.
export default defineConfig({
  test: {
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
        // tests start on loopback: one file at a time, as they time failovers.
        test: {
          name: 'cluster',
          include: ['test/cluster/**/*.test.ts'],
          fileParallelism: false,
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: 'netns',
          include: ['src/**/*.netns.test.ts', 'test/**/*.netns.test.ts'],
          exclude: ['node_modules/**', 'dist/**'],
          fileParallelism: false,
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
    ],
  },
});
