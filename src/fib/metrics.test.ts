// The fibkeeper_xdp_* metric group (src/fib/metrics.ts) over a fake source: values read at
// scrape time, the label sets, and promtool's verdict on the exposition.
import { spawnSync } from 'node:child_process';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { registerXdpMetrics, type XdpMetricsSource } from './metrics.js';
import { emptyCounters } from './layout.js';
import { zeroRedirectErrors } from './layout-state.js';

const PROMTOOL = spawnSync('promtool', ['--version']).status === 0;

describe('fibkeeper_xdp_* metrics', () => {
  it('read the source at each scrape, one series per device and label value', async () => {
    const registry = new Registry();
    const eth0 = emptyCounters();
    let reads = 0;
    const source: XdpMetricsSource = {
      counters: () => {
        reads++;
        return [
          { device: 'eth0', ...eth0, redirectErrors: { ...zeroRedirectErrors(), too_big: 4 } },
          { device: ':other', ...emptyCounters(), redirectErrors: zeroRedirectErrors() },
        ];
      },
      attachments: () => [{ device: 'eth0', mode: 'native' }],
      foreignDevices: () => ['eth1'],
      missEntries: () => 3,
    };
    registerXdpMetrics(registry, source);
    eth0.results.success = { packets: 7, bytes: 700 };
    eth0.actions.redirect = { packets: 7, bytes: 700 };
    eth0.reasons.arp = { packets: 2, bytes: 120 };
    let text = await registry.metrics();
    expect(text).toContain(
      'fibkeeper_xdp_fib_lookup_packets_total{device="eth0",result="success"} 7',
    );
    expect(text).toContain(
      'fibkeeper_xdp_fib_lookup_bytes_total{device="eth0",result="success"} 700',
    );
    expect(text).toContain(
      'fibkeeper_xdp_fib_lookup_packets_total{device=":other",result="no_neigh"} 0',
    );
    expect(text).toContain('fibkeeper_xdp_actions_total{device="eth0",action="redirect"} 7');
    expect(text).toContain('fibkeeper_xdp_action_bytes_total{device="eth0",action="redirect"} 700');
    expect(text).toContain('fibkeeper_xdp_not_handled_total{device="eth0",reason="arp"} 2');
    expect(text).toContain('fibkeeper_xdp_attached{device="eth0",mode="native"} 1');
    expect(text).toContain('fibkeeper_xdp_foreign_program{device="eth1"} 1');
    expect(text).toContain('fibkeeper_xdp_miss_entries 3');
    // 11 results + 5 actions + 32 reasons per device, packets and bytes where kept
    expect(text.match(/^fibkeeper_xdp_fib_lookup_packets_total\{/gm)).toHaveLength(22);
    expect(text.match(/^fibkeeper_xdp_not_handled_total\{/gm)).toHaveLength(64);
    // redirect errors: every reason of every device, from zero
    expect(text).toContain('fibkeeper_xdp_redirect_errors_total{device="eth0",reason="too_big"} 4');
    expect(text).toContain(
      'fibkeeper_xdp_redirect_errors_total{device=":other",reason="xmit_drop"} 0',
    );
    expect(text.match(/^fibkeeper_xdp_redirect_errors_total\{/gm)).toHaveLength(10);
    // lazily: the next scrape sees the new value
    eth0.results.success = { packets: 9, bytes: 900 };
    text = await registry.metrics();
    expect(text).toContain(
      'fibkeeper_xdp_fib_lookup_packets_total{device="eth0",result="success"} 9',
    );
    expect(reads).toBeGreaterThan(0);
    if (PROMTOOL) {
      const check = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
      expect(check.stdout + check.stderr).toBe('');
    }
  });

  it('the node policy: the mode, and each device and direction it acts on', async () => {
    const registry = new Registry();
    const set = registerXdpMetrics(registry);
    const devices = [
      { device: 'eth0', direction: 'ipv4', reason: 'netfilter' },
      { device: 'eth1', direction: 'egress', reason: 'egress_tc' },
    ];
    const base = { counters: () => [], attachments: () => [], foreignDevices: () => [] };
    set({ ...base, missEntries: () => 0, nodePolicy: () => ({ mode: 'respect', devices }) });
    let text = await registry.metrics();
    expect(text).toContain('fibkeeper_xdp_node_policy{mode="respect"} 1');
    expect(text).toContain(
      'fibkeeper_xdp_policy_passed{device="eth0",direction="ipv4",reason="netfilter"} 1',
    );
    expect(text).toContain(
      'fibkeeper_xdp_policy_passed{device="eth1",direction="egress",reason="egress_tc"} 1',
    );
    set({ ...base, missEntries: () => 0, nodePolicy: () => ({ mode: 'bypass', devices }) });
    text = await registry.metrics();
    expect(text).toContain('fibkeeper_xdp_node_policy{mode="bypass"} 1');
    expect(text).not.toContain('fibkeeper_xdp_node_policy{mode="respect"}');
    expect(text).toContain(
      'fibkeeper_xdp_policy_passed{device="eth0",direction="ipv4",reason="netfilter"} 0',
    );
    if (PROMTOOL) {
      const check = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
      expect(check.stdout + check.stderr).toBe('');
    }
  });

  it('report nothing without a source (the forwarder stopped)', async () => {
    const registry = new Registry();
    const set = registerXdpMetrics(registry);
    expect(await registry.metrics()).not.toMatch(/^fibkeeper_xdp_fib_lookup_packets_total\{/m);
    set({
      counters: () => [{ device: 'eth0', ...emptyCounters() }],
      attachments: () => [],
      foreignDevices: () => [],
      missEntries: () => 0,
    });
    expect(await registry.metrics()).toMatch(
      /^fibkeeper_xdp_fib_lookup_packets_total\{device="eth0"/m,
    );
    set(undefined);
    expect(await registry.metrics()).not.toMatch(/^fibkeeper_xdp_fib_lookup_packets_total\{/m);
    // registering again on the same registry (a new forwarder) reuses the group
    const again = registerXdpMetrics(registry);
    again({
      counters: () => [{ device: 'eth9', ...emptyCounters() }],
      attachments: () => [],
      foreignDevices: () => [],
      missEntries: () => 0,
    });
    expect(await registry.metrics()).toMatch(
      /^fibkeeper_xdp_fib_lookup_packets_total\{device="eth9"/m,
    );
  });
});
