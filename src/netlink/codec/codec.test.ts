import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatLinkAddr, ipFromBytes } from '../../ipaddr/index.js';
import { formatAddress, parseAddress, type Address } from './address.js';
import * as C from './constants.js';
import { formatErrorMessage, parseErrorMessage } from './control.js';
import { ParseError } from './errors.js';
import { formatLink, parseLink, type Link } from './link.js';
import { parseMessages } from './message.js';
import { formatNeigh, neighFields, parseNeigh, readNeighFields, type Neigh } from './neigh.js';
import { formatRoute, parseRoute, type Nexthop, type Route } from './route.js';
import { formatRule, parseRule, type Rule } from './rule.js';
import { readHeader, Writer } from './wire.js';

// --- arbitraries ----------------------------------------------------------------------------
const u8 = fc.integer({ min: 0, max: 0xff });
const u16 = fc.integer({ min: 0, max: 0xffff });
const u32 = fc.integer({ min: 0, max: 0xffffffff });
const s32 = fc.integer({ min: -0x80000000, max: 0x7fffffff });
const ip4 = fc.uint8Array({ minLength: 4, maxLength: 4 }).map((b) => ipFromBytes(b, 0, 4));
const ip6 = fc.uint8Array({ minLength: 16, maxLength: 16 }).map((b) => ipFromBytes(b, 0, 16));
const mac = fc.uint8Array({ minLength: 6, maxLength: 6 }).map((b) => formatLinkAddr(b, 0, 6));
const name = fc.string({ unit: fc.constantFrom(...'abcxyz0123-_.@'.split('')), maxLength: 15 });
const rawAttrs = fc
  .array(
    fc.record({
      type: fc.integer({ min: 2, max: 0x3fff }),
      value: fc.uint8Array({ maxLength: 24 }),
    }),
    { maxLength: 3 },
  )
  .map((as) => as.map((a) => ({ type: a.type, value: Buffer.from(a.value) })));
const opt = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: undefined });

/** Comparable form: Buffers as byte arrays, undefined fields gone (a JSON round trip). */
function canon(v: unknown): unknown {
  return JSON.parse(JSON.stringify(v, (_k, x: unknown) => (Buffer.isBuffer(x) ? [...x] : x)));
}

const linkBase = fc.record({
  family: u8,
  type: u16,
  index: s32,
  flags: u32,
  change: u32,
  name: opt(name),
  mtu: opt(u32),
  address: opt(mac),
  broadcast: opt(mac),
  master: opt(u32),
  link: opt(u32),
  linkNetnsId: opt(s32),
  operstate: opt(u8),
  txqlen: opt(u32),
  group: opt(u32),
  carrier: opt(u8),
  alias: opt(name),
  xdp: opt(
    fc.record({
      attached: u8,
      progId: opt(u32),
      drvProgId: opt(u32),
      skbProgId: opt(u32),
      hwProgId: opt(u32),
    }),
  ),
});
const linkArb: fc.Arbitrary<Link> = fc
  .tuple(
    linkBase,
    opt(
      fc.record({
        kind: opt(fc.constantFrom('veth', 'bridge', 'ifb', 'dummy', 'vxlan')),
        data: opt(rawAttrs),
        slaveKind: opt(name),
        slaveData: opt(rawAttrs),
      }),
    ),
    opt(linkBase),
  )
  .map(([l, info, peer]) => {
    if (!info) return l;
    const i: Link['info'] = { ...info };
    if (info.kind === 'veth') {
      // VETH_INFO_PEER (type 1) inside the data is always parsed as the peer.
      if (i.data) i.data = i.data.filter((a) => (a.type & 0x3fff) !== C.VETH_INFO_PEER);
      if (peer) {
        i.peer = peer;
        if (i.data?.length === 0) delete i.data;
      }
    }
    return { ...l, info: i };
  });

const addrArb: fc.Arbitrary<Address> = fc
  .tuple(fc.boolean(), u8, u32, u8, u32, opt(name), opt(u8), opt(u32))
  .chain(([v6, prefixlen, flags, scope, index, label, proto, rtPriority]) => {
    const ip = v6 ? ip6 : ip4;
    return fc.record({
      family: fc.constant(v6 ? C.AF_INET6 : C.AF_INET),
      prefixlen: fc.constant(prefixlen),
      flags: fc.constant(flags),
      scope: fc.constant(scope),
      index: fc.constant(index),
      address: opt(ip),
      local: opt(ip),
      broadcast: opt(ip),
      label: fc.constant(label),
      proto: fc.constant(proto),
      rtPriority: fc.constant(rtPriority),
      cacheinfo: opt(fc.record({ preferred: u32, valid: u32, created: u32, updated: u32 })),
    });
  });

const nexthopArb = (ip: fc.Arbitrary<string>): fc.Arbitrary<Nexthop> =>
  fc.record({
    ifindex: s32,
    flags: u8,
    hops: u8,
    gateway: opt(ip),
    via: opt(fc.record({ family: fc.constant(C.AF_INET6), address: ip6 })),
  });

