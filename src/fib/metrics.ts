// Metric group of the XDP forwarder (src/fib): the per-device counters of fk_xdp_fwd, read
// from its per-CPU map at scrape time, and which devices have the program attached. Labels:
// device (a device name, or ":other" for the shared slot of devices beyond the 63rd — a name
// no Linux device can have), result, action, reason, mode. IPs never become labels.
import { Counter, Gauge, type Registry } from '../metrics/index.js';
import type { XdpDeviceCounters, XdpDeviceStatus } from './types.js';

export interface PacketBytesLike {
  packets: number;
  bytes: number;
}

/** One device's counters (SlotCounters of src/fib with the device's name). */
export interface XdpDeviceCountersLike {
  device: string;
  actions: Readonly<Record<string, PacketBytesLike>>;
  results: Readonly<Record<string, PacketBytesLike>>;
  reasons: Readonly<Record<string, PacketBytesLike>>;
  /** Frames redirected that never left, by reason (every reason present, zeros included). */
  redirectErrors?: Readonly<Record<string, number>>;
}

/** What the metrics read at scrape time. */
export interface XdpMetricsSource {
  counters(): readonly XdpDeviceCountersLike[];
  /** Devices with fibkeeper's program attached, and how (native, generic). */
  attachments(): readonly { device: string; mode: string }[];
  /** Selected devices on which another XDP program keeps fibkeeper's out. */
  foreignDevices(): readonly string[];
  /** Entries in the NO_NEIGH miss map. */
  missEntries(): number;
  /**
   * xdp.nodePolicy (respect or bypass), and the traffic of each device that the node's policy
   * acts on (direction ipv4, ipv6: frames entering the device; egress: frames routed out of
   * it) with the reason it is passed under (or would be, under bypass).
   */
  nodePolicy?(): {
    mode: string;
    devices: readonly { device: string; direction: string; reason: string }[];
  };
}

type Field = 'actions' | 'results' | 'reasons';

/** What the forwarder reports, as the metrics read it at scrape time. */
export function forwarderMetrics(x: {
  counters(): XdpDeviceCounters[];
  status(): XdpDeviceStatus[];
  readMisses(): readonly unknown[];
  nodePolicyMode(): string;
}): XdpMetricsSource {
  return {
    counters: () => x.counters(),
    attachments: () =>
      x
        .status()
        .filter((d) => d.attached === 'ours')
        .map((d) => ({ device: d.name, mode: d.mode ?? 'unknown' })),
    foreignDevices: () =>
      x
        .status()
        .filter((d) => d.attached === 'foreign')
        .map((d) => d.name),
    missEntries: () => x.readMisses().length,
    nodePolicy: () => ({
      mode: x.nodePolicyMode(),
      devices: x.status().flatMap((d) =>
        (['ipv4', 'ipv6', 'egress'] as const).flatMap((direction) => {
          const first = d.policy?.[direction][0];
          return first ? [{ device: d.name, direction, reason: first.reason }] : [];
        }),
      ),
    }),
  };
}

function counter(
  registry: Registry,
  name: string,
  help: string,
  label: string,
  field: Field,
  value: 'packets' | 'bytes',
  source: () => XdpMetricsSource | undefined,
): void {
  new Counter({
    name,
    help,
    labelNames: ['device', label],
    registers: [registry],
    collect() {
      this.reset();
      for (const c of source()?.counters() ?? []) {
        for (const [k, v] of Object.entries(c[field])) {
          this.inc({ device: c.device, [label]: k }, v[value]);
        }
      }
    },
  });
}

/**
 * Registers the fibkeeper_xdp_* metrics on `registry`; they read `source` lazily (nothing
 * is read between scrapes). Returns a setter for the source (undefined: report nothing).
 */
