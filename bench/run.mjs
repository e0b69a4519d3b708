// `make bench`: runs every benchmark under bench/*/run.mjs (each writes
// bench/results/<name>.json), then writes BENCHMARKS.md (figure, same-run reference, ratio,
// target) and bench/results/neighbor-convergence.svg. Needs root and `make build`.
//
//   node bench/run.mjs              run all, then report
//   node bench/run.mjs --only xdp   run one (by directory name), then report
//   node bench/run.mjs --report     only rewrite the report from the existing results
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));
const root = join(here, '..');
const results = join(here, 'results');
const args = process.argv.slice(2);
const only = args.includes('--only') ? args[args.indexOf('--only') + 1] : undefined;

const benches = readdirSync(here, { withFileTypes: true })
  .filter((d) => d.isDirectory() && existsSync(join(here, d.name, 'run.mjs')))
  .map((d) => d.name)
  .filter((n) => !only || n === only)
  .sort();

let failed = 0;
if (!args.includes('--report')) {
  for (const name of benches) {
    console.log(`\n=== bench/${name}`);
    const r = spawnSync(process.execPath, [join(here, name, 'run.mjs')], {
      stdio: 'inherit',
      cwd: root,
    });
    if (r.status !== 0) {
      console.log(`bench/${name} failed (exit ${r.status})`);
      failed++;
    }
  }
}

/** Every result file as a list of figures in one shape. */
function figuresOf(json) {
  if (Array.isArray(json.figures)) {
    return json.figures.map((f) => ({
      name: f.name,
      value: f.value,
      unit: f.unit ?? json.unit ?? '',
      reference: f.reference,
      referenceName: f.referenceName ?? f.note ?? '',
      ratio: f.ratio,
      target: f.target,
      targetText: f.targetMeaning ?? f.targetKind ?? f.note?.match(/target[^;]*$/)?.[0] ?? '',
      pass: f.pass,
    }));
  }
  return [
    {
      name: json.benchmark,
      value: json.figure,
      unit: json.unit ?? '',
      reference: json.reference,
      referenceName: json.referenceName ?? '',
      ratio: json.ratio,
      target: json.target,
      targetText: json.targetMeaning ?? '',
      pass: json.pass,
    },
  ];
}

