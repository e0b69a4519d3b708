// The shared next-hop calculation against the kernel: random route tables in a namespace
// (several tables, on-link and gateway routes, multipath, nexthop objects, blackhole,
// unreachable, prohibit and throw routes, default routes, more specific routes on other
// devices, local-table routes, metrics; IPv4 and IPv6), and for a few thousand random IPs
// on every device, the (IP, device) → next hops that lookupNextHops derives from one lookup
// per group must be exactly what one `ip route get IP oif DEV fibmatch` per IP gives.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { ip, makeNetns, privileged } from '../../test/helpers/netns.js';
import { NetlinkHandle, type Route } from '../netlink/index.js';
import { hopsOfOutcome, nextHopsOf, type LookupOutcome } from './nexthop.js';
import { RouteTracker } from './routes.js';
import { RuleTracker } from './rules.js';
import { lookupNextHops, type LookupFn } from './share.js';

const { skip } = privileged();

/** mulberry32: a small seeded generator, so that a failing table can be built again. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const DEVICES = ['d0', 'd1', 'd2', 'd3'];

/** Devices d0..d3 (veth, peers p0..p3 in the same namespace), each with a /24 and a /64. */
function lab(ns: string): void {
  for (let i = 0; i < DEVICES.length; i++) {
    ip(ns, 'link', 'add', `d${i}`, 'type', 'veth', 'peer', 'name', `p${i}`);
    ip(ns, 'link', 'set', `p${i}`, 'up');
    ip(ns, 'link', 'set', `d${i}`, 'up');
    ip(ns, 'addr', 'add', `10.${i}.0.1/24`, 'dev', `d${i}`);
    ip(ns, '-6', 'addr', 'add', `2001:db8:${i}::1/64`, 'dev', `d${i}`, 'nodad');
  }
}

interface Gen {
  r: () => number;
  int(n: number): number;
  pick<T>(xs: readonly T[]): T;
}

function gen(seed: number): Gen {
  const r = rng(seed);
  return {
    r,
    int: (n) => Math.floor(r() * n),
    pick: (xs) => xs[Math.floor(r() * xs.length)]!,
  };
}