export function registerXdpMetrics(
  registry: Registry,
  initial?: XdpMetricsSource,
): (source: XdpMetricsSource | undefined) => void {
  // a second forwarder on the same registry (a restart inside one process) takes the group over
  const known = registered.get(registry);
  if (known !== undefined) {
    known(initial);
    return known;
  }
  let src = initial;
  const get = () => src;
  counter(
    registry,
    'fibkeeper_xdp_fib_lookup_packets_total',
    'Packets that reached bpf_fib_lookup in the XDP program, by device (ingress) and lookup result (success, no_neigh, frag_needed, ...; error = helper error).',
    'result',
    'results',
    'packets',
    get,
  );
  counter(
    registry,
    'fibkeeper_xdp_fib_lookup_bytes_total',
    'Bytes (Ethernet frames without FCS) that reached bpf_fib_lookup, by device and lookup result.',
    'result',
    'results',
    'bytes',
    get,
  );
  counter(
    registry,
    'fibkeeper_xdp_actions_total',
    'Packets seen by the XDP program, by device and verdict (redirect = forwarded in XDP, pass = handed to the kernel stack).',
    'action',
    'actions',
    'packets',
    get,
  );
  counter(
    registry,
    'fibkeeper_xdp_action_bytes_total',
    'Bytes seen by the XDP program, by device and verdict.',
    'action',
    'actions',
    'bytes',
    get,
  );
  counter(
    registry,
    'fibkeeper_xdp_not_handled_total',
    'Packets the XDP program passed to the kernel stack, by device and reason: before any lookup (l2_otherhost, ip4_csum, martian_src, local_src, ...) or after a SUCCESS one (no_txport, hairpin, multipath, rp_filter, route_mtu, trim_error).',
    'reason',
    'reasons',
    'packets',
    get,
  );
  new Counter({
    name: 'fibkeeper_xdp_redirect_errors_total',
    help: 'Frames the XDP program redirected that never left the egress device (too_big, down, no_target: the kernel refused the redirect; xmit_drop: the egress driver dropped them; other), by ingress device and reason. Counted by a tracepoint program; per current ifindex of the device.',
    labelNames: ['device', 'reason'],
    registers: [registry],
    collect() {
      this.reset();
      for (const c of src?.counters() ?? []) {
        for (const [k, v] of Object.entries(c.redirectErrors ?? {})) {
          this.inc({ device: c.device, reason: k }, v);
        }
      }
    },
  });
  new Gauge({
    name: 'fibkeeper_xdp_attached',
    help: "1 for each device with fibkeeper's XDP program attached, labelled with the attach mode (native or generic).",
    labelNames: ['device', 'mode'],
    registers: [registry],
    collect() {
      this.reset();
      for (const a of src?.attachments() ?? []) this.set({ device: a.device, mode: a.mode }, 1);
    },
  });
  new Gauge({
    name: 'fibkeeper_xdp_foreign_program',
    help: '1 for each selected device on which an XDP program fibkeeper did not attach keeps its program out (see fibkeeper status; xdp.force replaces it).',
    labelNames: ['device'],
    registers: [registry],
    collect() {
      this.reset();
      for (const d of src?.foreignDevices() ?? []) this.set({ device: d }, 1);
    },
  });
  new Gauge({
    name: 'fibkeeper_xdp_node_policy',
    help: "1 for the value of xdp.nodePolicy: respect (traffic the node's own netfilter, tc or xfrm policy acts on goes to the kernel) or bypass (XDP forwards past that policy).",
    labelNames: ['mode'],
    registers: [registry],
    collect() {
      this.reset();
      const p = src?.nodePolicy?.();
      if (p !== undefined) this.set({ mode: p.mode }, 1);
    },
  });
  new Gauge({
    name: 'fibkeeper_xdp_policy_passed',
    help: "1 for each device and direction (ipv4, ipv6: frames entering it; egress: frames routed out of it) whose traffic the node's own policy acts on, labelled with the reason it goes to the kernel under (netfilter, tc, xfrm, egress_netfilter, egress_tc); 0 under xdp.nodePolicy bypass, where XDP forwards past it.",
    labelNames: ['device', 'direction', 'reason'],
    registers: [registry],
    collect() {
      this.reset();
      const p = src?.nodePolicy?.();
      for (const d of p?.devices ?? []) {
        this.set(
          { device: d.device, direction: d.direction, reason: d.reason },
          p?.mode === 'respect' ? 1 : 0,
        );
      }
    },
  });
  new Gauge({
    name: 'fibkeeper_xdp_miss_entries',
    help: 'Destinations in the XDP miss map (lookups that answered NO_NEIGH, not yet consumed by the miss tracker).',
    registers: [registry],
    collect() {
      this.set(src?.missEntries() ?? 0);
    },
  });
  const set = (s: XdpMetricsSource | undefined): void => {
    src = s;
  };
  registered.set(registry, set);
  return set;
}

const registered = new WeakMap<Registry, (source: XdpMetricsSource | undefined) => void>();
