import { spawnSync } from 'node:child_process';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { noopExtipMetrics, registerExtipMetrics } from './metrics.js';

describe('extip metrics', () => {
  it('exposes every fibkeeper_extip_* series, lint-clean, with the counts added lazily', async () => {
    const registry = new Registry();
    const m = registerExtipMetrics(registry);
    m.setAssigned('ipv4', 3);
    m.setAssigned('ipv4', 2);
    m.setFailed('ipv6', 1);
    m.announced('ipv4', 'assign', 1000);
    m.announced('ipv4', 'assign');
    m.announced('ipv6', 'defend');
    m.framesSent('ipv4', 2002);
    m.responded('ipv6');
    m.repaired('holder');
    m.conflict('ipv4');
    m.error('announce');
    m.resync('overflow');
    let text = await registry.metrics();
    for (const line of [
      'fibkeeper_extip_assigned{family="ipv4"} 2',
      'fibkeeper_extip_assigned{family="ipv6"} 0',
      'fibkeeper_extip_failed{family="ipv4"} 0',
      'fibkeeper_extip_failed{family="ipv6"} 1',
      'fibkeeper_extip_announcements_sent_total{family="ipv4",reason="assign"} 1001',
      'fibkeeper_extip_announcements_sent_total{family="ipv6",reason="defend"} 1',
      'fibkeeper_extip_frames_sent_total{family="ipv4"} 2002',
      'fibkeeper_extip_frames_sent_total{family="ipv6"} 0',
      'fibkeeper_extip_responses_sent_total{family="ipv6"} 1',
      'fibkeeper_extip_repairs_total{kind="holder"} 1',
      'fibkeeper_extip_conflicts_total{family="ipv4"} 1',
      'fibkeeper_extip_conflicts_total{family="ipv6"} 0',
      'fibkeeper_extip_errors_total{op="announce"} 1',
      'fibkeeper_extip_resyncs_total{reason="overflow"} 1',
    ]) {
      expect(text).toContain(line);
    }
    // a second scrape adds only what happened since
    m.announced('ipv4', 'assign', 9);
    text = await registry.metrics();
    expect(text).toContain(
      'fibkeeper_extip_announcements_sent_total{family="ipv4",reason="assign"} 1010',
    );
    text = await registry.metrics();
    expect(text).toContain(
      'fibkeeper_extip_announcements_sent_total{family="ipv4",reason="assign"} 1010',
    );
    const check = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
    expect(check.stderr + check.stdout).toBe('');
    expect(check.status).toBe(0);
    expect(text).not.toMatch(/\d+\.\d+\.\d+\.\d+"/); // no IP ever becomes a label
  });

  it('the no-op updater accepts every call', () => {
    const m = noopExtipMetrics();
    expect(() => {
      m.setAssigned('ipv6', 1);
      m.announced('ipv6', 'refresh');
      m.error('listen');
    }).not.toThrow();
  });
});
