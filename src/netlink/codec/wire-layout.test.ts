// The codec's wire layout, message by message: exact bytes of requests, and replies the kernel
// sends parsed (the round trips and the fuzz are in codec.test.ts).
import { describe, expect, it } from 'vitest';
import { parseIp } from '../../ipaddr/index.js';
import { formatAddress, parseAddress } from './address.js';
import * as C from './constants.js';
import { formatDoneMessage, parseDoneMessage, parseErrorMessage } from './control.js';
import { formatLink, parseLink } from './link.js';
import { parseMessages } from './message.js';
import { formatNeigh, isManaged } from './neigh.js';
import { parseRule } from './rule.js';
import { Writer } from './wire.js';

function encode(fn: (w: Writer) => void): Buffer {
  const w = new Writer(64); // small on purpose: exercises growth
  fn(w);
  return Buffer.from(w.bytes());
}

// --- known bytes ----------------------------------------------------------------------------
describe('wire layout', () => {
  it('writes an IP parsed already as its text would be written (its bytes copied)', () => {
    for (const text of ['192.0.2.1', '2001:db8::7']) {
      const ip = parseIp(text);
      const a = { family: ip.family === 4 ? C.AF_INET : C.AF_INET6, prefixlen: 32, flags: 0 };
      const base = { ...a, scope: 0, index: 3 };
      const fromText = encode((w) => formatAddress(w, C.RTM_NEWADDR, 0, { ...base, local: text }));
      const parsed = encode((w) => formatAddress(w, C.RTM_NEWADDR, 0, { ...base, local: ip }));
      expect(parsed.equals(fromText), text).toBe(true);
      expect(parseAddress(parsed, 0, parsed.length).local).toBe(text);
    }
  });

  it('encodes a neighbor replace byte for byte', () => {
    const b = encode((w) =>
      formatNeigh(
        w,
        C.RTM_NEWNEIGH,
        C.NLM_F_REQUEST | C.NLM_F_ACK | C.NLM_F_CREATE | C.NLM_F_REPLACE,
        {
          family: C.AF_INET,
          ifindex: 5,
          state: C.NUD_REACHABLE,
          flags: C.NTF_EXT_LEARNED,
          type: 0,
          flagsExt: C.NTF_EXT_MANAGED,
          dst: '10.0.0.1',
          lladdr: '02:00:00:00:00:01',
          protocol: 0x99,
        },
        0x01020304,
      ),
    );
    // prettier-ignore
    const want = [
      64, 0, 0, 0, 28, 0, 0x05, 0x05, 4, 3, 2, 1, 0, 0, 0, 0, // nlmsghdr
      2, 0, 0, 0, 5, 0, 0, 0, 2, 0, 16, 0,                    // ndmsg
      8, 0, 1, 0, 10, 0, 0, 1,                                // NDA_DST
      10, 0, 2, 0, 2, 0, 0, 0, 0, 1, 0, 0,                    // NDA_LLADDR + pad
      5, 0, 12, 0, 0x99, 0, 0, 0,                             // NDA_PROTOCOL + pad
      8, 0, 15, 0, 1, 0, 0, 0,                                // NDA_FLAGS_EXT
    ];
    expect([...b]).toEqual(want);
  });

  it('parses the kernel\'s default "lookup main" rule', () => {
    // prettier-ignore
    const bytes = Buffer.from([
      60, 0, 0, 0, 32, 0, 2, 0, 1, 0, 0, 0, 0, 0, 0, 0,      // nlmsghdr RTM_NEWRULE, NLM_F_MULTI
      2, 0, 0, 0, 254, 0, 0, 1, 0, 0, 0, 0,                  // fib_rule_hdr: inet, main, to_tbl
      8, 0, 15, 0, 254, 0, 0, 0,                             // FRA_TABLE 254
      8, 0, 14, 0, 0xff, 0xff, 0xff, 0xff,                   // FRA_SUPPRESS_PREFIXLEN -1
      5, 0, 21, 0, 2, 0, 0, 0,                               // FRA_PROTOCOL kernel + pad
      8, 0, 6, 0, 0xfe, 0x7f, 0, 0,                          // FRA_PRIORITY 32766
    ]);
    expect(parseRule(bytes, 0, bytes.length)).toEqual({
      family: C.AF_INET,
      dstLen: 0,
      srcLen: 0,
      tos: 0,
      table: C.RT_TABLE_MAIN,
      action: C.FR_ACT_TO_TBL,
      flags: 0,
      suppressPrefixlen: 0xffffffff,
      protocol: C.RTPROT_KERNEL,
      priority: 32766,
    });
    expect(parseMessages(bytes)[0]).toMatchObject({
      what: 'event',
      event: { kind: 'new', object: 'rule', msg: { priority: 32766 } },
    });
  });

  it('parses a kernel error ack with an ext-ack message (uncapped echo)', () => {
    // What the kernel sends without NETLINK_CAP_ACK: the whole request echoed, then TLVs.
    const req = encode((w) =>
      formatNeigh(w, C.RTM_NEWNEIGH, C.NLM_F_REQUEST | C.NLM_F_ACK, {
        family: C.AF_INET,
        ifindex: 99,
        state: 0,
        flags: 0,
        type: 0,
        flagsExt: 0,
        dst: '1.2.3.4',
      }),
    );
    const w = new Writer();
    const start = w.begin(C.NLMSG_ERROR, C.NLM_F_ACK_TLVS, 4, 1, 77);
    w.buf.writeInt32LE(-19, start + 16);
    w.ensure(req.length);
    req.copy(w.buf, w.off);
    w.off += req.length;
    w.string(C.NLMSGERR_ATTR_MSG, 'Unknown device');
    w.end(start);
    const e = parseErrorMessage(w.bytes(), 0, w.off);
    expect(e.error).toBe(19);
    expect(e.request.type).toBe(C.RTM_NEWNEIGH);
    expect(e.extAck.message).toBe('Unknown device');
  });

  it('parses NLMSG_DONE with and without a status', () => {
    const b = encode((w) => formatDoneMessage(w, 3, 4, C.NLM_F_MULTI, 16));
    expect(parseDoneMessage(b, 0, b.length).error).toBe(16);
    const bare = Buffer.alloc(16);
    bare.writeUInt32LE(16, 0);
    bare.writeUInt16LE(C.NLMSG_DONE, 4);
    expect(parseDoneMessage(bare, 0, 16).error).toBe(0);
  });

  it('iterates back-to-back messages and dispatches them', () => {
    const w = new Writer();
    formatNeigh(w, C.RTM_DELNEIGH, 0, {
      family: C.AF_INET6,
      ifindex: 2,
      state: C.NUD_STALE,
      flags: 0,
      type: 0,
      flagsExt: C.NTF_EXT_MANAGED,
      dst: 'fe80::1',
    });
    formatLink(w, C.RTM_NEWLINK, 0, {
      family: 0,
      type: 1,
      index: 3,
      flags: C.IFF_UP,
      change: 0,
      name: 'veth0',
    });
    formatDoneMessage(w, 1, 2);
    const msgs = parseMessages(Buffer.from(w.bytes()));
    expect(msgs.map((m) => m.what)).toEqual(['event', 'event', 'done']);
    const first = msgs[0]!;
    if (first.what !== 'event' || first.event.object !== 'neigh')
      throw new Error('not a neigh event');
    expect(first.event.kind).toBe('del');
    expect(isManaged(first.event.msg)).toBe(true);
  });

  it('a veth request nests the peer as an ifinfomsg', () => {
    const b = encode((w) =>
      formatLink(w, C.RTM_NEWLINK, C.NLM_F_REQUEST, {
        family: 0,
        type: 0,
        index: 0,
        flags: 0,
        change: 0,
        name: 'a',
        info: {
          kind: 'veth',
          peer: { family: 0, type: 0, index: 0, flags: 0, change: 0, name: 'b' },
        },
      }),
    );
    const l = parseLink(b, 0, b.length);
    expect(l.info?.kind).toBe('veth');
    expect(l.info?.peer?.name).toBe('b');
    expect(l.info?.data).toBeUndefined();
  });
});

// --- fuzz -----------------------------------------------------------------------------------
