// The subsystem's options: the config's `extip.*` section under its own names (durations in
// ms), validated by src/config before they get here. The defaults, each with its reason,
// are the config table's (src/config/schema.ts); this file only fills in what a caller
// (a test, a benchmark) leaves out.
import { defaultConfig, type FibkeeperConfig } from '../config/index.js';

/**
 * `extip.*` but the lists of IPs (`static`) and the switch (`enabled`): the holder device
 * (holderName, holderKind), the external interface (interface, or the device that carries
 * nodeIP), announcement bursts (announceCount, announceInterval, refreshInterval),
 * the periodic check (checkInterval), conflict defence (defendInterval, defendRate),
 * duplicate address detection (dad, dadProbes, dadInterval, dadWait) and arpResponder.
 */
export type ExternalIpConfig = Omit<FibkeeperConfig['extip'], 'enabled' | 'static'>;

export type HolderKind = ExternalIpConfig['holderKind'];
export const HOLDER_KINDS: readonly HolderKind[] = ['dummy', 'bridge', 'ifb'];

/** The config table's defaults of every extip option. */
export function defaultOptions(): ExternalIpConfig {
  const { enabled: _enabled, static: _static, ...o } = defaultConfig().extip;
  return o;
}

/** `partial` with the defaults filled in (undefined fields take the default). */
export function resolveOptions(partial: Partial<ExternalIpConfig>): ExternalIpConfig {
  const o: ExternalIpConfig = defaultOptions();
  for (const [k, v] of Object.entries(partial)) {
    if (v !== undefined) (o as unknown as Record<string, unknown>)[k] = v;
  }
  return o;
}
