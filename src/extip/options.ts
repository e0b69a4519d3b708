// The subsystem's options: defaults in one place, each with the reason, and a check that
// names the option at fault.
import { ConfigError } from '../errors/index.js';

export type HolderKind = 'dummy' | 'bridge' | 'ifb';
export const HOLDER_KINDS: readonly HolderKind[] = ['dummy', 'bridge', 'ifb'];

export interface ExternalIpConfig {
  /** Name of the device that holds the external IPs (extip.holderName). */
  holderName: string;
  /** Link type of the holder when it has to be created (extip.holderKind). */
  holderKind: HolderKind;
  /** External interface by name (extip.interface); "" = the device that carries nodeIP. */
  interface: string;
  /** The node's transport IP (extip.nodeIP), used when `interface` is "". */
  nodeIP: string;
  /** Announcements per burst (extip.announceCount); 0 = never announce. */
  announceCount: number;
  /** Gap between the announcements of one burst (extip.announceInterval), ms. */
  announceIntervalMs: number;
  /** Periodic re-announcement of every external IP (extip.refreshInterval), ms; 0 = off. */
  refreshIntervalMs: number;
  /** Periodic comparison of the holder with the desired set, ms; 0 = only on events. */
  checkIntervalMs: number;
  /** Least time between two re-announcements of one IP because of a conflict, ms. */
  defendIntervalMs: number;
  /** Most conflict re-announcements per second over all IPs. */
  defendRatePerSecond: number;
  /**
   * Duplicate address detection on the external interface before an IP is assigned (extip.dad):
   * IPv6 neighbor solicitations from :: (RFC 4862), IPv4 ARP probes (RFC 5227).
   */
  dad: boolean;
  /** Probes sent per IP (extip.dadProbes). */
  dadProbes: number;
  /** Gap between two probes, ms (extip.dadInterval). */
  dadIntervalMs: number;
  /** Listening after the last probe, ms (extip.dadWait). */
  dadWaitMs: number;
  /**
   * Answer ARP requests for external IPs on the external interface: "auto" = only when
   * arp_ignore (all or the interface) keeps the kernel from answering for an address on
   * another device. Neighbor solicitations are always answered: the kernel answers only for
   * addresses on the receiving interface.
   */
  arpResponder: 'auto' | 'always' | 'never';
}

export function defaultOptions(): ExternalIpConfig {
  return {
    // The config default (extip.holderName): a name no distribution uses.
    holderName: 'fibkeeper0',
    // dummy is the lightest device that can hold addresses; kernels without it use bridge/ifb.
    holderKind: 'dummy',
    interface: '',
    nodeIP: '',
    // Three, one second apart: what arping -U and keepalived send; survives one lost frame.
    announceCount: 3,
    announceIntervalMs: 1000,
    // Off: most switches keep entries for minutes and the kernel answers ARP anyway.
    refreshIntervalMs: 0,
    // Events repair at once; this catches what a lost notification would hide.
    checkIntervalMs: 30_000,
    // RFC 5227 DEFEND_INTERVAL: at most one defence per address per 10 s.
    defendIntervalMs: 10_000,
    // Bounds the frames a flood of conflicting claims can make us send.
    defendRatePerSecond: 20,
    // On: an address another host holds is refused, not stolen. Its cost is the wait below,
    // (probes - 1) × interval + wait = 1.5 s per assign (all IPs of a request in parallel).
    dad: true,
    // Three probes: two may be lost (RFC 5227 PROBE_NUM); RFC 4862 sends one.
    dadProbes: 3,
    // Hosts on a segment answer within milliseconds; RFC 5227 spaces its probes 1-2 s apart
    // for slow links, which would make every assign take 4-7 s.
    dadIntervalMs: 250,
    // RFC 4862 RetransTimer: a second for the last answer to come back.
    dadWaitMs: 1000,
    arpResponder: 'auto',
  };
}

function intIn(name: string, v: number, min: number, max: number): void {
  if (!Number.isInteger(v) || v < min || v > max) {
    throw new ConfigError(name, `must be an integer in [${min}, ${max}], got ${v}`);
  }
}

/** Fills in defaults and checks every option; ConfigError names the option (extip.*). */
export function resolveOptions(partial: Partial<ExternalIpConfig>): ExternalIpConfig {
  const o: ExternalIpConfig = { ...defaultOptions() };
  for (const [k, v] of Object.entries(partial)) {
    if (v !== undefined) (o as unknown as Record<string, unknown>)[k] = v;
  }
  if (!/^[A-Za-z0-9_.-]{1,15}$/.test(o.holderName)) {
    throw new ConfigError('extip.holderName', `"${o.holderName}" is not a device name`);
  }
  if (!HOLDER_KINDS.includes(o.holderKind)) {
    throw new ConfigError(
      'extip.holderKind',
      `must be one of ${HOLDER_KINDS.join(', ')}, got "${String(o.holderKind)}"`,
    );
  }
  if (o.interface !== '' && !/^[^\s/:]{1,15}$/.test(o.interface)) {
    throw new ConfigError('extip.interface', `"${o.interface}" is not a device name`);
  }
  if (o.interface === o.holderName) {
    throw new ConfigError(
      'extip.interface',
      `the external interface cannot be the holder device ${o.holderName}`,
    );
  }
  intIn('extip.announceCount', o.announceCount, 0, 100);
  intIn('extip.announceInterval', o.announceIntervalMs, 10, 3_600_000);
  intIn('extip.refreshInterval', o.refreshIntervalMs, 0, 86_400_000);
  if (o.refreshIntervalMs !== 0 && o.refreshIntervalMs < 1000) {
    throw new ConfigError('extip.refreshInterval', 'must be 0 (off) or at least 1s');
  }
  intIn('extip.checkInterval', o.checkIntervalMs, 0, 86_400_000);
  intIn('extip.defendInterval', o.defendIntervalMs, 0, 3_600_000);
  if (!(o.defendRatePerSecond > 0 && o.defendRatePerSecond <= 100_000)) {
    throw new ConfigError(
      'extip.defendRate',
      `must be in (0, 100000], got ${o.defendRatePerSecond}`,
    );
  }
  if (typeof o.dad !== 'boolean') {
    throw new ConfigError('extip.dad', `must be true or false, got ${String(o.dad)}`);
  }
  intIn('extip.dadProbes', o.dadProbes, 1, 10);
  intIn('extip.dadInterval', o.dadIntervalMs, 10, 10_000);
  intIn('extip.dadWait', o.dadWaitMs, 10, 60_000);
  if (!['auto', 'always', 'never'].includes(o.arpResponder)) {
    throw new ConfigError(
      'extip.arpResponder',
      `must be auto, always or never, got "${String(o.arpResponder)}"`,
    );
  }
  return o;
}
