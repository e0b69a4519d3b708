// rtnetlink for fibkeeper: the codec (./codec: parse*/format* over Buffers, SIZEOF_*
// constants, names) and, above it, NetlinkHandle, whose calls each equal one `ip` command, in
// the namespace the handle was opened in. This file is the whole public surface of both.
export * from './codec/index.js';

// --- calls ----------------------------------------------------------------------------------
export {
  NetlinkHandle,
  defaultOptions,
  REPLY_BUDGET,
  type NetlinkHandleOptions,
} from './handle.js';
export type { Transport, ClientStats } from './client.js';
export { SOCKET_NAMES, defaultHealth, type SocketName, type HealthParams } from './health.js';
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
  NftHandle,
  XfrmHandle,
  type ProtocolHandleOptions,
  type RawSubscriptionHandlers,
} from './protocols.js';
// --- feeds ----------------------------------------------------------------------------------
export { Feed, type FeedParams, type FeedReason } from './feed.js';
export {
  DeviceFeed,
  addressKey,
  type DeviceFeedListener,
  type DeviceFeedParams,
  type DeviceFeedReason,
} from './devices.js';
export {
  DOWN,
  UPPER_KINDS,
  deviceVerdict,
  linkName,
  lowerOf,
  matchGlob,
  neighborVerdict,
  skipStackedUppers,
  xdpVerdict,
  zeroLinkAddress,
  type DeviceSelection,
  type DeviceVerdictBase,
} from './verdict.js';
export {
  RouteFeed,
  type RouteFeedListener,
  type RouteFeedParams,
  type RouteFeedReason,
} from './routes.js';
