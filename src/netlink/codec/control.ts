// Control messages: NLMSG_ERROR (an ack, or an error with extended-ack TLVs) and
// NLMSG_DONE (the end of a dump, which may carry an error too).
import {
  NLM_F_ACK_TLVS,
  NLM_F_CAPPED,
  NLMSG_DONE,
  NLMSG_ERROR,
  NLMSGERR_ATTR_MISS_NEST,
  NLMSGERR_ATTR_MISS_TYPE,
  NLMSGERR_ATTR_MSG,
  NLMSGERR_ATTR_OFFS,
  SIZEOF_NLMSGERR,
  SIZEOF_NLMSGHDR,
} from './constants.js';
import { ParseError, type ExtAck } from './errors.js';
import { align4, forEachAttr, getString, getU32, Writer, type NlMsgHeader } from './wire.js';
import { i32le, u16le, u32le, w16le, w32le, wi32le } from '../../util/index.js';

/** A parsed NLMSG_ERROR: `error` is 0 for an ack, else a positive errno. */
export interface ErrorMessage {
  error: number;
  /** The header of the request it answers (as echoed by the kernel). */
  request: NlMsgHeader;
  extAck: ExtAck;
}

/** Parses the ext-ack TLVs in buf[start, end). */
export function parseExtAck(buf: Buffer, start: number, end: number): ExtAck {
  const ack: ExtAck = {};
  forEachAttr(buf, start, end, (type, off, len) => {
    switch (type) {
      case NLMSGERR_ATTR_MSG:
        ack.message = getString(buf, off, len);
        break;
      case NLMSGERR_ATTR_OFFS:
        ack.offset = getU32(buf, off, len, 'NLMSGERR_ATTR_OFFS');
        break;
      case NLMSGERR_ATTR_MISS_TYPE:
        ack.missingType = getU32(buf, off, len, 'NLMSGERR_ATTR_MISS_TYPE');
        break;
      case NLMSGERR_ATTR_MISS_NEST:
        ack.missingNest = getU32(buf, off, len, 'NLMSGERR_ATTR_MISS_NEST');
        break;
    }
  });
  return ack;
}

/** Parses the NLMSG_ERROR message of length `len` at `off` (header included). */
export function parseErrorMessage(buf: Buffer, off: number, len: number): ErrorMessage {
  if (len < SIZEOF_NLMSGHDR + SIZEOF_NLMSGERR) {
    throw new ParseError(`NLMSG_ERROR of ${len} bytes is too short`, off);
  }
  const flags = u16le(buf, off + 6);
  const end = off + len;
  const p = off + SIZEOF_NLMSGHDR;
  const error = 0 - i32le(buf, p);
  const r = p + 4;
  const request: NlMsgHeader = {
    len: u32le(buf, r),
    type: u16le(buf, r + 4),
    flags: u16le(buf, r + 6),
    seq: u32le(buf, r + 8),
    pid: u32le(buf, r + 12),
  };
  let extAck: ExtAck = {};
  if (flags & NLM_F_ACK_TLVS) {
    // Unless capped, the whole request is echoed before the TLVs.
    const echoed = flags & NLM_F_CAPPED ? SIZEOF_NLMSGHDR : align4(request.len);
    const tlv = r + echoed;
    if (echoed < SIZEOF_NLMSGHDR || tlv > end) {
      throw new ParseError('NLMSG_ERROR echo runs past the message', r);
    }
    extAck = parseExtAck(buf, tlv, end);
  }
  return { error, request, extAck };
}

/** Parses NLMSG_DONE: the dump's final status (0 or a positive errno) and ext-ack. */
export function parseDoneMessage(
  buf: Buffer,
  off: number,
  len: number,
): { error: number; extAck: ExtAck } {
  if (len < SIZEOF_NLMSGHDR + 4) return { error: 0, extAck: {} };
  const flags = u16le(buf, off + 6);
  const error = 0 - i32le(buf, off + SIZEOF_NLMSGHDR);
  const extAck =
    flags & NLM_F_ACK_TLVS ? parseExtAck(buf, off + SIZEOF_NLMSGHDR + 4, off + len) : {};
  return { error, extAck };
}

/**
 * Encodes an NLMSG_ERROR as the kernel would (for tests and fakes): capped echo of the
 * request header, then the ext-ack message when given.
 */
export function formatErrorMessage(
  w: Writer,
  seq: number,
  pid: number,
  error: number,
  request: NlMsgHeader,
  extAck: ExtAck = {},
): void {
  const tlvs = Object.values(extAck).some((v) => v !== undefined);
  const start = w.begin(
    NLMSG_ERROR,
    NLM_F_CAPPED | (tlvs ? NLM_F_ACK_TLVS : 0),
    SIZEOF_NLMSGERR,
    seq,
    pid,
  );
  const p = start + SIZEOF_NLMSGHDR;
  wi32le(w.buf, -error, p);
  w32le(w.buf, request.len, p + 4);
  w16le(w.buf, request.type, p + 8);
  w16le(w.buf, request.flags, p + 10);
  w32le(w.buf, request.seq >>> 0, p + 12);
  w32le(w.buf, request.pid >>> 0, p + 16);
  if (extAck.message !== undefined) w.string(NLMSGERR_ATTR_MSG, extAck.message);
  if (extAck.offset !== undefined) w.u32(NLMSGERR_ATTR_OFFS, extAck.offset);
  if (extAck.missingType !== undefined) w.u32(NLMSGERR_ATTR_MISS_TYPE, extAck.missingType);
  if (extAck.missingNest !== undefined) w.u32(NLMSGERR_ATTR_MISS_NEST, extAck.missingNest);
  w.end(start);
}

/** Encodes NLMSG_DONE with a status (for tests and fakes). */
export function formatDoneMessage(w: Writer, seq: number, pid: number, flags = 0, error = 0): void {
  const start = w.begin(NLMSG_DONE, flags, 4, seq, pid);
  wi32le(w.buf, -error, start + SIZEOF_NLMSGHDR);
  w.end(start);
}
