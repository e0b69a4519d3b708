// rtnetlink for fibkeeper: a codec (parse*/format* over Buffers, SIZEOF_* constants) and,
// above it, NetlinkHandle, whose calls each equal one `ip` command, in the namespace the
// handle was opened in.
export * from './constants.js';
export {
  NetlinkError,
  DumpInterruptedError,
  ParseError,
  errnoName,
  type ExtAck,
} from './errors.js';

// --- codec ----------------------------------------------------------------------------------
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
export { parseAddress, formatAddress, type Address, type AddressCacheInfo } from './address.js';
export { parseRoute, formatRoute, type Route, type Nexthop, type Via } from './route.js';
export {
  parseNeigh,
  formatNeigh,
  isManaged,
  readNeighFields,
  neighFields,
  type Neigh,
  type NeighCacheInfo,
  type NeighFields,
} from './neigh.js';
export { parseRule, formatRule, type Rule, type RuleRange } from './rule.js';
export { parseMessages, parseRtEvent, type RtEvent, type ParsedMessage } from './message.js';

// --- calls ----------------------------------------------------------------------------------
export {
  NetlinkHandle,
  defaultOptions,
  REPLY_BUDGET,
  type NetlinkHandleOptions,
} from './handle.js';
export type { Transport, ClientStats } from './client.js';
export type { BulkFailure } from './bulk.js';
export type { Dev, LinkAddSpec, LinkChanges } from './calls-link.js';
export type { AddressSpec } from './calls-addr.js';
export type { RouteSpec, RouteQuery } from './calls-route.js';
export type { NeighSpec, NeighBulkResult } from './calls-neigh.js';
export type { RuleSpec } from './calls-rule.js';
export {
  Subscription,
  groupNumbers,
  type GroupName,
  type SubscriptionEvent,
  type SubscriptionHandlers,
  type SubscriptionStats,
} from './subscription.js';
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
