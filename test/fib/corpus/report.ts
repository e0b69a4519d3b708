// Comparing the two runs of a corpus case and printing the table.
import type { Case, Expect } from './case.js';
import type { Captured } from './lab.js';

/** The counters of one device, as x.counters() gives them. */
export interface Ctrs {
  actions: Record<string, { packets: number }>;
  results: Record<string, { packets: number }>;
  reasons: Record<string, { packets: number }>;
}

/** Counters that moved between two snapshots, as "actions.pass+1" etc., sorted. */
export function moved(a: Ctrs, b: Ctrs): string[] {
  const out: string[] = [];
  for (const kind of ['actions', 'results', 'reasons'] as const) {
    for (const [k, v] of Object.entries(b[kind])) {
      const d = v.packets - (a[kind][k]?.packets ?? 0);
      if (d !== 0) out.push(`${kind}.${k}${d > 0 ? '+' : ''}${d}`);
    }
  }
  return out.sort();
}

/** The counters an expectation means, sorted; reasons in `post` come after a SUCCESS. */
export function expectedMoves(e: Expect, post: ReadonlySet<string>): string[] {
  if (e === 'fwd') return ['actions.redirect+1', 'results.success+1'];
  const [kind, name] = e.split(':') as ['reason' | 'result', string];
  if (kind === 'result') return ['actions.pass+1', `results.${name}+1`].sort();
  const out = ['actions.pass+1', `reasons.${name}+1`];
  if (post.has(name)) out.push('results.success+1');
  return out.sort();
}

/** One line per frame that left the router: sink, length, what it is. */
export function describe(caps: readonly Captured[]): string[] {
  return caps
    .map(({ sink, frame }) => {
      const type = frame.readUInt16BE(12);
      let what = `0x${type.toString(16)}`;
      if (type === 0x0800 && frame.length >= 34) {
        const p = frame[23];
        what = p === 1 ? `icmp${frame[34]}` : `ip${p}`;
      } else if (type === 0x86dd && frame.length >= 54) {
        const p = frame[20];
        what = p === 58 ? `icmp6-${frame[54]}` : `ip6-${p}`;
        if (p === 58 && (frame[54] ?? 128) < 128 && frame.length >= 102) {
          what += `(${frame
            .subarray(86, 102)
            .toString('hex')
            .replace(/^(.{4})(.{4}).*(.{4})$/, '$1:$2..$3')})`;
        }
      }
      return `${sink}:${frame.length}:${what}`;
    })
    .sort();
}

/**
 * IPv4 ICMP packets the router sends itself back to the client (errors, redirects) carry an
 * IP ID from a counter that moves between the runs: compared without the ID and the header
 * checksum. Forwarded packets are compared whole (the corpus forwards no ICMP to c0).
 */
function normalized(sink: string, frame: Buffer): Buffer {
  if (frame.length < 34 || frame.readUInt16BE(12) !== 0x0800) return frame;
  const ts = timestampOption(frame);
  if (ts !== undefined) {
    // a timestamp option the kernel filled in: the time moves between the runs
    const f = Buffer.from(frame);
    f.fill(0, ts.start + 4, ts.end);
    f.writeUInt16BE(0, 24);
    return f;
  }
  if (sink !== 'c0') return frame;
  if (frame[23] !== 1) return frame;
  const f = Buffer.from(frame);
  f.writeUInt16BE(0, 18);
  f.writeUInt16BE(0, 24);
  return f;
}

/** Where an IPv4 timestamp option (68) lies in the frame, if there is one. */
function timestampOption(frame: Buffer): { start: number; end: number } | undefined {
  const ihl = (frame[14]! & 0xf) * 4;
  for (let i = 34; i < 14 + ihl && i < frame.length;) {
    const t = frame[i]!;
    if (t === 0) return undefined;
    if (t === 1) {
      i++;
      continue;
    }
    const len = frame[i + 1] ?? 0;
    if (len < 2) return undefined;
    if (t === 68) return { start: i, end: Math.min(i + len, 14 + ihl) };
    i += len;
  }
  return undefined;
}

/** The frames themselves, comparable: sink and bytes in hex, sorted. */
export function bytesOf(caps: readonly Captured[]): string[] {
  return caps.map(({ sink, frame }) => `${sink} ${normalized(sink, frame).toString('hex')}`).sort();
}

export interface Row {
  scenario: string;
  c: Case;
  kernel: Captured[];
  xdp: Captured[];
  moves: string[];
  same: boolean;
  counted: boolean;
  /** What went wrong, empty when nothing did. */
  problems: string[];
}

export function judge(
  scenario: string,
  c: Case,
  kernel: Captured[],
  xdp: Captured[],
  moves: string[],
  post: ReadonlySet<string>,
): Row {
  const same = JSON.stringify(bytesOf(kernel)) === JSON.stringify(bytesOf(xdp));
  const wanted = (Array.isArray(c.expect) ? c.expect : [c.expect]).map((e) =>
    expectedMoves(e, post),
  );
  const counted = wanted.some((w) => JSON.stringify(w) === JSON.stringify(moves));
  const problems: string[] = [];
  if (c.deviation === undefined && !same) problems.push('frames differ');
  if (c.deviation !== undefined && same)
    problems.push(`documented deviation (${c.deviation}) no longer differs`);
  if (!counted)
    problems.push(
      `counters ${moves.join(',') || 'none'}, want ${wanted.map((w) => w.join(',')).join(' or ')}`,
    );
  return { scenario, c, kernel, xdp, moves, same, counted, problems };
}

const pad = (s: string, n: number) =>
  s.length >= n ? s.slice(0, n) : s + ' '.repeat(n - s.length);

/** The table: one line per frame. */
export function table(rows: readonly Row[]): string {
  const lines = [
    `${pad('scenario', 10)} ${pad('frame', 52)} ${pad('counted in XDP', 34)} ${pad('kernel-only egress', 26)} ${pad('with XDP egress', 26)} verdict`,
  ];
  for (const r of rows) {
    const k = describe(r.kernel).join(' ') || '-';
    const x = describe(r.xdp).join(' ') || '-';
    const counted = r.moves.filter((m) => !m.startsWith('actions.')).join(',') || r.moves.join(',');
    const verdict =
      r.problems.length === 0
        ? r.c.deviation
          ? `documented: ${r.c.deviation}`
          : 'same'
        : `DIFF: ${r.problems.join('; ')}`;
    lines.push(
      `${pad(r.scenario, 10)} ${pad(r.c.name, 52)} ${pad(counted, 34)} ${pad(k, 26)} ${pad(x, 26)} ${verdict}`,
    );
  }
  return lines.join('\n');
}
