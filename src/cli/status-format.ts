// `fibkeeper status` as a readable report. The input is the API's status document; fields
// are read defensively so an older agent's document still prints.
type Obj = Record<string, unknown>;

const obj = (v: unknown): Obj =>
  v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : {};
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
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

function agentSection(st: Obj): string {
  const kernel = obj(st.kernel);
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

function xdpSection(x: Obj): string {
  const devs = arr(x.devices).map(obj);
  let out =
    '\nXDP\n' +
    table(
      ['DEVICE', 'IFINDEX', 'ATTACHED', 'MODE', 'PROG', 'LINK', 'SLOT'],
      devs.map((d) => [
        s(d.name),
        s(d.ifindex),
        s(d.attached),
        s(d.mode),
        s(d.progId),
        s(d.linkId),
        s(d.slot),
      ]),
    );
  const counters = arr(x.counters).map(obj);
  const rows: string[][] = [];
  for (const c of counters) {
    for (const [kind, label] of [
      ['results', 'result'],
      ['actions', 'action'],
      ['reasons', 'not handled'],
    ] as const) {
      for (const [name, v] of Object.entries(obj(c[kind]))) {
        const p = obj(v);
        if (Number(p.packets ?? 0) > 0)
          rows.push([s(c.device), label, name, s(p.packets), s(p.bytes)]);
      }
    }
  }
  out +=
    '\nXDP counters (non-zero)\n' + table(['DEVICE', 'KIND', 'NAME', 'PACKETS', 'BYTES'], rows);
  return out;
}

/** A next hop's kernel entry: state, flags, lladdr, and whose it is when not fibkeeper's. */
function kernelText(present: unknown, k: Obj): string {
  if (!present) return 'absent';
  const text = `${s(k.state)} ${s(k.flags, '')} ${s(k.lladdr, '')}`.replace(/ +/g, ' ').trim();
  if (k.owner === 'foreign') return `${text} (foreign: left alone)`;
  if (k.owner === 'kernel') return `${text} (kernel's: adopted on the next write)`;
  return text;
}

function neighborSection(n: Obj): string {
  const sum = obj(n.summary);
  let out = `\nNeighbors (mode ${s(n.mode)}, protocol ${s(n.protocol)})\n`;
  out += `  forwardable IPs ${s(sum.forwardableIps)}, desired entries ${s(sum.desiredEntries)}, selected devices ${s(sum.selectedDevices)}\n`;
  const by = obj(sum.desiredByStatus);
  out += `  reconcile: ${s(by.done, '0')} done, ${s(by.pending, '0')} pending, ${s(by.error, '0')} error; kernel states: ${
    Object.entries(obj(sum.kernelEntriesByState))
      .map(([k, v]) => `${k}=${s(v)}`)
      .join(' ') || '-'
  }${Number(sum.foreignEntries ?? 0) > 0 ? `; foreign (left alone): ${s(sum.foreignEntries)}` : ''}\n`;
  const rows: string[][] = [];
  for (const f of arr(n.forwardable).map(obj)) {
    // Only the devices the IP is routed through (or whose lookup failed).
    const devs = arr(f.devices)
      .map(obj)
      .filter((d) => arr(d.nexthops).length > 0 || d.lookupError);
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
      const nhs = arr(d.nexthops).map(obj);
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
        const k = obj(nh.kernel);
        rows.push([
          s(f.ip),
          s(f.owners),
          s(d.device),
          s(nh.nexthop),
          `${s(nh.status)}${nh.error ? ` (${s(nh.error)})` : ''}`,
          kernelText(nh.kernel, k),
        ]);
      }
    }
  }
  out += table(['IP', 'OWNERS', 'DEVICE', 'NEXT HOP', 'RECONCILE', 'KERNEL ENTRY'], rows);
  const errors = arr(n.recentErrors ?? obj(n.health).errors).map(obj);
  if (errors.length) {
    out +=
      '  recent errors:\n' + errors.map((e) => `    ${s(e.key)}: ${s(e.error)}`).join('\n') + '\n';
  }
  return out;
}

