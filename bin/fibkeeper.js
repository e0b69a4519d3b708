#!/usr/bin/env -S node --max-semi-space-size=16 --optimize-for-size --max-opt=2
// `fibkeeper run` reloads on SIGHUP; until it has set that up, a SIGHUP must not end it (the
// config it is about to read is the newest anyway). From the first line, then: the default
// action of SIGHUP is to end the process. (Before this line Node itself starts, with the
// default action; nothing in JS can change that.)
if (process.argv[2] === 'run') process.on('SIGHUP', () => {});

// Entry point of the `fibkeeper` command: checks that this Node.js is a supported LTS line
// (package.json engines: ^22.12 || >=24) before it loads anything, then runs the compiled CLI.
const [major, minor] = process.versions.node.split('.').map(Number);
if (!((major === 22 && minor >= 12) || major >= 24)) {
  process.stderr.write(
    `fibkeeper: Node.js v${process.versions.node} (${process.execPath}) is not supported: ` +
      'fibkeeper needs Node.js 22 (22.12 or later) or 24 or later, the maintained LTS lines.\n' +
      'Install Node.js 24 LTS (nodejs.org, or the node:24 images), or run `make deps` in the ' +
      'source tree: on x86-64 it puts Node.js 24 into node_modules/.bin.\n',
  );
  process.exit(1);
}

// The agent runs with the V8 flags of src/cli/node-flags.ts. The shebang above, the systemd
// unit and the image give them; otherwise (`node bin/fibkeeper.js run`) `run` replaces this
// process (same PID, process.execve) once, before it sets anything up. The new Node starts
// with SIGHUP's default action again (Node resets signal dispositions and the signal mask at
// startup: a SIGHUP blocked across the execve is delivered then), until its first line.
if (process.argv[2] === 'run') {
  const { reexecForAgent } = await import('../dist/cli/node-flags.js');
  reexecForAgent();
}

// A reader that went away (`fibkeeper status | head`) ends the output quietly: no stack
// trace, exit code 0.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err) => {
    if (err.code === 'EPIPE') process.exit(0);
    throw err;
  });
}
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
