// The rtnetlink wire format, apart from the calls (as vishvananda/netlink keeps `nl/` apart
// from its API): parse*/format* over Buffers, SIZEOF_* and the other UAPI constants, the
// attribute Writer and readers, control messages, errors, and names for numbers as `ip`
// prints them. Pure: no socket, no I/O; round-trip and property tested without root.
// Addresses go through ../../ipaddr, the one IP/MAC codec.
export * from './constants.js';
export {
  NetlinkError,
  DumpInterruptedError,
  ParseError,
  errnoName,
  type ExtAck,
} from './errors.js';

export {
  Writer,
  readHeader,
  forEachAttr,
  readRawAttrs,
  align4,
  type NlMsgHeader,
  type RawAttr,
} from './wire.js';
export {
  parseErrorMessage,
  parseDoneMessage,
  parseExtAck,
  formatErrorMessage,
  formatDoneMessage,
  type ErrorMessage,
} from './control.js';
export { parseLink, formatLink, type Link, type LinkInfo, type LinkXdp } from './link.js';
export {
  parseAddress,
  formatAddress,
  type Address,
  type AddressCacheInfo,
  type AddressOut,
} from './address.js';
export { parseRoute, formatRoute, type Route, type Nexthop, type Via } from './route.js';
export {
  parseNeigh,
  formatNeigh,
  isManaged,
  readNeighFields,
  neighFields,
  type Neigh,
  type NeighCacheInfo,
  NeighFields,
} from './neigh.js';
export { parseRule, formatRule, type Rule, type RuleRange } from './rule.js';
export { parseMessages, parseRtEvent, type RtEvent, type ParsedMessage } from './message.js';
export {
  linkFlagNames,
  operstateName,
  nudStateNames,
  neighFlagNames,
  protocolName,
  routeTypeName,
  ruleActionName,
  scopeName,
  tableName,
} from './names.js';
export {
  RTM_NEWQDISC,
  RTM_DELQDISC,
  RTM_GETQDISC,
  RTM_NEWTFILTER,
  RTM_DELTFILTER,
  RTM_GETTFILTER,
  SIZEOF_TCMSG,
  TC_H_INGRESS,
  TC_H_ROOT,
  TC_PARENT_EGRESS,
  TC_PARENT_INGRESS,
  formatFilterDump,
  formatQdiscDump,
  parseTcObject,
  tcHandle,
  type TcObject,
} from './tc.js';
export * as nft from './nftables.js';
export type { NftChain, NftRule, NftTable } from './nftables.js';
export * as xfrm from './xfrm.js';
export type { XfrmDefault, XfrmPolicy } from './xfrm.js';
