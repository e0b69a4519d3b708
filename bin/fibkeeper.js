#!/usr/bin/env node
// Entry point of the `fibkeeper` command: runs the compiled CLI.
import { main } from '../dist/cli/index.js';
import { reexecForAgent } from '../dist/cli/node-flags.js';

// The agent runs with the V8 flags of src/cli/node-flags.ts (same PID: process.execve).
if (process.argv[2] === 'run') reexecForAgent();

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    process.stderr.write(`fibkeeper: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
