// Tiny hand-built rtnetlink messages for the addon tests (the real codec lives in src/netlink).
export const NLMSG_ERROR = 2;
export const NLMSG_DONE = 3;
export const RTM_NEWLINK = 16;
export const RTM_GETLINK = 18;
export const NLM_F_REQUEST = 0x1;
export const NLM_F_ACK = 0x4;
export const NLM_F_DUMP = 0x300;
export const NLM_F_EXCL = 0x200;
export const NLM_F_CREATE = 0x400;
export const NLM_F_CAPPED = 0x100;
export const NLM_F_ACK_TLVS = 0x200;
export const NLMSGERR_ATTR_MSG = 1;
export const RTNLGRP_LINK = 1;
const IFLA_IFNAME = 3;
const IFLA_LINKINFO = 18;
const IFLA_INFO_KIND = 1;

export interface NlMsg {
  type: number;
  flags: number;
  seq: number;
  pid: number;
  payload: Buffer;
}

function attr(type: number, value: Buffer): Buffer {
  const len = 4 + value.length;
  const out = Buffer.alloc((len + 3) & ~3);
  out.writeUInt16LE(len, 0);
  out.writeUInt16LE(type, 2);
  value.copy(out, 4);
  return out;
}

function header(type: number, flags: number, seq: number, body: Buffer): Buffer {
  const h = Buffer.alloc(16);
  h.writeUInt32LE(16 + body.length, 0);
  h.writeUInt16LE(type, 4);
  h.writeUInt16LE(flags, 6);
  h.writeUInt32LE(seq, 8);
  return Buffer.concat([h, body]);
}

/** RTM_GETLINK dump request (`ip link show`). */
export function getLinkDump(seq: number): Buffer {
  return header(RTM_GETLINK, NLM_F_REQUEST | NLM_F_DUMP, seq, Buffer.alloc(16));
}

/** RTM_NEWLINK for a link of kind `kind` (an unknown kind makes the kernel refuse it). */
export function newLink(seq: number, name: string, kind: string): Buffer {
  const body = Buffer.concat([
    Buffer.alloc(16),
    attr(IFLA_IFNAME, Buffer.from(`${name}\0`)),
    attr(IFLA_LINKINFO, attr(IFLA_INFO_KIND, Buffer.from(`${kind}\0`))),
  ]);
  return header(RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL, seq, body);
}

export const NLMSG_NOOP = 1;

/** `count` NLMSG_NOOP messages asking for an ack, sequence numbers from `seq` on. */
export function noops(seq: number, count = 1): Buffer {
  return Buffer.concat(
    Array.from({ length: count }, (_, i) =>
      header(NLMSG_NOOP, NLM_F_REQUEST | NLM_F_ACK, seq + i, Buffer.alloc(0)),
    ),
  );
}

/** Splits a chunk from NetlinkSocket.onData into messages. */
export function parseMessages(chunk: Buffer): NlMsg[] {
  const out: NlMsg[] = [];
  let off = 0;
  while (off + 16 <= chunk.length) {
    const len = chunk.readUInt32LE(off);
    if (len < 16 || off + len > chunk.length) break;
    out.push({
      type: chunk.readUInt16LE(off + 4),
      flags: chunk.readUInt16LE(off + 6),
      seq: chunk.readUInt32LE(off + 8),
      pid: chunk.readUInt32LE(off + 12),
      payload: chunk.subarray(off + 16, off + len),
    });
    off += (len + 3) & ~3;
  }
  return out;
}

/** Attributes after a fixed header of `skip` bytes: type → value. */
export function attrs(payload: Buffer, skip: number): Map<number, Buffer> {
  const out = new Map<number, Buffer>();
  let off = skip;
  while (off + 4 <= payload.length) {
    const len = payload.readUInt16LE(off);
    if (len < 4) break;
    out.set(payload.readUInt16LE(off + 2) & 0x3fff, payload.subarray(off + 4, off + len));
    off += (len + 3) & ~3;
  }
  return out;
}

/** From an RTM_NEWLINK message: ifindex and name. */
export function linkOf(m: NlMsg): { ifindex: number; name: string } {
  const name = attrs(m.payload, 16).get(IFLA_IFNAME);
  return {
    ifindex: m.payload.readInt32LE(4),
    name: name ? name.subarray(0, name.indexOf(0)).toString() : '',
  };
}

/** From an NLMSG_ERROR message: the (negative) error and the extended-ack message, if any. */
export function errorOf(m: NlMsg): { error: number; extMsg: string | undefined } {
  const error = m.payload.readInt32LE(0);
  if (!(m.flags & NLM_F_ACK_TLVS)) return { error, extMsg: undefined };
  // nlmsgerr = error + the original message (only its header when NLM_F_CAPPED), then TLVs.
  const skip = m.flags & NLM_F_CAPPED ? 20 : 4 + m.payload.readUInt32LE(4);
  const text = attrs(m.payload, skip).get(NLMSGERR_ATTR_MSG);
  return { error, extMsg: text?.subarray(0, text.indexOf(0)).toString() };
}
