#!/usr/bin/env node
// Benchmark of BGP announcement (src/bgp) through a real FRR router (zebra + bgpd + bfdd in a
// namespace of its own), beside the same daemon (BIRD 2) run alone from a static
// configuration as the same-run reference:
//
//  1. add-to-fib: one `POST /v1/extip` of N IPv4 external IPs (duplicate address detection
//     at 100 ms) → each IP's /32 in the router's kernel FIB (first seen in a dump of the
//     router namespace's routes, every 5 ms); p50 and p99 over the N IPs. Reference: a BIRD of the
//     same node, BFD and peer, given the same N routes by `birdc configure`, timed the same
//     way (no detection, no agent).
//  2. first-reply: the client pings a sample of the IPs every 10 ms from before the add; the
//     time of each one's first reply (p50/p99 over the sample).
//  3. kill-withdraw: SIGKILL of the agent (its BIRD gets SIGTERM, the parent-death signal,
//     and closes with a Cease) → its route gone from the router's FIB; reference: SIGKILL of
//     the static BIRD (a TCP close). p99 over the rounds (with few rounds, the maximum).
//  4. cut-withdraw: every packet of the node dropped (nft in the node namespace, link up) →
//     route gone (BFD 3 × 100 ms); reference: the static BIRD cut the same way. Goal ≤ 500 ms.
//
// Needs root, `make build`, bird2 and frr. Everything happens in namespaces of its own,
// deleted at the end; the daemons are killed by PID.
//
// Usage: node bench/bgp/run.mjs [--n 1000] [--rounds 5] [--sample 20]
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { flagValue } from '../args.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const argv = process.argv.slice(2);
const N = Number(flagValue(argv, '--n', '1000'));
const ROUNDS = Number(flagValue(argv, '--rounds', '5'));
const SAMPLE = Number(flagValue(argv, '--sample', '20'));
const GOAL_MS = 500;

const tag = randomBytes(3).toString('hex');
const R = `fkb-r-${tag}`,
  NODE = `fkb-n-${tag}`,
  C = `fkb-c-${tag}`;
const dir = mkdtempSync(join(tmpdir(), 'fk-bench-bgp-'));
const pids = new Set();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function sh(cmd, ...a) {
  const r = spawnSync(cmd, a, { encoding: 'utf8', maxBuffer: 1 << 28, input: a.input });
  if (r.status !== 0) throw new Error(`${cmd} ${a.join(' ')}: ${r.stderr}`);
  return r.stdout;
}
const ip = (ns, ...a) => sh('ip', '-n', ns, ...a);
const inNs = (ns, ...a) => sh('ip', 'netns', 'exec', ns, ...a);
async function until(fn, ms, what) {
  const end = Date.now() + ms;
  for (;;) {
    if (await fn()) return;
    if (Date.now() > end) throw new Error(`timed out: ${what}`);
    await sleep(5);
  }
}
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] : NaN;
};
const r1 = (x) => Math.round(x * 10) / 10;

function cleanup() {
  for (const p of pids) {
    try {
      process.kill(p, 'SIGKILL');
    } catch {}
  }
  for (const f of ['zebra', 'bfdd', 'bgpd']) {
    try {
      process.kill(Number(readFileSync(join(dir, `${f}.pid`), 'utf8')), 'SIGKILL');
    } catch {}
  }
  for (const ns of [R, NODE, C]) spawnSync('ip', ['netns', 'del', ns]);
  rmSync(dir, { recursive: true, force: true });
}
process.on('exit', cleanup);
process.on('SIGINT', () => process.exit(130));