/** What a reader needs to know to judge a benchmark's figures. */
const NOTES = {
  neighbor:
    'Command: `node bench/neighbor/run.mjs --no-soak --no-scale` (`make bench` runs the soak ' +
    'and scale parts too). The convergence target reads "≥ 4× faster than `ip -batch`"; here ' +
    'raw `neighSetMany` of the same entries is only about 2–3× `ip -batch` (the kernel starts ' +
    'resolution inside each `sendmsg`), so 4× `ip -batch` is faster than the kernel itself takes ' +
    'the writes; the meaningful reading is the share of the raw-netlink writer (`*_share_of_raw`, ' +
    'target ≥ 0.6). Both sides write what fibkeeper writes at that size: `managed` up to ' +
    '`rateLimit` (1,000) entries, `use` (the legacy path auto runs) above. The peer answers ' +
    'every ARP request (proxy ARP), so every side pays the same resolution cost.',
  'neighbor-soak':
    'Command: `node bench/neighbor/soak.mjs --n 100000 --seconds 600 --modes managed,legacy,auto`. ' +
    "100,000 on-link next hops on one veth, the peer answering by proxy ARP, the kernel's " +
    'default neighbor parameters, `rateLimit` 1,000, 10 minutes per path after convergence; ' +
    'usable = REACHABLE, STALE, DELAY or PROBE with an address, over all 100,000; requests = ' +
    "frames the agent's device sent (all ARP). The documented bound is 3 × `rateLimit` " +
    'requests per second; `auto` runs the legacy path at this size. Managed entries miss both ' +
    'targets: that is why `auto` does not run them above `rateLimit` entries.',
  'neighbor-scale':
    'Command: `node bench/neighbor/scale.mjs --n 1000000`. One device, 1,000,000 on-link ' +
    "next hops (extern_learn: no gc_thresh3), the kernel's reachable time, so entries go " +
    'STALE and are refreshed during the latency and status measurements. The raw-netlink ' +
    'reference writes exactly the entries fibkeeper writes (legacy flags: `auto` at this size).',
  'neighbor-whole':
    'Command: `node bench/neighbor/whole.mjs` (several rounds, merged with `--merge`: every run ' +
    'is listed, `_rN` its round). The whole agent as a user runs it — `fibkeeper run` with the ' +
    'control API, the state file, XDP, external IPs, metrics and the miss tracker on — managing ' +
    'the bench namespace; N on-link forwardable IPs sent in one bulk request (text/plain). ' +
    'Convergence runs from the API call to the last entry in the kernel, against `ip -batch` ' +
    'writing the same entries with the same flags (mean of a run before and after the agent). ' +
    'RSS peak is VmHWM over the whole run. Route changes are measured while another owner adds ' +
    'and removes an IP every 200 ms (each a state-file save). Every entry is extern_learn.',
  'neighbor-resync':
    'Command: `node bench/neighbor/resync.mjs --sizes 100000,1000000 --runs 2`. The whole agent as ' +
    'whole.mjs runs it, with neighbor.resyncInterval shortened (30 s, 60 s above 100,000) so that ' +
    'a periodic full resync (every next hop looked up again, the prune dump) falls after the load: ' +
    "VmHWM just before it (the load's peak) and 15 s after it. Before this pass the resync added " +
    '8-11 MiB at 100,000 and 22-25 MiB at 1,000,000 to the peak (docs/neighbor.md).',
  'neighbor-statefile':
    'Command: `node bench/neighbor/statefile.mjs`. The state file of 1,000,000 forwardable IPs ' +
    "through the agent's own StateStore: its size, the first save (the whole file, streamed), " +
    'a save of one change (a journal line), the whole file written again (compaction) and a ' +
    'restart reading it back; "held" is the longest the event loop waited during the save.',
  xdp:
    'Command: `node bench/xdp/run.mjs`. fk_xdp_fwd runs with every check of issue 9 on (destination ' +
    'MAC, header checksum, martians, the local-source table, multipath policy 0, trim, route MTU). ' +
    'On this two-core VM the rounds of one run spread by up to 30% even with nothing else running, ' +
    'so the ratios move between runs. Eight runs on 2026-12-01 (22:16–22:30 UTC; no other benchmark, ' +
    'test suites of other worktrees at times) gave: test-run 1.03–1.18 (IPv4, median 1.08; the 1.10 ' +
    'target met in 5 of 8) and 0.98–1.11 (IPv6; met in 7 of 8); live 2.38–2.74 (IPv4, median 2.49; ' +
    'the 2.5 target met in 4 of 8) and 1.49–1.80 (IPv6, median 1.64; the 1.6 target met in 6 of 8). ' +
    'This file is the upper of the two median runs by IPv4 live ratio (2.47, 2.50). In the same ' +
    'rounds the bare reference forwarder reached 2.44–2.90 (median 2.52) and 1.48–1.82 (median 1.63) ' +
    'of the kernel (live_*_reference): the targets sit at what any XDP forwarder reaches here, and ' +
    'fk_xdp_fwd is within the noise of it. Nine earlier runs ' +
    'of the same program (21:56–22:15, before the reference joined the live rounds) gave test-run ' +
    '0.92–1.24 / 0.98–1.10 and live 2.36–2.76 / 1.49–1.91. The forwarding path runs 282 BPF ' +
    'instructions for an IPv4 SUCCESS (276 IPv6; 343 and 332 before it was reshaped, the reference ' +
    '103 and 115). Against the program before that, in the same run (`--baseline`, three runs): live ' +
    'IPv4 0.93–1.08 and IPv6 1.00–1.04 of its frames per second, test-run IPv4 0.99–1.06 and IPv6 ' +
    '0.88–1.06 of its cost, all within this noise; many short alternating rounds put live IPv4 0–2% ' +
    'ahead. Issue 23 (the node-policy checks of an empty ruleset, the watch byte, the rp_filter ' +
    'cache), three runs of the final program on 2026-12-05 (05:51–06:02 UTC, suites of other ' +
    'worktrees running: load 3.7–4.3 on two cores): test-run IPv4 1.04, 1.05, 1.04 and IPv6 1.00, ' +
    '1.01, 1.00 of the reference; live 0.97, 0.96, 0.96 (IPv4) and 0.98, 0.99, 0.97 (IPv6) of it; ' +
    'rp_filter 1.10, 1.10, 1.13 of the program without it (1.74–1.82 with a reverse lookup per ' +
    'packet). Four runs of the program before the watch (04:58–05:39) gave test-run 1.05, 1.24, ' +
    '1.05, 1.05 / 1.04–1.06, live 0.96–0.99 / 0.96–0.99, rp_filter 1.11, 0.93, 1.12, 1.13 (the 1.24 ' +
    'run had 4 of its 7 fk rounds at 162–167 ns against 139–140 in the others). This file is the ' +
    'last final run. testrun_ipv4_rp_filter is the rp_filter emulation (the reverse ' +
    'bpf_fib_lookup, cached per CPU and flow: one lookup per flow and generation of the ' +
    "agent's kernel state) against the same program without it.",
  bgp:
    'Command: `node bench/bgp/run.mjs --n 1000 --rounds 10` (load average about 1). ' +
    'One node (agent + its BIRD 2 child), an FRR 8.4 router (zebra, bgpd, bfdd) and a client, ' +
    'each in its namespace. add-to-fib: one POST /v1/extip of 1,000 IPv4 IPs (DAD 100 ms) to ' +
    "each /32 first seen in a dump of the router's FIB every 5 ms; reference: a BIRD given the " +
    'same routes by `birdc configure`. first-reply: 20 of the IPs pinged from the client every ' +
    '10 ms from before the add. kill/cut-withdraw: SIGKILL of the agent, or every packet of ' +
    "the node dropped with its link up (BFD 3 × 100 ms), to the route leaving the router's " +
    'FIB; reference: a static BIRD killed or cut the same way; p99 of 10 rounds is their maximum.',
  cluster:
    'Command: `node bench/cluster/run.mjs --rounds 20`. Three nodes ' +
    'and a client on one bridge; fibkeeper (three agents, default cluster settings, a local ' +
    'etcd) and Debian keepalived 2.2.7 (VRRPv3, priorities 100/90/80, advert_int 0.01 and 1) ' +
    'one after the other in the same run, with the same client (ping every 10 ms) and the ' +
    'same faults on the node answering for the IP. A figure is the time from the fault to ' +
    'the first echo reply from another node; dual answers are rounds (10 ms) in which two ' +
    'nodes answered one ARP request, or one IP-level probe (ICMP echo and TCP SYN through ' +
    'every node MAC). The table below lists every system and fault of the run.',
  faults:
    'Command: `node bench/faults/run.mjs --seconds 120`. Per error class, two minutes of ' +
    '`fibkeeper run` in the lab router with that class injected at the native boundary ' +
    '(FIBKEEPER_TEST_FAULTS, armed once ready) under route churn, a link flap every 2 s and ' +
    'API traffic; the figure is the time until the kernel matched the desired state computed ' +
    'with `ip route get … fibmatch` after the churn; pass also needs /livez and the API to ' +
    "have answered throughout and a clean stop. Run `none` injects nothing: issue 24's " +
    'workload (extip checks every 50 ms), which must show no EINVAL at all.',
  'route-churn':
    'Command: `node bench/routes/run.mjs` (100,000 routes, 10,000 `route replace` per round, 5 ' +
    "rounds). The agent's CPU to follow the changes, idle subtracted, against the CPU `ip " +
    '-batch` itself takes for them. Before the shared route feed (the XDP forwarder dumping ' +
    'every route per pass, the neighbor subsystem and the forwarder each parsing every event, ' +
    'a route dump after every periodic device dump), the same command measured 2,795.64 ms ' +
    '(21.18× `ip -batch`; 1,593–1,915 ms in the rounds without a periodic dump in them).',
  'netlink-neigh':
    'A raw C writer of the same entries (not committed) reached about 5× `ip -batch` here, ' +
    'not the 8× the target assumed; the client runs at about 90% of it.',
};

