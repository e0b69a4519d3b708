import { describe, expect, it } from 'vitest';
import { parseIp } from '../ipaddr/index.js';
import { silentLogger } from '../log/index.js';
import { Announcer, type AnnouncerParams } from './announcer.js';
import { FakeClock } from '../sched/testing.js';
import { RecordingSink, recordingMetrics } from './testing.js';

function setup(over: Partial<AnnouncerParams> = {}) {
  const clock = new FakeClock();
  const sink = new RecordingSink(clock);
  const { metrics, counts } = recordingMetrics();
  const results: { ip: string; err: Error | undefined }[] = [];
  const a = new Announcer({
    count: 3,
    intervalMs: 1000,
    refreshIntervalMs: 0,
    defendIntervalMs: 10_000,
    defendRatePerSecond: 20,
    sink,
    clock,
    log: silentLogger(),
    metrics,
    onResult: (ip, _at, err) => results.push({ ip, err }),
    ...over,
  });
  return { clock, sink, counts, a, results, t0: clock.now() };
}

const v4 = parseIp('192.0.2.10');
const v6 = parseIp('2001:db8::10');

describe('Announcer', () => {
  it('sends the first announcement at once and the rest of the burst 1 s apart', () => {
    const { clock, sink, counts, a, t0 } = setup();
    expect(a.add(v4)).toBeUndefined();
    expect(sink.times('192.0.2.10')).toEqual([t0]); // before add() returned
    clock.advance(5000);
    expect(sink.times('192.0.2.10')).toEqual([t0, t0 + 1000, t0 + 2000]);
    expect(counts.get('announced ipv4 assign')).toBe(1);
    expect(counts.get('announced ipv4 burst')).toBe(2);
    expect(a.announcedAt('192.0.2.10')).toBe(t0 + 2000);
    expect(clock.pending).toBe(0); // refresh is off
  });

  it('refreshes periodically when asked, and remove() stops everything for the IP', () => {
    const { clock, sink, counts, a, t0 } = setup({ count: 2, refreshIntervalMs: 60_000 });
    a.add(v6);
    clock.advance(1000 + 60_000 * 2);
    expect(sink.times('2001:db8::10')).toEqual([t0, t0 + 1000, t0 + 61_000, t0 + 121_000]);
    expect(counts.get('announced ipv6 refresh')).toBe(2);
    a.remove('2001:db8::10');
    clock.advance(600_000);
    expect(sink.sent).toHaveLength(4);
    expect(clock.pending).toBe(0);
  });

  it('restarts a burst on burstAll (link up / MAC change) for every IP', () => {
    const { clock, sink, counts, a, t0 } = setup({ count: 2 });
    a.add(v4);
    a.add(v6);
    clock.advance(10_000);
    a.burstAll('link');
    clock.advance(10_000);
    expect(sink.times('192.0.2.10')).toEqual([t0, t0 + 1000, t0 + 10_000, t0 + 11_000]);
    expect(counts.get('announced ipv4 link')).toBe(1);
    expect(counts.get('announced ipv6 link')).toBe(1);
  });

  it('count 0 never announces', () => {
    const { clock, sink, a } = setup({ count: 0 });
    a.add(v4);
    a.burstAll('link');
    clock.advance(10_000);
    expect(sink.sent).toEqual([]);
  });

  it('defends at most once per defendInterval per IP, and within the total rate', () => {
    const { clock, sink, counts, a } = setup({ count: 1, defendRatePerSecond: 2 });
    a.add(v4);
    expect(a.defend('192.0.2.10')).toBe(true);
    expect(a.defend('192.0.2.10')).toBe(false); // same IP within 10 s
    clock.advance(10_000);
    expect(a.defend('192.0.2.10')).toBe(true);
    expect(a.defend('198.51.100.1')).toBe(false); // not ours
    expect(counts.get('announced ipv4 defend')).toBe(2);
    expect(sink.sent).toHaveLength(3);
    // the total rate: 2 per second with a burst of 2
    const ips = ['192.0.2.1', '192.0.2.2', '192.0.2.3'].map((t) => parseIp(t));
    for (const ip of ips) a.add(ip);
    clock.advance(5000);
    expect(ips.map((ip) => a.defend(ip.address))).toEqual([true, true, false]);
  });

  it('a defence does not cut a running burst short', () => {
    const { clock, sink, a, t0 } = setup();
    a.add(v4);
    clock.advance(500);
    a.defend('192.0.2.10');
    clock.advance(5000);
    // t0 (assign), t0+500 (defend), then the burst's two remaining ones, from the defence on
    expect(sink.times('192.0.2.10')).toEqual([t0, t0 + 500, t0 + 1500, t0 + 2500]);
  });

  it('counts and reports failures, and keeps the schedule going', () => {
    const { clock, sink, counts, a, results } = setup();
    sink.failing = Object.assign(new Error('send: ENETDOWN'), { code: 'ENETDOWN' });
    const err = a.add(v4);
    expect(err?.message).toMatch(/ENETDOWN/);
    expect(a.announcedAt('192.0.2.10')).toBeUndefined();
    sink.failing = undefined;
    clock.advance(1000);
    expect(sink.sent).toHaveLength(1);
    expect(counts.get('error announce')).toBe(1);
    expect(results.map((r) => r.err === undefined)).toEqual([false, true]);
  });

  it('asks allowed() right before every frame: a fenced cluster IP is never announced', () => {
    let may = true;
    const { clock, sink, counts, a, t0 } = setup({ allowed: () => may });
    a.add(v4);
    clock.advance(1000);
    may = false; // the lease can no longer be proven valid: the timer fires, nothing goes out
    clock.advance(1000);
    expect(a.defend('192.0.2.10')).toBe(true); // not an error, and nothing sent
    expect(sink.times('192.0.2.10')).toEqual([t0, t0 + 1000]);
    expect(counts.get('announced ipv4 burst')).toBe(1);
    expect(a.announcedAt('192.0.2.10')).toBe(t0 + 1000);
    may = true;
    a.add(v4);
    expect(sink.times('192.0.2.10')).toEqual([t0, t0 + 1000, t0 + 2000]);
  });

  it('stop() cancels all timers and later calls do nothing', () => {
    const { clock, sink, a } = setup({ refreshIntervalMs: 1000 });
    a.add(v4);
    a.stop();
    a.add(v6);
    clock.advance(100_000);
    expect(sink.sent).toHaveLength(1);
    expect(clock.pending).toBe(0);
  });
});
