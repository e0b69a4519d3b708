// The state file, the control API, metrics and logs. Rows of the one option table (src/config/schema.ts).

import { SECOND, MINUTE, type OptionSpec } from '../spec.js';

export const SERVICE_OPTIONS = [
  {
    path: 'stateFile',
    type: 'string',
    default: '/var/lib/fibkeeper/state.json',
    doc: 'Where the agent keeps what was added through the control API (forwardable IPs per owner, external IPs), so a restart restores it. Empty: not kept.',
  },
  // Control API, metrics, logs
  {
    path: 'api.socket',
    type: 'string',
    default: '/run/fibkeeper/fibkeeper.sock',
    doc: 'Unix socket of the control API (its directory is created 0750).',
  },
  {
    path: 'api.socketMode',
    type: 'filemode',
    default: '0660',
    doc: 'Permissions of the control socket (0600 or 0660; never world-accessible).',
  },
  {
    path: 'api.tcp',
    type: 'string',
    default: '',
    doc: 'Also serve the control API on this explicit host:port, IPv6 as [addr]:port (empty: no TCP listener). An address other than loopback needs api.tokenFile.',
  },
  {
    path: 'api.tokenFile',
    type: 'string',
    default: '',
    doc: 'File holding the secret that TCP clients send as "Authorization: Bearer <token>" (at least 16 characters; the file must not be readable by others). Required when api.tcp is not a loopback address; the unix socket needs none.',
  },
  {
    path: 'api.requestTimeout',
    type: 'duration',
    default: 10 * SECOND,
    min: 100,
    max: 10 * MINUTE,
    doc: 'Deadline of every control API call: past it the call is answered 503 with the reason instead of waiting on.',
  },
  {
    path: 'metrics.address',
    type: 'string',
    default: '127.0.0.1:9470',
    doc: 'Address of the Prometheus endpoint (also /livez, /readyz and /healthz): 10.0.0.5:9470, [fd00::5]:9470, or a bare IPv4 or IPv6 address for port 9470 (what the Kubernetes downward API gives). Empty: off.',
  },
  {
    path: 'log.level',
    reload: 'live',
    type: 'enum',
    values: ['fatal', 'error', 'warn', 'info', 'debug', 'trace'],
    default: 'info',
    doc: 'Log level (JSON lines on stderr).',
  },
] as const satisfies readonly OptionSpec[];
