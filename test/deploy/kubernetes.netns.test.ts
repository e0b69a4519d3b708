// Conformance of the DaemonSet and the image: deploy/kubernetes/daemonset.yaml and the
// Dockerfile are read as the kubelet and a container runtime read them — the container's
// command line from the image's ENTRYPOINT/CMD and the DaemonSet's args with $(VAR)
// expanded from the downward API (the lab's node IPs, IPv4 or IPv6 first), the ConfigMap's file
// exactly as written, the volumes, the init container, the capabilities and the read-only
// root — and run so in a namespace lab (see sandbox.ts). The agent must pass the probes,
// answer `kubectl exec … fibkeeper …`, and forward in XDP; a degraded agent must stay alive.
import { spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { POLICY_BOUNDS } from '../../src/fib/index.js';
import { tempDir, trackChild } from '../helpers/cleanup.js';
import { privileged, waitFor } from '../helpers/netns.js';
import {
  IMAGE_PATH,
  base,
  expectForwardingInXdp,
  httpIn,
  nodeLabUp,
  runtimeImage,
  sample,
  waitOk,
  type NodeLab,
} from './lab.js';
import {
  containerArgv,
  containerEnv,
  imageCommand,
  readDaemonSet,
  readDockerfile,
  type Container,
  type HttpProbe,
} from './manifests.js';
import { execIn, startSandbox, type SandboxVolume } from './sandbox.js';

const { skip } = privileged();

let agent: ChildProcess | undefined;
let node: NodeLab | undefined;
let dir = '';

// Each test's agent, lab and temp dir go when it ends (trackChild, nodeLabUp, tempDir).

function logOf(): string {
  try {
    return readFileSync(join(dir, 'agent.log'), 'utf8').slice(-1500);
  } catch {
    return '';
  }
}

const alive = () =>
  agent?.exitCode === null ? undefined : `agent exited (${agent?.exitCode}): ${logOf()}`;

/** The capabilities a container gets: drop ALL, then add. */
function containerCaps(c: Container): string[] {
  const caps = c.securityContext?.capabilities;
  expect(caps?.drop).toEqual(['ALL']);
  return caps?.add ?? [];
}

function probeUrl(c: Container, p: HttpProbe, host: string): string {
  const port =
    typeof p.httpGet.port === 'number'
      ? p.httpGet.port
      : c.ports?.find((x) => x.name === p.httpGet.port)?.containerPort;
  expect(port, `probe port ${p.httpGet.port}`).toBeDefined();
  return `${base(host, port as number)}${p.httpGet.path}`;
}

const runtime = () => readDockerfile().at(-1) as NonNullable<ReturnType<typeof readDockerfile>[0]>;

describe.skipIf(skip)('deploy/kubernetes/daemonset.yaml as shipped', () => {
  for (const family of [4, 6] as const) {
    it(`starts from its own ConfigMap on a dual-stack IPv${family}-primary node, passes its probes and forwards in XDP; degraded is not dead`, async () => {
      node = nodeLabUp(`fkd${family}${randomBytes(2).toString('hex')}`);
      dir = tempDir('fkt-ds-');
      const ds = readDaemonSet();
      const pod = ds.podSpec;
      expect(pod.hostNetwork).toBe(true);
      const c = pod.containers.find((x) => x.name === 'fibkeeper') as Container;
      const image = runtime();
      expect(c.image).toMatch(/fibkeeper/);
      const nodeIp = node.nodeIp[family];
      // A dual-stack node: status.hostIPs has both families, this one (the primary) first.
      const other = node.nodeIp[family === 4 ? 6 : 4];
      const env = containerEnv(c, {
        'status.hostIP': nodeIp,
        'status.hostIPs': `${nodeIp},${other}`,
        'spec.nodeName': 'lab-node',
        'metadata.name': 'fibkeeper-lab',
        'metadata.namespace': 'fibkeeper',
      });
      const argv = containerArgv(c, imageCommand(image), env);
      expect(argv).toContain(`--cluster-node-ips=${nodeIp},${other}`);

      // Volumes as the pod mounts them. hostPath /sys/fs/bpf is the node's own (the lab's
      // /sys/fs/bpf, where the init container mounts a bpffs).
      const volumes: SandboxVolume[] = [];
      for (const m of c.volumeMounts ?? []) {
        const v = pod.volumes.find((x) => x.name === m.name);
        if (v?.hostPath?.path === '/sys/fs/bpf') {
          expect(m.mountPath).toBe('/sys/fs/bpf');
          continue;
        }
        const source = join(dir, 'volumes', m.name);
        mkdirSync(source, { recursive: true });
        if (v?.configMap) {
          const data = ds.configMaps.get(v.configMap.name);
          expect(data, `ConfigMap ${v.configMap.name}`).toBeDefined();
          for (const [file, text] of Object.entries(data ?? {})) {
            writeFileSync(join(source, file), text);
          }
        }
        volumes.push({ target: m.mountPath, source, readOnly: m.readOnly === true });
      }
      const img = runtimeImage(image);
      const init = (pod.initContainers ?? []).map((ic) =>
        containerArgv(ic, { entrypoint: [], cmd: [] }, {}),
      );
      expect(init.length, 'an init container mounts bpffs where the node has none').toBe(1);
      const sc = c.securityContext;
      agent = trackChild(
        startSandbox(
          {
            netns: node.router,
            dir,
            volumes: [...img.volumes, ...volumes],
            setup: img.setup,
            init,
            argv,
            env: { ...img.env, ...env },
            caps: containerCaps(c),
            noNewPrivs: sc?.allowPrivilegeEscalation === false,
            readOnlyRoot: sc?.readOnlyRootFilesystem === true,
            cwd: img.cwd,
          },
          openSync(join(dir, 'agent.log'), 'a'),
        ),
      );

      // The kubelet's probes, from the node's network, at the pod IP (= the node IP).
      for (const p of [c.startupProbe, c.readinessProbe, c.livenessProbe]) {
        expect(p).toBeDefined();
        await waitOk(node.router, probeUrl(c, p as HttpProbe, nodeIp), alive);
      }
      const pid = agent.pid as number;
      // The Prometheus annotations point at the metrics.
      const port = Number(ds.podAnnotations['prometheus.io/port']);
      const metrics = base(nodeIp, port);
      const m = httpIn(node.router, `${metrics}${ds.podAnnotations['prometheus.io/path']}`);
      expect(m.status).toBe(200);
      expect(sample(m.body, 'fibkeeper_agent_ready')).toBe(1);

      // kubectl exec -n fibkeeper ds/fibkeeper -- fibkeeper ...
      const kexec = (...a: string[]) => execIn(pid, ['fibkeeper', ...a], { PATH: IMAGE_PATH });
      const st = kexec('status');
      expect(st.err).toBe('');
      expect(st.out).toMatch(/ready: yes/);
      const add = kexec(
        'forwardable',
        'add',
        node.lab.addr.server1,
        node.lab.addr.server1v6,
        node.lab.addr.server2,
        '--owner',
        'k8s',
      );
      expect(add.err).toBe('');
      expect(add.code).toBe(0);
      expectForwardingInXdp(node, metrics);

      // kube-proxy on the node: its Service DNAT (iptables, the nft backend) makes every
      // IPv4 frame the kernel's, which the agent says within the bound; IPv6 stays in XDP
      const nat = (op: '-A' | '-D') =>
        spawnSync('ip', [
          ...['netns', 'exec', node!.router, 'iptables', '-t', 'nat', op, 'PREROUTING'],
          ...['-d', '10.96.0.10/32', '-p', 'udp', '--dport', '53', '-j', 'DNAT'],
          ...['--to-destination', `${node!.lab.addr.server1}:53`],
        ]);
      expect(nat('-A').status).toBe(0);
      const passed = (text: string) =>
        sample(text, 'fibkeeper_xdp_policy_passed', /direction="ipv4",reason="netfilter"/);
      await waitFor(() => passed(httpIn(node!.router, `${metrics}/metrics`).body) > 0, {
        timeoutMs: POLICY_BOUNDS.eventMs + 2000,
        what: 'the DNAT rule counted as netfilter on IPv4',
      });
      const mt = httpIn(node.router, `${metrics}/metrics`).body;
      expect(sample(mt, 'fibkeeper_xdp_node_policy', /mode="respect"/)).toBe(1);
      expect(sample(mt, 'fibkeeper_xdp_policy_passed', /direction="ipv6"/)).toBe(0);
      expect(kexec('status').out).toMatch(/ipv4 +kernel: netfilter +nft ip nat chain PREROUTING/);
      expect(nat('-D').status).toBe(0);

      // An operator detaches XDP on purpose: health says so, liveness does not restart it.
      expect(kexec('xdp', 'detach').code).toBe(0);
      const health = httpIn(node.router, `${metrics}/healthz`);
      expect(health.status).toBe(503);
      expect(health.body).toMatch(/xdp/);
      expect(httpIn(node.router, probeUrl(c, c.livenessProbe as HttpProbe, nodeIp)).status).toBe(
        200,
      );
      expect(httpIn(node.router, probeUrl(c, c.startupProbe as HttpProbe, nodeIp)).status).toBe(
        200,
      );
      expect(
        sample(httpIn(node.router, `${metrics}/metrics`).body, 'fibkeeper_agent_healthy'),
      ).toBe(0);

      // kubectl delete pod: SIGTERM, a clean exit within the grace period.
      const exited = new Promise<number | null>((r) => agent?.once('exit', (code) => r(code)));
      agent.kill('SIGTERM');
      expect(await exited).toBe(0);
    }, 90_000);
  }
});

describe.skipIf(skip)('the image (Dockerfile) as shipped', () => {
  it('runs its ENTRYPOINT and CMD with the config `fibkeeper config example` prints, and forwards', async () => {
    node = nodeLabUp(`fki${randomBytes(2).toString('hex')}`);
    dir = tempDir('fkt-img-');
    const image = runtime();
    const { entrypoint, cmd } = imageCommand(image);
    const argv = [...entrypoint, ...cmd];
    const configFlag = argv.indexOf('--config');
    expect(configFlag).toBeGreaterThan(0);
    const configPath = argv[configFlag + 1] as string;
    const example = spawnSync(process.execPath, ['bin/fibkeeper.js', 'config', 'example'], {
      encoding: 'utf8',
    });
    const etc = join(dir, 'etc');
    mkdirSync(etc);
    writeFileSync(join(etc, 'config.yaml'), example.stdout);
    expect(configPath).toBe('/etc/fibkeeper/config.yaml');
    const img = runtimeImage(image);
    // docker run --network host --cap-drop ALL --cap-add NET_ADMIN --cap-add BPF
    //   --cap-add PERFMON --cap-add NET_RAW -v /sys/fs/bpf:/sys/fs/bpf
    //   -v /etc/fibkeeper:/etc/fibkeeper:ro IMAGE   (README, Deployment)
    agent = trackChild(
      startSandbox(
        {
          netns: node.router,
          dir,
          volumes: [...img.volumes, { target: '/etc/fibkeeper', source: etc, readOnly: true }],
          setup: img.setup,
          init: [['mount', '-t', 'bpf', 'bpf', '/sys/fs/bpf']],
          argv,
          env: img.env,
          caps: ['NET_ADMIN', 'BPF', 'PERFMON', 'NET_RAW'],
          noNewPrivs: true,
          cwd: img.cwd,
        },
        openSync(join(dir, 'agent.log'), 'a'),
      ),
    );
    const metrics = 'http://127.0.0.1:9470';
    await waitOk(node.router, `${metrics}/readyz`, alive);
    const dexec = (...a: string[]) =>
      execIn(agent?.pid as number, ['fibkeeper', ...a], { PATH: IMAGE_PATH });
    expect(dexec('version').out).toMatch(/^fibkeeper \d+\.\d+\.\d+ \(node v24\./);
    expect(
      dexec(
        'forwardable',
        'add',
        node.lab.addr.server1,
        node.lab.addr.server1v6,
        node.lab.addr.server2,
        '--owner',
        'img',
      ).code,
    ).toBe(0);
    expectForwardingInXdp(node, metrics);
  }, 90_000);
});