const fmt = (v) =>
  v === null || v === undefined ? '—' : typeof v === 'number' ? String(+v.toFixed(3)) : String(v);
const files = existsSync(results)
  ? readdirSync(results)
      .filter((f) => f.endsWith('.json'))
      .sort()
  : [];
const lines = [
  '# Benchmarks',
  '',
  'Written by `make bench` (`node bench/run.mjs`); every figure is compared with a reference',
  'measured in the same run on the same machine, because these machines are noisy. Raw',
  'results: `bench/results/*.json`.',
  '',
];
for (const f of files) {
  const json = JSON.parse(readFileSync(join(results, f), 'utf8'));
  // Measurements that are not a report (no figures: cluster-lease.json, the lease timing
  // that docs/cluster.md tabulates) stay in their own documents.
  if (!Array.isArray(json.figures) && json.benchmark === undefined) continue;
  lines.push(`## ${json.benchmark ?? f.replace(/\.json$/, '')}`, '');
  const meta = [json.kernel && `kernel ${json.kernel}`, json.date && `run ${json.date}`]
    .filter(Boolean)
    .join(', ');
  if (meta) lines.push(meta, '');
  lines.push(
    '| figure | value | reference (same run) | ratio | target | pass |',
    '|---|---|---|---|---|---|',
  );
  for (const x of figuresOf(json)) {
    lines.push(
      `| ${x.name} | ${fmt(x.value)} ${x.unit} | ${fmt(x.reference)}${x.referenceName ? ` — ${x.referenceName}` : ''} | ${fmt(x.ratio)} | ${fmt(x.target)}${x.target !== null && x.target !== undefined && x.targetText ? ` (${x.targetText})` : ''} | ${x.pass === true ? 'yes' : x.pass === false ? '**no**' : '—'} |`,
    );
  }
  lines.push('');
  if (NOTES[json.benchmark]) lines.push(NOTES[json.benchmark], '');
  // A result may carry its own table (bench/cluster: every system and fault of the run).
  if (typeof json.table === 'string') lines.push(json.table, '');
}

