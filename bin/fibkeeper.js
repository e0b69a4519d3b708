#!/usr/bin/env node
// Entry point of the `fibkeeper` command: runs the compiled CLI.
import { main } from '../dist/cli/index.js';

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    process.stderr.write(`fibkeeper: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
