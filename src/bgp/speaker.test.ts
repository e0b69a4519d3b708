// The speaker without a daemon: what it asks the daemon to announce as the held set moves,
// syncs coalesced while one runs, a refused configuration kept as the last error and tried
// again, a daemon that ended started again after its backoff on the fake clock, and the
// counters of what was advertised and withdrawn.
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { defaultConfig, parseBgpPeer } from '../config/index.js';
import { silentLogger } from '../log/index.js';
import { FakeClock } from '../sched/testing.js';
import { registerBgpMetrics } from './metrics.js';
import { BgpSpeaker, type SpeakerDaemon } from './speaker.js';

/** A daemon that records what it was given; configure waits while `hold` is set. */
class FakeDaemon implements SpeakerDaemon {
  pid: number | undefined;
  confPath = '/run/x/bird.conf';
  ctlPath = '/run/x/bird.ctl';
  history: string[] = [];
  fail: Error | undefined;
  hold: Promise<void> | undefined;
  constructor(readonly onExit: (why: string) => void) {}
  start(conf: string): Promise<void> {
    this.history.push(`start ${routes(conf)}`);
    this.pid = 42;
    return Promise.resolve();
  }
  async configure(conf: string): Promise<void> {
    this.history.push(`configure ${routes(conf)}`);
    await this.hold;
    if (this.fail) throw this.fail;
  }
  protocols(): ReturnType<SpeakerDaemon['protocols']> {
    return Promise.resolve([]);
  }
  stop(): Promise<void> {
    this.pid = undefined;
    return Promise.resolve();
  }
  die(): void {
    this.pid = undefined;
    this.onExit('bird exited (SIGSEGV)');
  }
}

const routes = (conf: string): string =>
  [...conf.matchAll(/route (\S+) blackhole/g)].map((m) => m[1]).join(',') || '-';

function setup() {
  const cfg = defaultConfig();
  cfg.bgp.asn = 65001;
  const clock = new FakeClock();
  const registry = new Registry();
  const metrics = registerBgpMetrics(registry, async () => []);
  let held: string[] = [];
  let daemon: FakeDaemon | undefined;
  const s = new BgpSpeaker({
    config: cfg.bgp,
    peers: [parseBgpPeer('10.0.0.1 as 65000')],
    held: () => held,
    clock,
    log: silentLogger(),
    metrics,
    daemon: (onExit) => (daemon = new FakeDaemon(onExit)),
  });
  const metric = async (name: string, labels: Record<string, string> = {}) =>
    (await registry.getSingleMetric(name)!.get()).values.find((v) =>
      Object.entries(labels).every(([k, x]) => v.labels[k] === x),
    )?.value;
  return { s, clock, d: () => daemon!, set: (ips: string[]) => (held = ips), metric };
}

describe('BgpSpeaker', () => {
  it('starts with the held set and configures each change, counting what moved', async () => {
    const { s, d, set, metric } = setup();
    set(['192.0.2.1']);
    await s.start();
    set(['192.0.2.1', '2001:db8::1']);
    await s.sync();
    await s.sync(); // nothing changed: no configure
    set(['2001:db8::1']);
    await s.sync();
    expect(d().history).toEqual([
      'start 192.0.2.1/32',
      'configure 192.0.2.1/32,2001:db8::1/128',
      'configure 2001:db8::1/128',
    ]);
    const st = await s.status();
    expect(st).toMatchObject({ announced: ['2001:db8::1'], advertisedTotal: 2, withdrawnTotal: 1 });
    expect(await metric('fibkeeper_bgp_withdrawn_total', { family: 'ipv4' })).toBe(1);
    expect(await metric('fibkeeper_bgp_announced', { family: 'ipv6' })).toBe(1);
    expect(await metric('fibkeeper_bgp_announced', { family: 'ipv4' })).toBe(0);
  });

  it('coalesces syncs asked for while one runs into one more, with the set as it is then', async () => {
    const { s, d, set } = setup();
    await s.start();
    let release!: () => void;
    d().hold = new Promise((r) => (release = r));
    set(['192.0.2.1']);
    const first = s.sync();
    set(['192.0.2.1', '192.0.2.2']);
    void s.sync();
    set(['192.0.2.1', '192.0.2.2', '192.0.2.3']);
    const last = s.sync();
    release();
    await Promise.all([first, last]);
    expect(d().history).toEqual([
      'start -',
      'configure 192.0.2.1/32',
      'configure 192.0.2.1/32,192.0.2.2/32,192.0.2.3/32',
    ]);
  });

  it('keeps a refused configuration as the last error, and tries again at the next sync', async () => {
    const { s, d, set, metric } = setup();
    await s.start();
    d().fail = new Error('8002 bird.conf:3:1 syntax error');
    set(['192.0.2.1']);
    await s.sync();
    expect((await s.status()).lastError).toContain('syntax error');
    expect((await s.status()).announced).toEqual([]);
    expect(await metric('fibkeeper_bgp_configure_errors_total')).toBe(1);
    d().fail = undefined;
    await s.sync();
    expect((await s.status()).announced).toEqual(['192.0.2.1']);
    expect(d().history.filter((h) => h.startsWith('configure'))).toHaveLength(2);
  });

  it('starts a daemon that ended again after its backoff, with the set held then', async () => {
    const { s, d, set, clock, metric } = setup();
    await s.start();
    set(['192.0.2.9']);
    d().die();
    expect((await s.status()).lastError).toBe('bird exited (SIGSEGV)');
    clock.advance(499);
    expect(d().history).toEqual(['start -']);
    clock.advance(1);
    await Promise.resolve();
    expect(d().history).toEqual(['start -', 'start 192.0.2.9/32']);
    expect(await metric('fibkeeper_bgp_daemon_restarts_total')).toBe(1);
    await s.stop();
    d().die(); // after stop: no restart
    clock.advance(60_000);
    expect(d().history).toHaveLength(2);
  });
});
