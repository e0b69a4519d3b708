// `fibkeeper status IP` as text: that IP explained — its owners, whether it is an external
// IP here, the kernel's route for it, the next hop per device with the kernel entry as
// `ip neigh` shows it, XDP on the route's devices, and its NO_NEIGH hits in the miss map.
import type { IpExplanation, StatusDocument } from '../agent/index.js';
import { columns } from './status-format.js';

type Doc = Partial<StatusDocument>;

const s = (v: unknown, dflt = '-'): string =>
  v === undefined || v === null || v === '' ? dflt : Array.isArray(v) ? v.join(',') : String(v);

/** The neighbor rows of the IP: device, next hop, reconcile status, kernel entry. */
function nexthopRows(doc: Doc, ip: string): string[][] {
  const rows: string[][] = [];
  for (const f of doc.neighbor?.forwardable ?? []) {
    if (f.ip !== ip) continue;
    for (const d of f.devices ?? []) {
      if (d.nexthops.length === 0 && d.lookupError) {
        rows.push([d.device, '-', `lookup failed: ${d.lookupError}`, '']);
      }
      for (const nh of d.nexthops) {
        const k = nh.kernel;
        const entry = k
          ? [
              k.lladdr ? `lladdr ${k.lladdr}` : '',
              k.flags.join(' '),
              k.state.join(' '),
              `(${k.owner})`,
            ]
              .filter(Boolean)
              .join(' ')
          : 'absent';
        rows.push([d.device, nh.nexthop, `${nh.status}${nh.error ? ` (${nh.error})` : ''}`, entry]);
      }
    }
  }
  return rows;
}

export function formatExplain(doc: Doc): string {
  const x = doc.explain as IpExplanation | null | undefined;
  if (!x) return '(the agent did not explain the IP: an older agent?)\n';
  let out = `${x.ip}\n`;
  out += `  owners:      ${x.owners.length ? x.owners.join(', ') : '(none: not forwardable)'}\n`;
  out += `  external IP: ${
    x.external
      ? `${x.external.state}${x.external.cluster ? ' (cluster IP)' : ''}${x.external.lastError ? `: ${x.external.lastError}` : ''}`
      : 'no'
  }\n`;
  out += `  route:       ${x.route ? x.route.text : `lookup failed: ${s(x.routeError)}`}\n`;
  if (x.xdp.length > 0) {
    out += `  xdp:         ${x.xdp
      .map((d) =>
        d.attached === 'ours'
          ? `${d.device} program ${s(d.progId)} (${s(d.mode)})`
          : `${d.device} ${d.attached === 'none' ? 'not attached' : 'foreign program'}`,
      )
      .join('; ')}\n`;
  }
  const rows = nexthopRows(doc, x.ip);
  out += '\nNext hops\n';
  out +=
    rows.length === 0
      ? `  (none${x.owners.length ? ': not routed via a selected device' : ''})\n`
      : columns(['DEVICE', 'NEXT HOP', 'RECONCILE', 'KERNEL ENTRY'], rows, '  ');
  out += '\nXDP misses (NO_NEIGH, fell back to the kernel)\n';
  out +=
    x.misses.length === 0
      ? '  (none)\n'
      : columns(
          ['DESTINATION', 'NEXT HOP', 'DEVICE', 'HITS', 'LAST SEEN'],
          x.misses.map((m) => [
            m.dst,
            m.nexthop,
            m.device,
            String(m.hits),
            `${(m.lastSeenAgoMs / 1000).toFixed(1)} s ago`,
          ]),
          '  ',
        );
  return out;
}
