// The routed lab of the BGP tests: an upstream router running FRR (zebra + bgpd, and bfdd
// when asked) in a namespace of its own, fibkeeper nodes peered to it over veth links, and a
// client behind the router. Every FRR daemon runs with its own config, pid file and vty
// socket under a temporary directory, and is killed by its PID when the test ends (pass or
// fail), before its namespace is deleted.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import {
  chownSync,
  existsSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onTestFinished } from 'vitest';
import { ip, makeNetns, nsExec, sysctl, vethPair, waitFor } from '../helpers/netns.js';
import { freePort } from '../helpers/ports.js';

export { freePort };

export const ROUTER_ASN = 65000;
export const NODE_ASN = 65001;
export const FRR = '/usr/lib/frr';
export const BIN = 'bin/fibkeeper.js';

/** Node i (1-based): its link to the router. */
export const nodeV4 = (i: number): string => `10.77.${i}.2`;
export const routerV4 = (i: number): string => `10.77.${i}.1`;
export const nodeV6 = (i: number): string => `fd77:${i}::2`;
export const routerV6 = (i: number): string => `fd77:${i}::1`;
export const CLIENT_V4 = '10.78.0.2';
export const CLIENT_V6 = 'fd78::2';

const uid = (name: string): number =>
  Number(spawnSync('id', ['-u', name], { encoding: 'utf8' }).stdout.trim());

export interface Router {
  ns: string;
  dir: string;
  vtysh(...cmds: string[]): string;
  /** `show bgp ipv4|ipv6 unicast json`'s routes. */
  bgpRoutes(family: 4 | 6): Record<string, { nexthops: { ip: string }[] }[]>;
  /** The kernel's route to `prefix` in the router namespace (`ip -j route show`), or []. */
  kernelRoute(prefix: string): {
    dst: string;
    gateway?: string;
    dev?: string;
    nexthops?: { gateway: string; dev?: string }[];
  }[];
  pids(): number[];
}

export interface RouterOptions {
  nodes: number;
  bfd?: boolean;
  /** Extra lines inside `router bgp`. */
  bgpExtra?: string[];
  /** Per node: lines for its neighbor (e.g. `password x`). */
  neighborExtra?: (i: number, addr: string) => string[];
}

const HEAD = ['frr defaults datacenter', 'hostname fkt-router', 'log stdout'];

/** Each daemon reads a file of its own: bgpd stops at a block it does not know (bfd). */
function daemonConf(d: string, o: RouterOptions): string {
  if (d === 'bgpd') return frrConf(o);
  if (d === 'bfdd') {
    const p = ['bfd', ' profile fast', '  receive-interval 100', '  transmit-interval 100'];
    return [...HEAD, ...p, '  detect-multiplier 3', ' exit', 'exit'].join('\n') + '\n';
  }
  // Routes with their next hops inline (not nexthop objects): `ip monitor route` shows them.
  return [...HEAD, 'no zebra nexthop kernel enable'].join('\n') + '\n';
}

function frrConf(o: RouterOptions): string {
  const l = [
    ...HEAD,
    `router bgp ${ROUTER_ASN}`,
    ' bgp router-id 10.77.0.1',
    ' no bgp ebgp-requires-policy',
    ' no bgp default ipv4-unicast',
    ' bgp bestpath as-path multipath-relax',
    ...(o.bgpExtra ?? []),
  ];
  const nbrs: [number, string, 4 | 6][] = [];
  for (let i = 1; i <= o.nodes; i++) nbrs.push([i, nodeV4(i), 4], [i, nodeV6(i), 6]);
  for (const [i, a] of nbrs) {
    l.push(` neighbor ${a} remote-as ${NODE_ASN}`, ' neighbor ' + a + ' timers connect 1');
    if (o.bfd) l.push(` neighbor ${a} bfd profile fast`);
    for (const x of o.neighborExtra?.(i, a) ?? []) l.push(` neighbor ${a} ${x}`);
  }
  for (const f of [4, 6] as const) {
    l.push(` address-family ipv${f} unicast`, '  maximum-paths 8');
    for (const [, a, fam] of nbrs) if (fam === f) l.push(`  neighbor ${a} activate`);
    l.push(' exit-address-family');
  }
  return l.join('\n') + '\n';
}

