// Dispatch on the message type: turns any netlink message into a typed value. Used by
// subscriptions (events) and by the fuzz tests (every byte string either parses or
// throws ParseError).
import { parseAddress, type Address } from './address.js';
import {
  NLMSG_DONE,
  NLMSG_ERROR,
  RTM_NEWADDR,
  RTM_NEWLINK,
  RTM_NEWNEIGH,
  RTM_NEWROUTE,
  RTM_NEWRULE,
} from './constants.js';
import { parseDoneMessage, parseErrorMessage, type ErrorMessage } from './control.js';
import type { ExtAck } from './errors.js';
import { parseLink, type Link } from './link.js';
import { parseNeigh, type Neigh } from './neigh.js';
import { parseRoute, type Route } from './route.js';
import { parseRule, type Rule } from './rule.js';
import { align4, readHeader, type NlMsgHeader } from './wire.js';
import { u16le } from '../../util/index.js';

/** A change notification, or one entry of a dump: `kind` says added/changed vs removed. */
export type RtEvent =
  | { kind: 'new' | 'del'; object: 'link'; msg: Link }
  | { kind: 'new' | 'del'; object: 'address'; msg: Address }
  | { kind: 'new' | 'del'; object: 'route'; msg: Route }
  | { kind: 'new' | 'del'; object: 'neigh'; msg: Neigh }
  | { kind: 'new' | 'del'; object: 'rule'; msg: Rule };

interface RtKind {
  object: RtEvent['object'];
  parse: (buf: Buffer, off: number, len: number) => RtEvent['msg'];
}

/** RTM_NEW* type → the object it carries and its parser; RTM_DEL* is always RTM_NEW* + 1. */
const RT_OBJECTS = new Map<number, RtKind>([
  [RTM_NEWLINK, { object: 'link', parse: parseLink }],
  [RTM_NEWADDR, { object: 'address', parse: parseAddress }],
  [RTM_NEWROUTE, { object: 'route', parse: parseRoute }],
  [RTM_NEWNEIGH, { object: 'neigh', parse: parseNeigh }],
  [RTM_NEWRULE, { object: 'rule', parse: parseRule }],
]);

/** Parses an rtnetlink object message; undefined for a type this codec does not know. */
export function parseRtEvent(buf: Buffer, off: number, len: number): RtEvent | undefined {
  const type = u16le(buf, off + 4);
  const isNew = RT_OBJECTS.has(type);
  const entry = RT_OBJECTS.get(isNew ? type : type - 1);
  if (!entry) return undefined;
  // The table pairs each object with its own parser, so the union is sound.
  return {
    kind: isNew ? 'new' : 'del',
    object: entry.object,
    msg: entry.parse(buf, off, len),
  } as RtEvent;
}

/** Any message, parsed. */
export type ParsedMessage =
  | { header: NlMsgHeader; what: 'error'; error: ErrorMessage }
  | { header: NlMsgHeader; what: 'done'; error: number; extAck: ExtAck }
  | { header: NlMsgHeader; what: 'event'; event: RtEvent }
  | { header: NlMsgHeader; what: 'other'; payload: Buffer };

/**
 * Parses every message in buf (one or more datagrams, back to back). Throws ParseError
 * (and nothing else) when the bytes are malformed.
 */
export function parseMessages(buf: Buffer): ParsedMessage[] {
  const out: ParsedMessage[] = [];
  let off = 0;
  while (off < buf.length) {
    const header = readHeader(buf, off, buf.length);
    const len = header.len;
    if (header.type === NLMSG_ERROR) {
      out.push({ header, what: 'error', error: parseErrorMessage(buf, off, len) });
    } else if (header.type === NLMSG_DONE) {
      out.push({ header, what: 'done', ...parseDoneMessage(buf, off, len) });
    } else {
      const event = parseRtEvent(buf, off, len);
      if (event) out.push({ header, what: 'event', event });
      else
        out.push({
          header,
          what: 'other',
          payload: Buffer.from(buf.subarray(off + 16, off + len)),
        });
    }
    off += align4(len);
  }
  return out;
}
