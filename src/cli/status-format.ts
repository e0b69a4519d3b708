// `fibkeeper status` as a readable report. The input is the API's status document (its
// types: src/agent/status.ts, documented in docs/status.md); every field is read as possibly
// missing, so an older agent's document (or a part of one) still prints.
import type {
  ClusterSection,
  ExtipSection,
  NeighborSection,
  StateFileSection,
  StatusDocument,
  XdpSection,
} from '../agent/index.js';

/** A document or section as it may come from an older agent: any field may be missing. */
type Loose<T> = T extends readonly (infer E)[]
  ? readonly Loose<E>[]
  : T extends object
    ? { [K in keyof T]?: Loose<T[K]> | null }
    : T;

const arr = <T>(v: readonly T[] | null | undefined): readonly T[] => (Array.isArray(v) ? v : []);
const s = (v: unknown, dflt = '-'): string =>
  v === undefined || v === null || v === '' ? dflt : Array.isArray(v) ? v.join(',') : String(v);

/** Aligned columns (the last one unpadded), a heading line first, each line indented. */
export function columns(head: string[], rows: string[][], indent = ''): string {
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) =>
    indent +
    r
      .map((c, i) => (i === r.length - 1 ? c : c.padEnd(w[i] as number)))
      .join('  ')
      .trimEnd();
  return [line(head), ...rows.map(line)].join('\n') + '\n';
}

function table(head: string[], rows: string[][]): string {
  return rows.length === 0 ? '  (none)\n' : columns(head, rows, '  ');
}

function agentSection(st: Loose<StatusDocument>): string {
  const kernel = st.kernel ?? {};
  const lines = [
    `fibkeeper ${s(st.version)}  netns ${s(st.netns, '(own)')}  started ${s(st.startedAt)}` +
      (st.phase && st.phase !== 'running' ? `  (${s(st.phase)})` : ''),
    `ready: ${st.ready ? 'yes' : `no (${arr(st.notReady).join('; ')})`}`,
    `health: ${st.healthy ? 'ok' : `degraded (${arr(st.unhealthy).join('; ')})`}`,
    `kernel: ${s(kernel.release)}` +
      (arr(kernel.assumed).length ? `  assumed: ${arr(kernel.assumed).join(',')}` : ''),
  ];
  return lines.join('\n') + '\n';
}

const COUNTER_KINDS = [
  ['results', 'result'],
  ['actions', 'action'],
  ['reasons', 'not handled'],
] as const;

function xdpSection(x: Loose<XdpSection>): string {
  let out =
    '\nXDP\n' +
    table(
      ['DEVICE', 'IFINDEX', 'ATTACHED', 'MODE', 'PROG', 'LINK', 'SLOT'],
      arr(x.devices).map((d) => [
        s(d.name),
        s(d.ifindex),
        s(d.attached),
        s(d.mode),
        s(d.progId),
        s(d.linkId),
        s(d.slot),
      ]),
    );
  for (const d of arr(x.devices)) {
    if (d.skipped) out += `  ${s(d.name)}: no program: ${s(d.skipped)}\n`;
  }
  out += nodePolicyText(x);
  const rows: string[][] = [];
  for (const c of arr(x.counters)) {
    for (const [kind, label] of COUNTER_KINDS) {
      for (const [name, p] of Object.entries(c[kind] ?? {})) {
        if (Number(p?.packets ?? 0) > 0)
          rows.push([s(c.device), label, name, s(p?.packets), s(p?.bytes)]);
      }
    }
  }
  out +=
    '\nXDP counters (non-zero)\n' + table(['DEVICE', 'KIND', 'NAME', 'PACKETS', 'BYTES'], rows);
  return out;
}

/**
 * xdp.nodePolicy and, per device, what of the node's policy sends its traffic to the kernel
 * (under bypass: what XDP forwards past).
 */
function nodePolicyText(x: Loose<XdpSection>): string {
  if (x.nodePolicy === undefined || x.nodePolicy === null) return '';
  const bypass = x.nodePolicy === 'bypass';
  let out = `\nnode policy: ${s(x.nodePolicy)}${bypass ? " (XDP forwards past the node's netfilter, tc and xfrm policy)" : ''}\n`;
  const rows: string[][] = [];
  for (const d of arr(x.devices)) {
    if (d.skipped) continue;
    for (const dir of ['ipv4', 'ipv6', 'egress'] as const) {
      const hits = arr(d.policy?.[dir]);
      const first = hits[0];
      if (first === undefined) {
        rows.push([s(d.name), dir, 'xdp', '']);
        continue;
      }
      const more = hits.length > 1 ? ` (+${hits.length - 1} more)` : '';
      rows.push([
        s(d.name),
        dir,
        bypass ? 'xdp (bypass)' : `kernel: ${s(first.reason)}`,
        `${s(first.what)}${more}`,
      ]);
    }
  }
  return out + table(['DEVICE', 'TRAFFIC', 'FORWARDED BY', 'BECAUSE OF'], rows);
}