// Neighbor convergence time against N: fibkeeper and ip -batch.
const median = (a) => {
  const s = [...a].sort((x, y) => x - y);
  return s.length ? s[Math.floor(s.length / 2)] : NaN;
};
const neighbor = join(results, 'neighbor.json');
if (existsSync(neighbor)) {
  const runs = (JSON.parse(readFileSync(neighbor, 'utf8')).runs ?? [])
    .filter((r) => r.ms?.fibkeeper && r.ms?.ipBatch)
    .map((r) => ({ n: r.n, fk: median(r.ms.fibkeeper), ip: median(r.ms.ipBatch) }))
    .sort((a, b) => a.n - b.n);
  const soakFile = join(results, 'neighbor-soak.json');
  const soak = existsSync(soakFile) ? JSON.parse(readFileSync(soakFile, 'utf8')) : undefined;
  if (runs.length > 0) {
    const svg = chart(runs);
    writeFileSync(
      join(results, 'neighbor-convergence.svg'),
      soak === undefined ? svg : stack(svg, soakChart(soak)),
    );
    lines.push(
      '## Neighbor convergence against N, and the steady state at 100,000',
      '',
      '![neighbor convergence](bench/results/neighbor-convergence.svg)',
      '',
    );
  }
}
writeFileSync(join(root, 'BENCHMARKS.md'), lines.join('\n'));
console.log(`\nwrote BENCHMARKS.md${failed ? `; ${failed} benchmark(s) failed` : ''}`);
process.exitCode = failed ? 1 : 0;