function lab() {
  for (const ns of [R, NODE, C]) {
    sh('ip', 'netns', 'add', ns);
    ip(ns, 'link', 'set', 'lo', 'up');
  }
  inNs(R, 'sysctl', '-qw', 'net.ipv4.ip_forward=1');
  ip(R, 'link', 'add', 'n1', 'type', 'veth', 'peer', 'name', 'ext0', 'netns', NODE);
  ip(R, 'link', 'add', 'c1', 'type', 'veth', 'peer', 'name', 'eth0', 'netns', C);
  ip(R, 'addr', 'add', '10.77.1.1/24', 'dev', 'n1');
  ip(R, 'addr', 'add', '10.78.0.1/24', 'dev', 'c1');
  ip(NODE, 'addr', 'add', '10.77.1.2/24', 'dev', 'ext0');
  ip(C, 'addr', 'add', '10.78.0.2/24', 'dev', 'eth0');
  for (const [ns, d] of [
    [R, 'n1'],
    [R, 'c1'],
    [NODE, 'ext0'],
    [C, 'eth0'],
  ])
    ip(ns, 'link', 'set', d, 'up');
  ip(NODE, 'route', 'add', 'default', 'via', '10.77.1.1');
  ip(C, 'route', 'add', 'default', 'via', '10.78.0.1');
  chownSync(dir, Number(sh('id', '-u', 'frr')), Number(sh('id', '-g', 'frr')));
  const head = 'frr defaults datacenter\nhostname fkb\n';
  const confs = {
    zebra: head + 'no zebra nexthop kernel enable\n',
    bfdd:
      head + 'bfd\n profile fast\n  receive-interval 100\n  transmit-interval 100\n exit\nexit\n',
    bgpd:
      head +
      'router bgp 65000\n bgp router-id 10.77.1.1\n no bgp ebgp-requires-policy\n no bgp default ipv4-unicast\n' +
      ' neighbor 10.77.1.2 remote-as 65001\n neighbor 10.77.1.2 timers connect 1\n neighbor 10.77.1.2 bfd profile fast\n' +
      ' address-family ipv4 unicast\n  neighbor 10.77.1.2 activate\n exit-address-family\n',
  };
  for (const d of ['zebra', 'bfdd', 'bgpd']) {
    writeFileSync(join(dir, `${d}.conf`), confs[d]);
    const a = [
      '/usr/lib/frr/' + d,
      '-d',
      '-N',
      R,
      '-i',
      join(dir, `${d}.pid`),
      '--vty_socket',
      dir,
    ];
    a.push(
      '-f',
      join(dir, `${d}.conf`),
      '-z',
      join(dir, 'zserv.api'),
      '--log',
      `file:${join(dir, d + '.log')}`,
    );
    if (d === 'bfdd') a.push('--bfdctl', join(dir, 'bfdd.sock'));
    inNs(R, ...a);
  }
}

const bfdUp = () => {
  const r = spawnSync('vtysh', ['--vty_socket', dir, '-c', 'show bfd peers json'], {
    encoding: 'utf8',
  });
  try {
    // up, and the 100 ms rates negotiated (BFD starts slow: 1 s until the session is up)
    return JSON.parse(r.stdout).some(
      (p) =>
        p.peer === '10.77.1.2' &&
        p.status === 'up' &&
        p['remote-transmit-interval'] === 100 &&
        p['transmit-interval'] === 100,
    );
  } catch {
    return false;
  }
};
const fibCount = () =>
  ip(R, '-4', 'route', 'show', 'proto', 'bgp').split('\n').filter(Boolean).length;

/**
 * First time each IP's route was in the router's FIB, by dumping it every 5 ms (ip monitor
 * loses events in a burst of 1,000: its socket overflows).
 */
function poller() {
  const seen = new Map();
  let on = true;
  const loop = async () => {
    while (on) {
      const out = spawnSync('ip', ['-n', R, '-4', 'route', 'show', 'proto', 'bgp'], {
        encoding: 'utf8',
        maxBuffer: 1 << 26,
      }).stdout;
      const now = performance.now();
      for (const l of out.split('\n')) {
        const m = /^(\d+\.\d+\.\d+\.\d+) /.exec(l);
        if (m && !seen.has(m[1])) seen.set(m[1], now);
      }
      await sleep(5);
    }
  };
  const done = loop();
  return { seen, stop: async () => ((on = false), await done) };
}

const ipsOf = (n) =>
  Array.from({ length: n }, (_, i) => `192.168.${Math.floor(i / 250)}.${(i % 250) + 1}`);

function api(sock, method, path, body) {
  return new Promise((resolve, reject) => {
    const req = request(
      { socketPath: sock, method, path, headers: { 'content-type': 'application/json' } },
      (res) => {
        let t = '';
        res.on('data', (d) => (t += d));
        res.on('end', () =>
          res.statusCode === 200
            ? resolve(JSON.parse(t))
            : reject(new Error(`${res.statusCode} ${t}`)),
        );
      },
    );
    req.on('error', reject);
    req.end(body ? JSON.stringify(body) : undefined);
  });
}