const routeArb: fc.Arbitrary<Route> = fc.boolean().chain((v6) => {
  const ip = v6 ? ip6 : ip4;
  return fc.record({
    family: fc.constant(v6 ? C.AF_INET6 : C.AF_INET),
    dstLen: u8,
    srcLen: u8,
    tos: u8,
    table: u32,
    protocol: u8,
    scope: u8,
    type: u8,
    flags: u32,
    dst: opt(ip),
    src: opt(ip),
    iif: opt(u32),
    oif: opt(u32),
    gateway: opt(ip),
    via: opt(fc.record({ family: fc.constant(C.AF_INET), address: ip4 })),
    priority: opt(u32),
    prefsrc: opt(ip),
    mark: opt(u32),
    pref: opt(u8),
    nhid: opt(u32),
    multipath: opt(fc.array(nexthopArb(ip), { maxLength: 4 })),
    metrics: opt(rawAttrs),
  });
});

const neighArb: fc.Arbitrary<Neigh> = fc.boolean().chain((v6) =>
  fc.record({
    family: fc.constant(v6 ? C.AF_INET6 : C.AF_INET),
    ifindex: s32,
    state: u16,
    flags: u8,
    type: u8,
    flagsExt: u32,
    dst: opt(v6 ? ip6 : ip4),
    lladdr: opt(mac),
    protocol: opt(u8),
    probes: opt(u32),
    vlan: opt(u16),
    master: opt(u32),
    nhid: opt(u32),
    cacheinfo: opt(fc.record({ confirmed: u32, used: u32, updated: u32, refcnt: u32 })),
  }),
);

const rangeArb = (max: number) => fc.record({ start: fc.nat(max), end: fc.nat(max) });
const ruleArb: fc.Arbitrary<Rule> = fc.boolean().chain((v6) => {
  const ip = v6 ? ip6 : ip4;
  return fc.record({
    family: fc.constant(v6 ? C.AF_INET6 : C.AF_INET),
    dstLen: u8,
    srcLen: u8,
    tos: u8,
    table: u32,
    action: u8,
    flags: u32,
    priority: opt(u32),
    dst: opt(ip),
    src: opt(ip),
    iifname: opt(name),
    oifname: opt(name),
    goto: opt(u32),
    fwmark: opt(u32),
    fwmask: opt(u32),
    flow: opt(u32),
    tunId: opt(fc.bigInt({ min: 0n, max: 2n ** 64n - 1n })),
    suppressIfgroup: opt(u32),
    suppressPrefixlen: opt(u32),
    l3mdev: opt(u8),
    uidRange: opt(rangeArb(0xffffffff)),
    protocol: opt(u8),
    ipProto: opt(u8),
    sportRange: opt(rangeArb(0xffff)),
    dportRange: opt(rangeArb(0xffff)),
    // Types this codec does not decode (FRA_DSCP and newer) are kept raw.
    other: opt(
      fc.array(
        fc.record({
          type: fc.integer({ min: C.FRA_DPORT_RANGE + 1, max: 0x3fff }),
          value: fc.uint8Array({ maxLength: 12 }).map((v) => Buffer.from(v)),
        }),
        { minLength: 1, maxLength: 3 },
      ),
    ),
  });
});

function encode(fn: (w: Writer) => void): Buffer {
  const w = new Writer(64); // small on purpose: exercises growth
  fn(w);
  return Buffer.from(w.bytes());
}