/** A log-log line chart of convergence time (ms) against N for both sides. */
function chart(runs) {
  const W = 640,
    H = 400,
    L = 70,
    R = 160,
    T = 40,
    B = 50;
  const xs = runs.map((r) => r.n);
  const ys = runs.flatMap((r) => [r.fk, r.ip]);
  const lx = (v) => Math.log10(v);
  const [x0, x1] = [Math.floor(lx(Math.min(...xs))), Math.ceil(lx(Math.max(...xs)))];
  const [y0, y1] = [Math.floor(lx(Math.min(...ys))), Math.ceil(lx(Math.max(...ys)))];
  const px = (v) => L + ((lx(v) - x0) / Math.max(1, x1 - x0)) * (W - L - R);
  const py = (v) => H - B - ((lx(v) - y0) / Math.max(1, y1 - y0)) * (H - T - B);
  const line = (key, color, label, i) =>
    `<polyline fill="none" stroke="${color}" stroke-width="2" points="${runs.map((r) => `${px(r.n).toFixed(1)},${py(r[key]).toFixed(1)}`).join(' ')}"/>` +
    runs
      .map(
        (r) =>
          `<circle cx="${px(r.n).toFixed(1)}" cy="${py(r[key]).toFixed(1)}" r="3" fill="${color}"/>`,
      )
      .join('') +
    `<text x="${W - R + 15}" y="${T + 20 + i * 20}" fill="${color}" font-size="13">${label}</text>`;
  const grid = [];
  for (let e = x0; e <= x1; e++)
    grid.push(
      `<text x="${px(10 ** e)}" y="${H - B + 20}" font-size="11" text-anchor="middle">${(10 ** e).toLocaleString('en')}</text>`,
    );
  for (let e = y0; e <= y1; e++) {
    grid.push(
      `<line x1="${L}" x2="${W - R}" y1="${py(10 ** e)}" y2="${py(10 ** e)}" stroke="#ddd"/>`,
    );
    grid.push(
      `<text x="${L - 8}" y="${py(10 ** e) + 4}" font-size="11" text-anchor="end">${10 ** e} ms</text>`,
    );
  }
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${L}" y="24" font-size="15">Neighbor convergence from empty: time until every entry is in the kernel</text>`,
    ...grid,
    `<line x1="${L}" x2="${W - R}" y1="${H - B}" y2="${H - B}" stroke="#333"/><line x1="${L}" x2="${L}" y1="${T}" y2="${H - B}" stroke="#333"/>`,
    `<text x="${(L + W - R) / 2}" y="${H - 12}" font-size="12" text-anchor="middle">forwardable IPs (N), log scale</text>`,
    line('fk', '#1f77b4', 'fibkeeper', 0),
    line('ip', '#d62728', 'ip -batch', 1),
    '</svg>',
    '',
  ].join('\n');
}

/** Two SVG documents one above the other, in one document. */
function stack(top, bottom) {
  const size = (svg) => {
    const m = /width="(\d+)" height="(\d+)"/.exec(svg);
    return { w: Number(m?.[1] ?? 640), h: Number(m?.[2] ?? 400) };
  };
  const a = size(top);
  const b = size(bottom);
  const inner = (svg) => svg.replace(/^<svg[^>]*>\n?/, '').replace(/<\/svg>\s*$/, '');
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${Math.max(a.w, b.w)}" height="${a.h + b.h}" font-family="sans-serif">`,
    inner(top),
    `<g transform="translate(0,${a.h})">`,
    inner(bottom),
    '</g>',
    '</svg>',
    '',
  ].join('\n');
}