const v4 = (n: number): string => `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;

/** A random IPv4 prefix inside 10.0.0.0/8 (or the whole space for short ones). */
function prefix4(g: Gen): string {
  const len = g.pick([0, 8, 12, 16, 16, 20, 24, 24, 25, 28, 30, 32, 32]);
  const base = 0x0a000000 | g.int(1 << 24);
  const net = len === 0 ? 0 : (base >>> (32 - len)) << (32 - len);
  return `${v4(net >>> 0)}/${len}`;
}

/** A random IPv6 prefix inside 2001:db8::/32 (groups 3-4 vary). */
function prefix6(g: Gen): string {
  const len = g.pick([0, 32, 40, 48, 48, 56, 64, 64, 72, 96, 120, 128, 128]);
  const words = [0x2001, 0x0db8, g.int(4), g.int(0x10000), g.int(0x10000), 0, 0, g.int(0x10000)];
  const bytes: number[] = words.flatMap((w) => [w >> 8, w & 255]);
  for (let bit = len; bit < 128; bit++) bytes[bit >> 3]! &= ~(0x80 >> (bit & 7));
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((bytes[i]! << 8) | bytes[i + 1]!).toString(16));
  return `${groups.join(':')}/${len}`;
}

const gw4 = (g: Gen, dev: number): string => `10.${dev}.0.${2 + g.int(200)}`;
const gw6 = (g: Gen, dev: number): string => `2001:db8:${dev}::${(2 + g.int(200)).toString(16)}`;

/** One random `ip -batch` line adding a route of `family`. */
function routeLine(g: Gen, family: 4 | 6, nexthopIds: readonly number[]): string {
  const six = family === 6;
  const dst = six ? prefix6(g) : prefix4(g);
  const table = g.pick(['main', 'main', 'main', 'main', 'default', '100', 'local']);
  const metric = g.r() < 0.2 ? ` metric ${g.pick([10, 20, 1024])}` : '';
  const gw = (d: number): string => (six ? gw6(g, d) : gw4(g, d));
  const dev = (): number => g.int(DEVICES.length);
  const kind = g.r();
  const where = `table ${table}${metric}`;
  let what: string;
  if (table === 'local') {
    const type = six ? 'local' : g.pick(['local', 'broadcast']);
    what = `${type} ${dst} ${where} dev d${dev()}`;
  } else if (kind < 0.25) {
    what = `${dst} ${where} dev d${dev()}`;
  } else if (kind < 0.5) {
    const d = dev();
    what = `${dst} ${where} via ${gw(d)} dev d${d}`;
  } else if (kind < 0.65) {
    const legs = 2 + g.int(3);
    const hops: string[] = [];
    for (let i = 0; i < legs; i++) {
      const d = dev();
      hops.push(g.r() < 0.2 && !six ? `nexthop dev d${d}` : `nexthop via ${gw(d)} dev d${d}`);
    }
    what = `${dst} ${where} ${hops.join(' ')}`;
  } else if (kind < 0.75 && nexthopIds.length > 0) {
    what = `${dst} ${where} nhid ${g.pick(nexthopIds)}`;
  } else {
    const type = g.pick(['blackhole', 'unreachable', 'prohibit', six ? 'blackhole' : 'throw']);
    what = `${type} ${dst} ${where}`;
  }
  return `route add ${what}`;
}

/** Nexthop objects: single ones on each device and a group or two (ids 1..). */
function nexthopLines(g: Gen, family: 4 | 6): { lines: string[]; ids: number[] } {
  const base = family === 4 ? 1 : 101;
  const lines: string[] = [];
  const ids: number[] = [];
  for (let d = 0; d < DEVICES.length; d++) {
    const id = base + d;
    lines.push(`nexthop add id ${id} via ${family === 4 ? gw4(g, d) : gw6(g, d)} dev d${d}`);
    ids.push(id);
  }
  lines.push(`nexthop add id ${base + 10} group ${base}/${base + 1 + g.int(3)}`);
  lines.push(`nexthop add id ${base + 11} group ${base + 2}/${base + 3}`);
  ids.push(base + 10, base + 11);
  return { lines, ids };
}

/** Random destinations: inside random prefixes of the table (edges too) and anywhere. */
function destinations(g: Gen, family: 4 | 6, routes: readonly Route[], n: number): string[] {
  const out = new Set<string>();
  const own = routes.filter((r) => r.family === (family === 4 ? 2 : 10));
  while (out.size < n) {
    if (family === 4) {
      const r = own.length > 0 && g.r() < 0.7 ? g.pick(own) : undefined;
      let v: number;
      if (r === undefined) v = 0x0a000000 | g.int(1 << 24);
      else {
        const base = r.dst === undefined ? 0x0a000000 : ipv4Num(r.dst);
        const size = r.dstLen === 0 ? 1 << 24 : 2 ** (32 - r.dstLen);
        const off = g.pick([0, size - 1, g.int(size)]);
        v = (base + off) >>> 0;
      }
      const text = v4(v >>> 0);
      // Node addresses are never forwardable; 10.D.0.1 are ours.
      if (/^10\.[0-3]\.0\.1$/.test(text)) continue;
      out.add(text);
    } else {
      const r = own.length > 0 && g.r() < 0.7 ? g.pick(own) : undefined;
      const p = r?.dst !== undefined ? `${r.dst}/${r.dstLen}` : '2001:db8::/32';
      out.add(randomIn6(g, p));
    }
  }
  out.delete('2001:db8:0::1');
  for (let d = 0; d < DEVICES.length; d++) out.delete(`2001:db8:${d}::1`);
  return [...out];
}

function ipv4Num(s: string): number {
  return s.split('.').reduce((a, b) => a * 256 + Number(b), 0);
}

/** A random address inside an IPv6 prefix, in canonical text (via the kernel's spelling rules). */
function randomIn6(g: Gen, prefix: string): string {
  const [addr, lenText] = prefix.split('/') as [string, string];
  const len = Number(lenText);
  const bytes = Buffer.alloc(16);
  const head = addr.includes('::') ? expand6(addr) : addr.split(':');
  head.forEach((w, i) => bytes.writeUInt16BE(parseInt(w, 16), 2 * i));
  for (let bit = Math.max(len, 32); bit < 128; bit++) {
    if (g.r() < 0.5) bytes[bit >> 3]! ^= 0x80 >> (bit & 7);
  }
  // Keep the prefix bits exactly (bits below 32 are 2001:db8 anyway).
  const words: string[] = [];
  for (let i = 0; i < 16; i += 2) words.push(bytes.readUInt16BE(i).toString(16));
  return canonical6(words);
}

function expand6(addr: string): string[] {
  const [l, r] = addr.split('::') as [string, string];
  const left = l === '' ? [] : l.split(':');
  const right = r === '' ? [] : r.split(':');
  return [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
}

/** RFC 5952 text of 8 hex words (what the kernel and ipaddr print). */
function canonical6(words: string[]): string {
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8;) {
    if (words[i] !== '0') {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && words[j] === '0') j++;
    if (j - i > bestLen) {
      best = i;
      bestLen = j - i;
    }
    i = j;
  }
  if (best < 0) return words.join(':');
  return `${words.slice(0, best).join(':')}::${words.slice(best + bestLen).join(':')}`;
}

function batch(ns: string, lines: string[]): void {
  const dir = mkdtempSync(join(tmpdir(), 'fkt-share-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'routes');
  writeFileSync(file, lines.join('\n') + '\n');
  // -force: a random line the kernel refuses (a duplicate, say) does not stop the rest.
  const r = spawnSync('ip', ['-n', ns, '-force', '-batch', file], { encoding: 'utf8' });
  if (process.env.FKT_SHARE_DEBUG) console.log(r.stderr.split('\n').slice(0, 40).join('\n'));
}

const show = (o: LookupOutcome, ip: string): string =>
  o.kind === 'nexthops' || o.kind === 'self'
    ? `nexthops ${[...hopsOfOutcome(o, ip)].sort().join(',')}`
    : `${o.kind} ${o.kind === 'unreachable' ? o.reason : o.error}`;

describe.skipIf(skip)('shared next-hop lookups', () => {
  for (const seed of [1, 2, 3, 4, 5]) {
    it(`give what one lookup per IP gives (random tables, seed ${seed})`, async () => {
      const ns = makeNetns(`share${seed}`);
      lab(ns);
      const g = gen(seed * 7919);
      const nh4 = nexthopLines(g, 4);
      const nh6 = nexthopLines(g, 6);
      const lines = [...nh4.lines, ...nh6.lines];
      for (let i = 0; i < 120; i++) lines.push(routeLine(g, 4, nh4.ids));
      for (let i = 0; i < 120; i++) lines.push(routeLine(g, 6, nh6.ids));
      // Defaults on some devices and more specific routes elsewhere, every time.
      lines.push(`route add default via ${gw4(g, 0)} dev d0`);
      lines.push(`route add default via ${gw4(g, 2)} dev d2 metric 50`);
      lines.push(`route add ::/0 via ${gw6(g, 1)} dev d1`);
      batch(ns, lines);

      const h = NetlinkHandle.open({ netns: ns });
      onTestFinished(() => h.close());
      const dump = await h.routeList();
      const routes = new RouteTracker();
      routes.load(dump);
      const rules = new RuleTracker();
      rules.load(await h.ruleList());
      expect([rules.tableOnly(4), rules.tableOnly(6)]).toEqual([true, true]);
      expect(routes.table.size).toBeGreaterThan(150);

      const ips = [...destinations(g, 4, dump, 1500), ...destinations(g, 6, dump, 1500)];
      const lookup: LookupFn = (oif, list) =>
        h.routeGetMany(list.map((dst) => ({ dst, oif, fibmatch: true })));
      let lookups = 0;
      let compared = 0;
      const kinds = new Map<string, number>();
      for (const dev of DEVICES) {
        const oif = await h.ifindex(dev);
        const own = await lookup(oif, ips);
        const shared = await lookupNextHops(oif, ips, (x) => routes.prefixes.groupOf(x), lookup);
        lookups += shared.lookups.nexthop + shared.lookups.unreachable + shared.lookups.error;
        const mismatches: string[] = [];
        ips.forEach((x, i) => {
          const want = show(nextHopsOf(own[i]!, x, oif), x);
          const got = show(shared.outcomes[i]!, x);
          const k = want.split(' ')[0]!;
          kinds.set(k, (kinds.get(k) ?? 0) + 1);
          if (want !== got) mismatches.push(`${x} oif ${dev}: own lookup ${want}, shared ${got}`);
          compared++;
        });
        expect(mismatches.slice(0, 10), `seed ${seed}`).toEqual([]);
        expect(shared.lookups.error).toBe(0);
      }
      if (process.env.FKT_SHARE_DEBUG) {
        const types = new Map<string, number>();
        for (const r of dump) {
          const k = `${r.family === 10 ? 6 : 4} t${r.table} type${r.type}${r.nhid ? ' nhid' : ''}${r.multipath ? ' mp' : ''}`;
          types.set(k, (types.get(k) ?? 0) + 1);
        }
        console.log({ routes: dump.length, lookups, compared, kinds, types });
      }
      expect(compared).toBe(ips.length * DEVICES.length);
      // Sharing happened, and every kind of answer was compared.
      expect(lookups).toBeLessThan(compared / 2);
      expect(kinds.get('nexthops')).toBeGreaterThan(500);
      expect(kinds.get('unreachable')).toBeGreaterThan(500);
    });
  }

  it('a policy rule makes the rules non-default for its family, and its removal default again', async () => {
    const ns = makeNetns('share-rule');
    const h = NetlinkHandle.open({ netns: ns });
    onTestFinished(() => h.close());
    const rules = new RuleTracker();
    let changes = 0;
    rules.setListener({ rulesChanged: () => changes++ });
    rules.load(await h.ruleList());
    const sub = h.subscribe(['rule'], {
      onEvent: (ev) => {
        if (ev.kind !== 'overflow' && ev.object === 'rule') rules.apply(ev.kind, ev.msg);
      },
    });
    onTestFinished(() => sub.close());
    ip(ns, 'rule', 'add', 'to', '10.50.0.0/16', 'lookup', '100', 'pref', '100');
    await expect.poll(() => rules.tableOnly(4)).toBe(false);
    expect(rules.tableOnly(6)).toBe(true);
    ip(ns, 'rule', 'del', 'pref', '100');
    await expect.poll(() => rules.tableOnly(4)).toBe(true);
    ip(ns, '-6', 'rule', 'add', 'fwmark', '1', 'lookup', '7');
    await expect.poll(() => rules.tableOnly(6)).toBe(false);
    expect(changes).toBe(3);
  });
});