/** The router namespace with FRR running, one veth per node (nodeNs[i-1]), and the client. */
export async function makeRouter(
  nodeNs: string[],
  client: string,
  o: RouterOptions,
): Promise<Router> {
  const ns = makeNetns('bgpr');
  const dir = mkdtempSync(join(tmpdir(), 'fkt-frr-'));
  chownSync(dir, uid('frr'), uid('frr'));
  sysctl(ns, 'net.ipv4.ip_forward', 1);
  sysctl(ns, 'net.ipv6.conf.all.forwarding', 1);
  nodeNs.forEach((n, k) => {
    const i = k + 1;
    vethPair(ns, `n${i}`, n, 'ext0');
    ip(ns, 'addr', 'add', `${routerV4(i)}/24`, 'dev', `n${i}`);
    ip(ns, 'addr', 'add', `${routerV6(i)}/64`, 'dev', `n${i}`, 'nodad');
    ip(n, 'addr', 'add', `${nodeV4(i)}/24`, 'dev', 'ext0');
    ip(n, 'addr', 'add', `${nodeV6(i)}/64`, 'dev', 'ext0', 'nodad');
    ip(n, 'route', 'add', 'default', 'via', routerV4(i));
    ip(n, '-6', 'route', 'add', 'default', 'via', routerV6(i));
  });
  vethPair(ns, 'c1', client, 'eth0');
  ip(ns, 'addr', 'add', '10.78.0.1/24', 'dev', 'c1');
  ip(ns, 'addr', 'add', 'fd78::1/64', 'dev', 'c1', 'nodad');
  ip(client, 'addr', 'add', `${CLIENT_V4}/24`, 'dev', 'eth0');
  ip(client, 'addr', 'add', `${CLIENT_V6}/64`, 'dev', 'eth0', 'nodad');
  ip(client, 'route', 'add', 'default', 'via', '10.78.0.1');
  ip(client, '-6', 'route', 'add', 'default', 'via', 'fd78::1');
  const pidFiles: string[] = [];
  const kill = (): void => {
    for (const f of pidFiles) {
      try {
        process.kill(Number(readFileSync(f, 'utf8').trim()), 'SIGKILL');
      } catch {
        /* gone */
      }
    }
  };
  onTestFinished(() => {
    kill();
    rmSync(dir, { recursive: true, force: true });
  });
  const daemons = ['zebra', ...(o.bfd ? ['bfdd'] : []), 'bgpd'];
  for (const d of daemons) {
    const pid = join(dir, `${d}.pid`);
    const conf = join(dir, `${d}.conf`);
    writeFileSync(conf, daemonConf(d, o));
    pidFiles.push(pid);
    const args = [`${FRR}/${d}`, '-d', '-N', ns, '-i', pid, '--vty_socket', dir, '-f', conf];
    args.push('--log', `file:${join(dir, `${d}.log`)}`);
    args.push('-z', join(dir, 'zserv.api'));
    if (d === 'bfdd') args.push('--bfdctl', join(dir, 'bfdd.sock'));
    nsExec(ns, ...(args as [string, ...string[]]));
    await waitFor(() => existsSync(join(dir, `${d}.vty`)), { timeoutMs: 10_000, what: `${d} vty` });
  }
  const vtysh = (...cmds: string[]): string => {
    const r = spawnSync('vtysh', ['--vty_socket', dir, ...cmds.flatMap((c) => ['-c', c])], {
      encoding: 'utf8',
      timeout: 10_000,
    });
    if (r.status !== 0) throw new Error(`vtysh ${cmds.join('; ')}: ${r.stderr}${r.stdout}`);
    return r.stdout;
  };
  return {
    ns,
    dir,
    vtysh,
    bgpRoutes: (family) =>
      (
        JSON.parse(vtysh(`show bgp ipv${family} unicast json`)) as {
          routes?: Router['bgpRoutes'] extends (f: 4 | 6) => infer R ? R : never;
        }
      ).routes ?? {},
    kernelRoute: (prefix) =>
      JSON.parse(
        ip(ns, '-j', prefix.includes(':') ? '-6' : '-4', 'route', 'show', prefix) || '[]',
      ) as ReturnType<Router['kernelRoute']>,
    pids: () => pidFiles.map((f) => Number(readFileSync(f, 'utf8').trim())),
  };
}

export interface AgentHandle {
  proc: ChildProcess;
  dir: string;
  sock: string;
  port: number;
  logFile: string;
  cli(...args: string[]): { status: number | null; stdout: string; stderr: string };
  log(): string;
}