type KernelEntry = NonNullable<NeighborSection['desired'][number]['kernel']>;

/** A next hop's kernel entry: state, flags, lladdr, and whose it is when not fibkeeper's. */
function kernelText(k: Loose<KernelEntry> | null | undefined): string {
  if (!k) return 'absent';
  const text = `${s(k.state)} ${s(k.flags, '')} ${s(k.lladdr, '')}`.replace(/ +/g, ' ').trim();
  if (k.owner === 'foreign') return `${text} (foreign: left alone)`;
  if (k.owner === 'kernel') return `${text} (kernel's: adopted on the next write)`;
  return text;
}

function neighborSection(n: Loose<NeighborSection>): string {
  const sum = n.summary ?? {};
  let out = `\nNeighbors (mode ${s(n.mode)}, protocol ${s(n.protocol)})\n`;
  for (const w of arr(n.warnings)) out += `  warning: ${s(w)}\n`;
  out += `  forwardable IPs ${s(sum.forwardableIps)}, desired entries ${s(sum.desiredEntries)}, selected devices ${s(sum.selectedDevices)}\n`;
  const by = sum.desiredByStatus ?? {};
  out += `  reconcile: ${s(by.done, '0')} done, ${s(by.pending, '0')} pending, ${s(by.error, '0')} error; kernel states: ${
    Object.entries(sum.kernelEntriesByState ?? {})
      .map(([k, v]) => `${k}=${s(v)}`)
      .join(' ') || '-'
  }${Number(sum.foreignEntries ?? 0) > 0 ? `; foreign (left alone): ${s(sum.foreignEntries)}` : ''}\n`;
  const rows: string[][] = [];
  for (const f of arr(n.forwardable)) {
    // Only the devices the IP is routed through (or whose lookup failed).
    const devs = arr(f.devices).filter((d) => arr(d.nexthops).length > 0 || d.lookupError);
    if (devs.length === 0) {
      const why =
        typeof f.reason === 'string'
          ? f.reason
          : f.nodeAddress
            ? `node address (${s(f.nodeAddress)})`
            : 'not routed via a selected device';
      rows.push([s(f.ip), s(f.owners), '-', why, '', '']);
    }
    for (const d of devs) {
      const nhs = arr(d.nexthops);
      if (nhs.length === 0)
        rows.push([
          s(f.ip),
          s(f.owners),
          s(d.device),
          `lookup failed: ${s(d.lookupError)}`,
          '',
          '',
        ]);
      for (const nh of nhs) {
        rows.push([
          s(f.ip),
          s(f.owners),
          s(d.device),
          s(nh.nexthop),
          `${s(nh.status)}${nh.error ? ` (${s(nh.error)})` : ''}`,
          kernelText(nh.kernel),
        ]);
      }
    }
  }
  out += table(['IP', 'OWNERS', 'DEVICE', 'NEXT HOP', 'RECONCILE', 'KERNEL ENTRY'], rows);
  return out;
}

function extipSection(e: Loose<ExtipSection>): string {
  let out = `\nExternal IPs (holder ${s(e.holder?.name)}, announced from ${s(e.externalInterface?.name)})\n`;
  out += table(
    ['IP', 'STATE', 'SOURCE', 'ANNOUNCED', 'ERROR'],
    arr(e.ips).map((i) => [
      s(i.ip),
      s(i.state),
      i.cluster ? 'cluster' : 'local',
      typeof i.announcedAt === 'number' ? new Date(i.announcedAt).toISOString() : s(i.announcedAt),
      s(i.lastError, ''),
    ]),
  );
  return out;
}

const ago = (ms: unknown): string =>
  typeof ms === 'number' ? (ms >= 10_000 ? `${Math.round(ms / 1000)}s` : `${ms}ms`) : '-';

