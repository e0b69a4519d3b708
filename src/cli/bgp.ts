// `fibkeeper bgp status`: the BGP daemon and each peer's session, as `birdc show protocols`
// lists them, and the external IPs announced.
import type { BgpStatus } from '../bgp/index.js';
import { documentCommand } from './client-commands.js';

export function formatBgpStatus(s: BgpStatus): string {
  const rows = [
    [
      'PEER',
      'AS',
      'PROTOCOL',
      'STATE',
      'SESSION',
      'SINCE',
      'BFD',
      'GR',
      'ADVERTISED',
      'LAST ERROR',
    ],
  ];
  for (const p of s.peers) {
    rows.push([
      p.address,
      String(p.asn),
      p.protocol,
      p.state,
      p.session,
      p.since,
      p.bfd ? 'on' : 'off',
      p.gracefulRestart === 'no peer support' ? 'no-peer' : p.gracefulRestart,
      String(p.advertised),
      p.lastError || '-',
    ]);
  }
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  const table = rows.map((r) =>
    r
      .map((v, c) => v.padEnd(widths[c]!))
      .join('  ')
      .trimEnd(),
  );
  const d = s.daemon;
  return [
    `daemon: ${d.running ? `bird pid ${d.pid}` : 'not running'} (config ${d.config}, control ${d.control})`,
    `announced: ${s.announced.length} (${s.advertisedTotal} advertised, ${s.withdrawnTotal} withdrawn since start)`,
    `graceful restart: ${s.gracefulRestartS > 0 ? `${s.gracefulRestartS} s (an orderly stop keeps the routes at the routers as stale)` : 'off (a stop withdraws the routes)'}`,
    ...(s.lastError ? [`last error: ${s.lastError}`] : []),
    '',
    ...table,
    '',
  ].join('\n');
}

export const bgpStatusCommand = documentCommand(
  'bgp status',
  "Each BGP peer's session (like birdc show protocols) and the external IPs announced",
  '/v1/bgp/status',
  formatBgpStatus,
);