// --- round trips ----------------------------------------------------------------------------
describe('round trips (property)', () => {
  it('links', () => {
    fc.assert(
      fc.property(linkArb, (l) => {
        const b = encode((w) => formatLink(w, C.RTM_NEWLINK, C.NLM_F_REQUEST, l, 7));
        expect(readHeader(b, 0, b.length)).toMatchObject({
          len: b.length,
          type: C.RTM_NEWLINK,
          seq: 7,
        });
        expect(canon(parseLink(b, 0, b.length))).toEqual(canon(l));
      }),
      { numRuns: 500 },
    );
  });

  it('addresses', () => {
    fc.assert(
      fc.property(addrArb, (a) => {
        const b = encode((w) => formatAddress(w, C.RTM_NEWADDR, C.NLM_F_REQUEST, a));
        expect(canon(parseAddress(b, 0, b.length))).toEqual(canon(a));
      }),
      { numRuns: 500 },
    );
  });

  it('routes, multipath legs included', () => {
    fc.assert(
      fc.property(routeArb, (r) => {
        const b = encode((w) => formatRoute(w, C.RTM_NEWROUTE, C.NLM_F_REQUEST, r));
        expect(canon(parseRoute(b, 0, b.length))).toEqual(canon(r));
      }),
      { numRuns: 500 },
    );
  });

  it('neighbors', () => {
    fc.assert(
      fc.property(neighArb, (n) => {
        const b = encode((w) => formatNeigh(w, C.RTM_NEWNEIGH, C.NLM_F_REQUEST, n));
        expect(canon(parseNeigh(b, 0, b.length))).toEqual(canon(n));
      }),
      { numRuns: 500 },
    );
  });

  it('readNeighFields reads what parseNeigh reads, into one reused object', () => {
    const into = neighFields();
    fc.assert(
      fc.property(neighArb, (n) => {
        const b = encode((w) => formatNeigh(w, C.RTM_NEWNEIGH, C.NLM_F_REQUEST, n));
        const full = parseNeigh(b, 0, b.length);
        const f = readNeighFields(b, 0, b.length, into);
        expect(f).toBe(into);
        const { family, ifindex, state, flags, type, flagsExt, dst, lladdr, protocol } = f;
        expect({ family, ifindex, state, flags, type, flagsExt, dst, lladdr, protocol }).toEqual({
          family: full.family,
          ifindex: full.ifindex,
          state: full.state,
          flags: full.flags,
          type: full.type,
          flagsExt: full.flagsExt,
          dst: full.dst,
          lladdr: full.lladdr,
          protocol: full.protocol,
        });
      }),
      { numRuns: 500 },
    );
    // Malformed input fails the same way.
    const short = encode((w) => w.end(w.begin(C.RTM_NEWNEIGH, 0, 2)));
    expect(() => readNeighFields(short, 0, short.length, into)).toThrow(ParseError);
  });

  it('rules, unknown attributes kept raw', () => {
    fc.assert(
      fc.property(ruleArb, (r) => {
        const b = encode((w) => formatRule(w, C.RTM_NEWRULE, C.NLM_F_REQUEST, r, 3));
        expect(readHeader(b, 0, b.length)).toMatchObject({ len: b.length, type: C.RTM_NEWRULE });
        expect(parseRule(b, 0, b.length)).toEqual(r);
      }),
      { numRuns: 500 },
    );
  });

  it('error acks with extended-ack TLVs', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 4095 }),
        opt(name),
        opt(u32),
        fc.record({ len: u32, type: u16, flags: u16, seq: u32, pid: u32 }),
        (errno, message, offset, request) => {
          const b = encode((w) =>
            formatErrorMessage(w, 9, 1234, errno, request, { message, offset }),
          );
          const e = parseErrorMessage(b, 0, b.length);
          expect(e.error).toBe(errno);
          expect(e.request).toEqual(request);
          expect(canon(e.extAck)).toEqual(canon({ message, offset }));
        },
      ),
    );
  });
});

function parsesOrParseError(bytes: Uint8Array): void {
  try {
    parseMessages(Buffer.from(bytes));
  } catch (err) {
    if (!(err instanceof ParseError)) throw err;
  }
}

describe('fuzz: arbitrary bytes parse or throw ParseError', () => {
  it('random bytes', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 600 }), parsesOrParseError), {
      numRuns: 20000,
    });
  });

  it('valid messages with random corruption', () => {
    const valid = fc.oneof(
      linkArb.map((l) => encode((w) => formatLink(w, C.RTM_NEWLINK, 0, l))),
      addrArb.map((a) => encode((w) => formatAddress(w, C.RTM_DELADDR, 0, a))),
      routeArb.map((r) => encode((w) => formatRoute(w, C.RTM_NEWROUTE, 0, r))),
      neighArb.map((n) => encode((w) => formatNeigh(w, C.RTM_NEWNEIGH, 0, n))),
      ruleArb.map((r) => encode((w) => formatRule(w, C.RTM_DELRULE, 0, r))),
      fc
        .tuple(u16, opt(name))
        .map(([e, m]) =>
          encode((w) =>
            formatErrorMessage(
              w,
              1,
              2,
              e,
              { len: 16, type: 28, flags: 5, seq: 1, pid: 0 },
              { message: m },
            ),
          ),
        ),
    );
    fc.assert(
      fc.property(
        fc.array(valid, { minLength: 1, maxLength: 3 }),
        fc.array(fc.tuple(fc.nat(), u8), { maxLength: 6 }),
        fc.nat(),
        (msgs, flips, cut) => {
          const buf = Buffer.concat(msgs);
          for (const [pos, val] of flips) buf[pos % buf.length] = val;
          parsesOrParseError(buf);
          parsesOrParseError(buf.subarray(0, cut % (buf.length + 1)));
        },
      ),
      { numRuns: 5000 },
    );
  });

  it('reports the offending offset', () => {
    const b = Buffer.alloc(20);
    b.writeUInt32LE(40, 0);
    expect(() => parseMessages(b)).toThrow(ParseError);
    try {
      parseMessages(b);
    } catch (err) {
      expect((err as ParseError).offset).toBe(0);
      expect((err as ParseError).code).toBe('FIBKEEPER_ERR_PARSE');
    }
  });
});