function extipSection(e: Obj): string {
  const holder = obj(e.holder);
  const ext = obj(e.externalInterface);
  let out = `\nExternal IPs (holder ${s(holder.name)}, announced from ${s(ext.name)})\n`;
  out += table(
    ['IP', 'STATE', 'SOURCE', 'ANNOUNCED', 'ERROR'],
    arr(e.ips)
      .map(obj)
      .map((i) => [
        s(i.ip),
        s(i.state),
        i.cluster ? 'cluster' : 'local',
        typeof i.announcedAt === 'number'
          ? new Date(i.announcedAt).toISOString()
          : s(i.announcedAt),
        s(i.lastError, ''),
      ]),
  );
  return out;
}

const ago = (ms: unknown): string =>
  typeof ms === 'number' ? (ms >= 10_000 ? `${Math.round(ms / 1000)}s` : `${ms}ms`) : '-';

/** `fibkeeper cluster status` and the cluster part of `fibkeeper status`. */
export function formatClusterStatus(c: Obj): string {
  const lease = obj(c.lease);
  let out = `Cluster: node ${s(c.node)}, ${c.ready ? 'registered' : 'NOT registered'}; lease ${s(lease.id)} (TTL ${s(lease.ttlMs)} ms, age ${ago(lease.ageMs)}, holds for ${s(lease.holdForMs)} ms more without a renewal)\n`;
  const sys = c.sysctls;
  if (Array.isArray(sys) && sys.length > 0) {
    out += `  kernel quiet for holder addresses: ${sys
      .map(obj)
      .map(
        (x) =>
          `${s(x.key)}=${s(x.effective)}${Number(x.effective) < Number(x.want) ? ` (NEEDS ${s(x.want)})` : ''}`,
      )
      .join(', ')}\n`;
  } else if (typeof sys === 'string') out += `  sysctls: ${sys}\n`;
  out += '\nMembers\n';
  out += table(
    ['NODE', 'SEEN FOR', 'LABELS', 'NODE IPS'],
    arr(c.members)
      .map(obj)
      .map((m) => [
        s(m.name),
        ago(m.seenForMs),
        Object.entries(obj(m.labels))
          .map(([k, v]) => `${k}=${s(v)}`)
          .join(',') || '-',
        s(m.ips),
      ]),
  );
  out += `\nCluster external IPs${c.totalIps !== undefined && c.totalIps !== arr(c.ips).length ? ` (first ${arr(c.ips).length} of ${s(c.totalIps)})` : ''}\n`;
  out += table(
    ['IP', 'OWNER', 'PLACEMENT', 'LAST MOVE', 'HERE'],
    arr(c.ips)
      .map(obj)
      .map((i) => [
        s(i.ip),
        s(i.owner),
        s(i.placement),
        i.lastMoveAgoMs === undefined ? '-' : `${ago(i.lastMoveAgoMs)} ago`,
        i.heldHere ? 'held' : '',
      ]),
  );
  const problems = arr(c.problems).map(obj);
  if (problems.length > 0) {
    out +=
      '  keys ignored:\n' +
      problems.map((p) => `    ${s(p.key)}: ${s(p.problem)}`).join('\n') +
      '\n';
  }
  return out;
}

export function formatStatus(st: Obj): string {
  let out = agentSection(st);
  if (st.xdp) out += xdpSection(obj(st.xdp));
  if (st.neighbor) out += neighborSection(obj(st.neighbor));
  if (st.extip) out += extipSection(obj(st.extip));
  if (st.cluster) out += '\n' + formatClusterStatus(obj(st.cluster));
  if (st.missTracker)
    out += `\nXDP miss tracker: ${s(obj(st.missTracker).tracked)} next hops learned\n`;
  if (st.stateFile) out += stateFileSection(obj(st.stateFile));
  return out;
}

function stateFileSection(f: Obj): string {
  const skipped = arr(f.skipped).map(obj);
  let out = `\nState file ${s(f.path, '(none: the API state is not kept)')}: ${skipped.length} entries not applied\n`;
  if (skipped.length > 0) {
    out += table(
      ['ENTRY', 'WHY'],
      skipped.map((e) => [s(e.entry), s(e.reason)]),
    );
  }
  return out;
}