/**
 * The steady state (bench/neighbor/soak.mjs): usable share of the entries (top) and ARP
 * requests per second on the wire (bottom) over time, one line per refresh mode.
 */
function soakChart(soak) {
  const W = 640,
    H = 420,
    L = 70,
    R = 160,
    T = 40;
  const modes = Object.keys(soak.series ?? {});
  const colors = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd'];
  const tMax = Math.max(1, ...modes.flatMap((m) => soak.series[m].map((x) => x.t)));
  const reqMax = Math.max(10, ...modes.flatMap((m) => soak.series[m].map((x) => x.requestsPerS)));
  const bound = 3 * (soak.rateLimit ?? 1000);
  const yTop = Math.max(reqMax, bound) * 1.05;
  // Panel 1: usable %, 0-100; panel 2: requests/s, 0-yTop.
  const p1 = { y0: T, y1: T + 150 };
  const p2 = { y0: T + 190, y1: H - 40 };
  const px = (t) => L + (t / tMax) * (W - L - R);
  const py1 = (u) => p1.y1 - (u / 100) * (p1.y1 - p1.y0);
  const py2 = (v) => p2.y1 - (v / yTop) * (p2.y1 - p2.y0);
  const out = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${L}" y="24" font-size="15">Steady state, ${Number(soak.n).toLocaleString('en')} next hops on one device, rateLimit ${soak.rateLimit}/s</text>`,
  ];
  for (const [p, label] of [
    [p1, 'usable entries (%)'],
    [p2, 'ARP requests / s'],
  ]) {
    out.push(
      `<line x1="${L}" x2="${W - R}" y1="${p.y1}" y2="${p.y1}" stroke="#333"/><line x1="${L}" x2="${L}" y1="${p.y0}" y2="${p.y1}" stroke="#333"/>`,
      `<text x="${L - 8}" y="${p.y0 - 8}" font-size="11">${label}</text>`,
    );
  }
  for (const u of [0, 50, 100]) {
    out.push(
      `<line x1="${L}" x2="${W - R}" y1="${py1(u)}" y2="${py1(u)}" stroke="#ddd"/>`,
      `<text x="${L - 6}" y="${py1(u) + 4}" font-size="11" text-anchor="end">${u}</text>`,
    );
  }
  for (const v of [0, Math.round(yTop / 2), Math.round(yTop)]) {
    out.push(`<text x="${L - 6}" y="${py2(v) + 4}" font-size="11" text-anchor="end">${v}</text>`);
  }
  out.push(
    `<line x1="${L}" x2="${W - R}" y1="${py2(bound)}" y2="${py2(bound)}" stroke="#999" stroke-dasharray="4 3"/>`,
    `<text x="${W - R + 5}" y="${py2(bound) + 4}" font-size="11" fill="#666">bound 3 x rateLimit</text>`,
  );
  for (let t = 0; t <= tMax; t += tMax > 300 ? 120 : 60) {
    out.push(
      `<text x="${px(t)}" y="${p2.y1 + 16}" font-size="11" text-anchor="middle">${t} s</text>`,
    );
  }
  modes.forEach((m, i) => {
    const c = colors[i % colors.length];
    const xs = soak.series[m];
    const label = `${m}${soak.runs?.[m]?.running && soak.runs[m].running !== m ? ` (${soak.runs[m].running})` : ''}`;
    out.push(
      `<polyline fill="none" stroke="${c}" stroke-width="2" points="${xs.map((x) => `${px(x.t).toFixed(1)},${py1(x.usable * 100).toFixed(1)}`).join(' ')}"/>`,
      `<polyline fill="none" stroke="${c}" stroke-width="1.5" points="${xs.map((x) => `${px(x.t).toFixed(1)},${py2(x.requestsPerS).toFixed(1)}`).join(' ')}"/>`,
      `<text x="${W - R + 15}" y="${T + 20 + i * 20}" fill="${c}" font-size="13">${label}</text>`,
    );
  });
  out.push('</svg>', '');
  return out.join('\n');
}