/** `fibkeeper cluster status` and the cluster part of `fibkeeper status`. */
export function formatClusterStatus(c: Loose<ClusterSection>): string {
  const lease = c.lease ?? {};
  let out = `Cluster: node ${s(c.node)}, ${c.ready ? 'registered' : 'NOT registered'}; lease ${s(lease.id)} (TTL ${s(lease.ttlMs)} ms, age ${ago(lease.ageMs)}, holds for ${s(lease.holdForMs)} ms more without a renewal)\n`;
  const sys = c.sysctls;
  if (Array.isArray(sys) && sys.length > 0) {
    out += `  kernel quiet for holder addresses: ${arr(sys)
      .map(
        (x) =>
          `${s(x.key)}=${s(x.effective)}${Number(x.effective) < Number(x.want) ? ` (NEEDS ${s(x.want)})` : ''}`,
      )
      .join(', ')}\n`;
  } else if (typeof sys === 'string') out += `  sysctls: ${sys}\n`;
  if (c.holding !== undefined) {
    out += `  holds ${c.holding === 'grace' ? "on the peers' promises (etcd out of reach for every member)" : c.holding === 'lease' ? 'by its lease' : 'nothing'}${c.holdDeadlineInMs !== undefined ? `; kernel fence in ${s(c.holdDeadlineInMs)} ms` : ''}${c.able === false ? '; UNABLE (external interface without link)' : ''}\n`;
  }
  const heard = new Map(arr(c.peers).map((p) => [s(p.node), p]));
  out += '\nMembers\n';
  out += table(
    ['NODE', 'STATE', 'SEEN FOR', 'HEARD', 'LABELS', 'NODE IPS'],
    arr(c.members).map((m) => {
      const p = heard.get(s(m.name));
      return [
        s(m.name),
        (m.cordoned ? 'cordoned' : m.able === false ? 'unable' : 'ok') + (m.bgp ? ' bgp' : ''),
        ago(m.seenForMs),
        m.name === c.node
          ? '(self)'
          : p?.heardAgoMs === undefined
            ? '-'
            : `${ago(p.heardAgoMs)} ago${p.grace ? ' grace' : ''}${p.promising ? ' no-etcd' : ''}`,
        Object.entries(m.labels ?? {})
          .map(([k, v]) => `${k}=${s(v)}`)
          .join(',') || '-',
        s(m.ips),
      ];
    }),
  );
  const ips = arr(c.ips);
  out += `\nCluster external IPs${c.totalIps !== undefined && c.totalIps !== ips.length ? ` (first ${ips.length} of ${s(c.totalIps)})` : ''}\n`;
  out += table(
    ['IP', 'OWNER', 'PLACEMENT', 'LAST MOVE', 'HERE'],
    ips.map((i) => [
      s(i.ip),
      // active-active: every announcer holds it (no owner, no placement)
      i.mode === 'active-active' ? `all: ${arr(i.announcers).join(',') || 'none'}` : s(i.owner),
      i.mode === 'active-active' ? 'active-active' : s(i.placement),
      i.lastMoveAgoMs === undefined ? '-' : `${ago(i.lastMoveAgoMs)} ago`,
      [
        i.heldHere ? 'held' : '',
        i.conflict ? `CONFLICT ${s(i.conflict.mac)}` : '',
        i.coolingForMs !== undefined ? `cooling ${s(i.coolingForMs)} ms` : '',
      ]
        .filter(Boolean)
        .join(' '),
    ]),
  );
  const problems = arr(c.problems);
  if (problems.length > 0) {
    out +=
      '  keys ignored:\n' +
      problems.map((p) => `    ${s(p.key)}: ${s(p.problem)}`).join('\n') +
      '\n';
  }
  return out;
}

export function formatStatus(st: Loose<StatusDocument>): string {
  let out = agentSection(st);
  if (st.xdp) out += xdpSection(st.xdp);
  if (st.neighbor) out += neighborSection(st.neighbor);
  if (st.extip) out += extipSection(st.extip);
  if (st.cluster) out += '\n' + formatClusterStatus(st.cluster);
  if (st.missTracker) out += `\nXDP miss tracker: ${s(st.missTracker.tracked)} next hops learned\n`;
  if (st.stateFile) out += stateFileSection(st.stateFile);
  return out;
}

function stateFileSection(f: Loose<StateFileSection>): string {
  const skipped = arr(f.skipped);
  let out = `\nState file ${s(f.path, '(none: the API state is not kept)')}: ${skipped.length} entries not applied\n`;
  if (skipped.length > 0) {
    out += table(
      ['ENTRY', 'WHY'],
      skipped.map((e) => [s(e.entry), s(e.reason)]),
    );
  }
  return out;
}