/** Starts `fibkeeper run` for node namespace `ns` with extip on ext0 and BGP to the router. */
export async function startAgent(
  ns: string,
  i: number,
  extra: string[] = [],
  opts: { wait?: boolean; peers?: string[]; runDir?: string } = {},
): Promise<AgentHandle> {
  const dir = mkdtempSync(join(tmpdir(), 'fkt-bgp-agent-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  const port = await freePort();
  const sock = join(dir, 'api.sock');
  const config = join(dir, 'config.yaml');
  writeFileSync(
    config,
    [
      `netns: ${ns}`,
      `stateFile: ${join(dir, 'state.json')}`,
      'xdp:\n  enabled: false',
      'neighbor:\n  enabled: false',
      'extip:',
      '  enabled: true',
      '  holderName: fkh0',
      '  holderKind: bridge',
      '  interface: ext0',
      '  dadInterval: 50ms',
      '  dadWait: 100ms',
      '  announceCount: 1',
      'bgp:',
      '  enabled: true',
      `  asn: ${NODE_ASN}`,
      `  routerId: ${nodeV4(i)}`,
      `  runDir: ${opts.runDir ?? join(dir, 'bgp')}`,
      `  peers: ${JSON.stringify(opts.peers ?? [`${routerV4(i)} as ${ROUTER_ASN}`, `${routerV6(i)} as ${ROUTER_ASN}`])}`,
      ...extra,
      `api:\n  socket: ${sock}`,
      `metrics:\n  address: 127.0.0.1:${port}`,
    ].join('\n') + '\n',
  );
  return runAgent(dir, sock, port, opts.wait);
}

/** `fibkeeper run` on the configuration an earlier startAgent wrote in `dir` (a restart). */
export async function runAgent(
  dir: string,
  sock: string,
  port: number,
  wait?: boolean,
): Promise<AgentHandle> {
  const config = join(dir, 'config.yaml');
  const logFile = join(dir, 'agent.log');
  const proc = spawn('node', [BIN, 'run', '--config', config], {
    stdio: ['ignore', openSync(logFile, 'a'), openSync(logFile, 'a')],
  });
  onTestFinished(async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      const done = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGKILL');
      await done;
    }
  });
  const h: AgentHandle = {
    proc,
    dir,
    sock,
    port,
    logFile,
    cli: (...args) =>
      spawnSync('node', [BIN, ...args, '--socket', sock], { encoding: 'utf8', timeout: 30_000 }),
    log: () => readFileSync(logFile, 'utf8'),
  };
  if (wait !== false) {
    await waitFor(
      async () => {
        if (proc.exitCode !== null) throw new Error(`agent exited: ${h.log().slice(-1500)}`);
        return (await httpGet(`http://127.0.0.1:${port}/readyz`).catch(() => undefined)) === 200;
      },
      { timeoutMs: 20_000, what: 'agent ready' },
    );
  }
  return h;
}

function httpGet(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    request(url, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    })
      .on('error', reject)
      .end();
  });
}

/** One ping from `ns` to `dst` (1 s timeout): true when answered. */
export function pingOnce(ns: string, dst: string): boolean {
  return spawnSync('ip', ['netns', 'exec', ns, 'ping', '-c', '1', '-W', '1', dst]).status === 0;
}

/** Every route event of the router namespace that names `ip`, as `ip monitor route` prints it. */
export function monitor(
  router: Router,
  ip: string,
): { events: string[]; stop: () => void; proc: ChildProcess } {
  const proc = spawn('ip', ['-n', router.ns, 'monitor', 'route'], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const events: string[] = [];
  let cur: string | undefined;
  let partial = '';
  proc.stdout!.on('data', (d: Buffer) => {
    const lines = (partial + d.toString()).split('\n');
    partial = lines.pop() ?? '';
    for (const l of lines) {
      if (l.startsWith('\t') || l.startsWith(' ')) {
        if (cur !== undefined) events[events.length - 1] += `\n${l}`;
        continue;
      }
      cur = l.includes(ip) ? l : undefined;
      if (cur !== undefined) events.push(l);
    }
  });
  return { events, proc, stop: () => proc.kill('SIGKILL') };
}

export const nextHops = (event: string): number =>
  event.startsWith('Deleted') ? 0 : Math.max(1, (event.match(/nexthop via/g) ?? []).length);
