// The control API: server (in the agent) and client (in the CLI).
export {
  ApiServer,
  DEFAULT_REQUEST_TIMEOUT_MS,
  MAX_BODY_BYTES,
  MAX_BULK_BODY_BYTES,
  checkSocketDir,
  type ApiServerParams,
} from './server.js';
export { ApiClient, ApiError } from './client.js';
export {
  ROUTES,
  type ClusterEligibility,
  type ClusterIpEntry,
  type ControlHandlers,
  type ForwardableEntry,
  type ExternalIpEntry,
} from './routes.js';
export { StreamReply, MAX_UNREAD_BYTES, type StreamItem } from './stream.js';
export {
  STATUS_STATES,
  parseSince,
  type EventsAnswer,
  type EventsRequest,
  type StatusRequest,
} from './routes.js';