async function startAgent(n) {
  const d = join(dir, `agent${n}`);
  mkdirSync(d, { recursive: true, mode: 0o700 });
  const conf = join(d, 'config.yaml');
  writeFileSync(
    conf,
    [
      `netns: ${NODE}`,
      `stateFile: ${join(d, 'state.json')}`,
      'xdp:\n  enabled: false',
      'neighbor:\n  enabled: false',
      'extip:\n  enabled: true\n  holderName: fkh0\n  holderKind: bridge\n  interface: ext0\n  dadWait: 100ms\n  dadInterval: 30ms\n  announceCount: 1',
      'bgp:\n  enabled: true\n  asn: 65001\n  routerId: 10.77.1.2',
      `  runDir: ${join(d, 'bgp')}`,
      '  peers: ["10.77.1.1 as 65000"]\n  bfd:\n    interval: 100ms\n    multiplier: 3',
      `api:\n  socket: ${join(d, 'api.sock')}`,
      'metrics:\n  address: ""',
    ].join('\n') + '\n',
  );
  const log = openSync(join(d, 'agent.log'), 'a');
  const p = spawn(process.execPath, [join(root, 'bin/fibkeeper.js'), 'run', '--config', conf], {
    stdio: ['ignore', log, log],
  });
  pids.add(p.pid);
  await until(
    () =>
      api(join(d, 'api.sock'), 'GET', '/v1/extip').then(
        () => true,
        () => false,
      ),
    20_000,
    'agent ready',
  ).catch((err) => {
    throw new Error(`${err.message}: ${readFileSync(join(d, 'agent.log'), 'utf8').slice(-1500)}`);
  });
  await until(bfdUp, 20_000, 'BFD up');
  return { p, sock: join(d, 'api.sock') };
}

function birdConf(ips) {
  const routes = ips.map((x) => `  route ${x}/32 blackhole;`).join('\n');
  return (
    `router id 10.77.1.2;\nprotocol device {}\nprotocol static s4 {\n  ipv4;\n${routes}\n}\n` +
    'protocol bfd { interface "*" { min rx interval 100 ms; min tx interval 100 ms; multiplier 3; }; }\n' +
    'protocol bgp p0 { local as 65001; neighbor 10.77.1.1 as 65000; bfd on; connect retry time 1;\n  ipv4 { import none; export where proto = "s4"; next hop self; }; }\n'
  );
}

async function startBird(ips) {
  const conf = join(dir, 'static.conf');
  const ctl = join(dir, 'static.ctl');
  writeFileSync(conf, birdConf(ips));
  const p = spawn('ip', ['netns', 'exec', NODE, 'bird', '-f', '-c', conf, '-s', ctl], {
    stdio: 'ignore',
  });
  pids.add(p.pid);
  await until(() => existsSync(ctl), 10_000, 'bird ctl');
  await until(bfdUp, 20_000, 'BFD up (static bird)');
  return { p, conf, ctl };
}

async function waitFib(n, ms = 30_000) {
  await until(() => fibCount() === n, ms, `${n} routes in the router FIB (now ${fibCount()})`);
}

async function killed(p, how) {
  const done = new Promise((r) => p.once('exit', r));
  const t0 = performance.now();
  if (how === 'kill') p.kill('SIGKILL');
  else
    inNs(
      NODE,
      'nft',
      'add table inet fkcut { chain i { type filter hook input priority -300; policy drop; }; chain o { type filter hook output priority -300; policy drop; }; }',
    );
  await until(() => fibCount() === 0, 200_000, 'route withdrawn');
  const ms = performance.now() - t0;
  if (how === 'cut') {
    inNs(NODE, 'nft', 'delete table inet fkcut');
    p.kill('SIGKILL');
  }
  await done;
  pids.delete(p.pid);
  return ms;
}

