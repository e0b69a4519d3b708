#!/usr/bin/env node
// Entry point of the `fibkeeper` command: runs the compiled CLI.

// A reader that went away (`fibkeeper status | head`) ends the output quietly: no stack
// trace, exit code 0.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err) => {
    if (err.code === 'EPIPE') process.exit(0);
    throw err;
  });
}
// The agent reloads on SIGHUP; until it has set that up, a SIGHUP must not end it (the
// config it is about to read is the newest anyway).
if (process.argv[2] === 'run') process.on('SIGHUP', () => {});

const { main } = await import('../dist/cli/index.js');
main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    process.stderr.write(`fibkeeper: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
