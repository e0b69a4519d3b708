// `make install` as an operator runs it: the installed `fibkeeper` runs on a supported
// Node.js even when the PATH's `node` is the machine's old one (Node 20 here, which
// bin/fibkeeper.js refuses), with the agent's V8 flags; DESTDIR stages the tree without
// leaking into the paths it names; the man pages render in man(1) without warnings and name
// every command and option. (systemd.netns.test.ts runs the installed unit on the staged tree.)
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { COMMANDS } from '../../src/cli/commands.js';
import { reexecArgs } from '../../src/cli/node-flags.js';
import { OPTIONS, flagName } from '../../src/config/index.js';
import { makeInstall } from './install.js';
import { readUnit } from './manifests.js';

const dir = mkdtempSync(join(tmpdir(), 'fkt-install-'));
const prefix = join(dir, 'prefix');
const destdir = join(dir, 'stage');
// The PATH a fresh login shell has: no node_modules/.bin, /usr/bin/node first.
const systemPath = '/usr/local/bin:/usr/bin:/bin';

beforeAll(() => {
  makeInstall({ PREFIX: prefix });
  makeInstall({ DESTDIR: destdir });
}, 120_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const run = (cmd: string, args: string[], env: Record<string, string> = {}) =>
  spawnSync(cmd, args, { encoding: 'utf8', env: { PATH: systemPath, HOME: dir, ...env } });

describe('make install', () => {
  it('puts a fibkeeper command on the PATH that runs although the PATH’s node is too old', () => {
    const systemNode = run('node', ['--version']);
    // What this test is about: the `node` on that PATH is one bin/fibkeeper.js refuses.
    const viaEnv = run('node', ['bin/fibkeeper.js', 'version']);
    console.log(`node on ${systemPath}: ${systemNode.stdout.trim() || systemNode.error?.message}`);
    if (systemNode.status === 0) expect(viaEnv.stderr).toMatch(/is not supported/);

    const bin = join(prefix, 'bin', 'fibkeeper');
    const version = run(bin, ['version'], { PATH: `${join(prefix, 'bin')}:${systemPath}` });
    expect(version.stderr).toBe('');
    expect(version.status).toBe(0);
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };
    expect(version.stdout).toMatch(new RegExp(`^fibkeeper ${pkg.version} \\(node v(2[4-9]|22)\\.`));
    const example = run(bin, ['config', 'example']);
    expect(example.status, example.stderr).toBe(0);
    const source = spawnSync(process.execPath, ['bin/fibkeeper.js', 'config', 'example'], {
      encoding: 'utf8',
    });
    expect(parseYaml(example.stdout)).toEqual(parseYaml(source.stdout));
  });

  it('starts Node.js with every V8 flag of the agent: `run` needs no re-exec', () => {
    const script = readFileSync(join(prefix, 'bin', 'fibkeeper'), 'utf8');
    const m = /^exec '([^']+)' (.*) '([^']+)' "\$@"$/m.exec(script);
    expect(m, script).not.toBeNull();
    const [, node, flags, entry] = m!;
    expect(node).toBe(join(prefix, 'lib', 'fibkeeper', 'node', 'bin', 'node'));
    expect(entry).toBe(join(prefix, 'lib', 'fibkeeper', 'bin', 'fibkeeper.js'));
    expect(reexecArgs(flags!.split(' '), ['node', entry!, 'run'], {})).toBeUndefined();
  });

  it('with DESTDIR, stages under it the files that name PREFIX’s paths', () => {
    const usrLocal = join(destdir, 'usr', 'local');
    const script = readFileSync(join(usrLocal, 'bin', 'fibkeeper'), 'utf8');
    expect(script).toContain("exec '/usr/local/lib/fibkeeper/node/bin/node' ");
    expect(script).not.toContain(destdir);
    for (const f of [
      'lib/fibkeeper/bin/fibkeeper.js',
      'lib/fibkeeper/dist/cli/index.js',
      'lib/fibkeeper/build/bpf/xdp_fwd.o',
      'lib/fibkeeper/native/build/Release/fibkeeper.node',
      'lib/fibkeeper/node_modules/yaml/package.json',
      'share/man/man1/fibkeeper.1',
      'share/man/man5/fibkeeper.yaml.5',
    ]) {
      expect(existsSync(join(usrLocal, f)), f).toBe(true);
    }
    // The unit it installs is the shipped one; with another PREFIX its paths are PREFIX's.
    const unit = join('lib', 'systemd', 'system', 'fibkeeper.service');
    const shipped = readFileSync('deploy/systemd/fibkeeper.service', 'utf8');
    expect(readFileSync(join(usrLocal, unit), 'utf8')).toBe(shipped);
    expect(readUnit(join(prefix, unit)).get('ExecStart')?.[0]).toBe(
      `${prefix}/bin/fibkeeper run --config /etc/fibkeeper/config.yaml`,
    );
  });
});

describe('the man pages', () => {
  const page = (section: number, name: string) =>
    join(prefix, 'share', 'man', `man${section}`, name);
  const render = (file: string, width: number) => {
    const r = run('man', ['-l', '--warnings', file], { MANWIDTH: String(width), LANG: 'C.UTF-8' });
    // One space between words, ASCII hyphens (groff prints \- as U+2212 in UTF-8).
    return { ...r, text: r.stdout.replace(/[\u2010\u2212]/g, '-').replace(/\s+/g, ' ') };
  };

  it('are plain ASCII that groff reads without a warning of any kind', () => {
    for (const [section, name] of [
      [1, 'fibkeeper.1'],
      [5, 'fibkeeper.yaml.5'],
    ] as const) {
      const r = run('groff', ['-man', '-ww', '-z', '-Tutf8', page(section, name)]);
      expect(r.stderr, name).toBe('');
      expect(readFileSync(page(section, name), 'utf8')).toMatch(/^[\x00-\x7f]*$/);
    }
  });

  it('fibkeeper(1) renders without warnings and names every command', () => {
    const r = render(page(1, 'fibkeeper.1'), 80);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    for (const c of COMMANDS) expect(r.text).toContain(`fibkeeper ${c.name} `);
    expect(r.text).toContain('FIBKEEPER_SOCKET');
    // man finds it by name where it was installed.
    const where = run('man', ['-w', 'fibkeeper'], { MANPATH: join(prefix, 'share', 'man') });
    expect(where.stdout.trim()).toBe(page(1, 'fibkeeper.1'));
  });

  it('fibkeeper.yaml(5) renders without warnings and names every option and its flag', () => {
    const r = render(page(5, 'fibkeeper.yaml.5'), 80);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    for (const o of OPTIONS) {
      expect(r.text).toContain(` ${o.path} (${o.type}, default `);
      expect(r.text).toContain(`flag --${flagName(o.path)})`);
    }
    const where = run('man', ['-w', 'fibkeeper.yaml'], { MANPATH: join(prefix, 'share', 'man') });
    expect(where.stdout.trim()).toBe(page(5, 'fibkeeper.yaml.5'));
  });
});