async function main() {
  lab();
  const ips = ipsOf(N);
  const sample = ips
    .filter((_, i) => i % Math.max(1, Math.floor(N / SAMPLE)) === 0)
    .slice(0, SAMPLE);

  // 1 + 2: the agent
  const agent = await startAgent(0);
  const mon = poller();
  const pingers = sample.map((x) => {
    const p = spawn('ip', ['netns', 'exec', C, 'ping', '-n', '-i', '0.01', '-W', '0.01', x], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    pids.add(p.pid);
    const o = { ip: x, first: undefined, p };
    p.stdout.on('data', (d) => {
      if (o.first === undefined && /bytes from/.test(String(d))) o.first = performance.now();
    });
    return o;
  });
  const t0 = performance.now();
  await api(agent.sock, 'POST', '/v1/extip', { ips });
  const tApi = performance.now() - t0;
  await waitFib(N);
  await until(() => mon.seen.size >= N, 5000, 'the poller saw every route');
  await until(
    () => pingers.every((o) => o.first !== undefined),
    30_000,
    'a reply from every sampled IP',
  );
  for (const o of pingers) (o.p.kill('SIGKILL'), pids.delete(o.p.pid));
  await mon.stop();
  const addLat = ips.map((x) => mon.seen.get(x) - t0);
  const replyLat = pingers.map((o) => o.first - t0);
  await killed(agent.p, 'kill');

  // 1 reference: the static daemon configured with the same routes
  const bird = await startBird([]);
  const mon2 = poller();
  writeFileSync(bird.conf, birdConf(ips));
  const t1 = performance.now();
  sh('birdc', '-s', bird.ctl, 'configure');
  await waitFib(N);
  await until(() => mon2.seen.size >= N, 5000, 'the poller saw every route');
  await mon2.stop();
  const refLat = ips.map((x) => mon2.seen.get(x) - t1);
  await killed(bird.p, 'kill');

  // 3 + 4: withdrawal after SIGKILL and after a cut, agent and static daemon alternating
  const res = { agentKill: [], birdKill: [], agentCut: [], birdCut: [] };
  for (let r = 0; r < ROUNDS; r++) {
    for (const how of ['kill', 'cut']) {
      const a = await startAgent(r + 1);
      await api(a.sock, 'POST', '/v1/extip', { ips: ['192.168.200.1'] });
      await waitFib(1);
      res[how === 'kill' ? 'agentKill' : 'agentCut'].push(await killed(a.p, how));
      const b = await startBird(['192.168.200.1']);
      await waitFib(1);
      res[how === 'kill' ? 'birdKill' : 'birdCut'].push(await killed(b.p, how));
    }
  }

  const fig = (name, description, xs, refXs, refName, p, target) => ({
    name,
    description,
    value: r1(pct(xs, p)),
    unit: 'ms',
    ...(refXs
      ? {
          reference: r1(pct(refXs, p)),
          referenceName: refName,
          ratio: Math.round((pct(xs, p) / pct(refXs, p)) * 100) / 100,
        }
      : {}),
    ...(target !== undefined
      ? { target, targetMeaning: 'value at most (ms)', pass: pct(xs, p) <= target }
      : {}),
    samples: xs.length,
  });
  const figures = [
    fig(
      'add-to-fib-p50',
      `POST /v1/extip of ${N} IPs → each /32 in the router's FIB, p50 (the API answered after ${r1(tApi)} ms)`,
      addLat,
      refLat,
      `the same ${N} routes given to a static BIRD by birdc configure`,
      50,
    ),
    fig('add-to-fib-p99', `the same, p99`, addLat, refLat, 'the same, p99', 99),
    fig(
      'first-reply-p50',
      `client's first echo reply from ${SAMPLE} sampled IPs of the ${N}, p50`,
      replyLat,
      undefined,
      undefined,
      50,
    ),
    fig('first-reply-p99', `the same, p99`, replyLat, undefined, undefined, 99),
    fig(
      'kill-withdraw-p99',
      `SIGKILL of the agent → route gone from the router's FIB, p99 of ${ROUNDS}`,
      res.agentKill,
      res.birdKill,
      'SIGKILL of a static BIRD',
      99,
      GOAL_MS,
    ),
    fig(
      'cut-withdraw-p99',
      `node silent (nft drop, link up) → route gone, BFD 3 × 100 ms, p99 of ${ROUNDS}`,
      res.agentCut,
      res.birdCut,
      'a static BIRD cut the same way',
      99,
      GOAL_MS,
    ),
  ];
  const out = {
    benchmark: 'bgp',
    n: N,
    rounds: ROUNDS,
    figures,
    raw: res,
    kernel: sh('uname', '-r').trim(),
    node: process.version,
    date: new Date().toISOString(),
  };
  mkdirSync(join(root, 'bench/results'), { recursive: true });
  writeFileSync(join(root, 'bench/results/bgp.json'), JSON.stringify(out, null, 2) + '\n');
  for (const f of figures) {
    console.log(
      `${f.name.padEnd(20)} ${String(f.value).padStart(8)} ms${f.reference !== undefined ? `   ref ${f.reference} ms (${f.ratio}×)` : ''}${f.pass !== undefined ? `   goal ≤ ${f.target}: ${f.pass ? 'yes' : 'no'}` : ''}`,
    );
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
