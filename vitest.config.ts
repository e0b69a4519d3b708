import { defineConfig } from 'vitest/config';

// Two projects:
//  - unit:   pure logic, no root, runs anywhere, in parallel.
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
          exclude: ['**/*.netns.test.ts', 'node_modules/**', 'dist/**'],
          testTimeout: 20_000,
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
