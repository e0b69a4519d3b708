// The control API: server (in the agent) and client (in the CLI).
export { ApiServer, MAX_BODY_BYTES, type ApiServerParams } from './server.js';
export { ApiClient, ApiError } from './client.js';
export {
  ROUTES,
  OWNER_RE,
  MAX_IPS_PER_REQUEST,
  checkOwner,
  type ControlHandlers,
  type ForwardableEntry,
  type ExternalIpEntry,
} from './routes.js';
