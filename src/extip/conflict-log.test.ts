import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../log/index.js';
import { ConflictLog } from './conflict-log.js';
import { FakeClock } from '../sched/testing.js';

function setup(intervalMs = 10_000) {
  const lines: Record<string, unknown>[] = [];
  const dest = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split('\n')) if (l.trim()) lines.push(JSON.parse(l));
      done();
    },
  });
  const clock = new FakeClock();
  const log = new ConflictLog({ log: createLogger('info', dest), clock, intervalMs });
  return { lines, clock, log };
}

const claim = (ip: string, mac: string) => ({ ip, family: 4, mac, what: 'ARP reply' }) as const;

describe('ConflictLog', () => {
  it('logs the first claim at once, then one summary per interval while claims go on', () => {
    const { lines, clock, log } = setup();
    log.record(claim('192.0.2.1', '02:00:00:00:00:01'), true);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      msg: 'extip: another host claims an external IP',
      ip: '192.0.2.1',
      mac: '02:00:00:00:00:01',
      defended: true,
    });
    // a storm: 10,000 claims over 25 s, from 40 MACs, for 3 IPs
    for (let i = 0; i < 10_000; i++) {
      const ip = `192.0.2.${1 + (i % 3)}`;
      log.record(claim(ip, `02:00:00:00:01:${(i % 40).toString(16).padStart(2, '0')}`), false);
      if (i % 400 === 399) clock.advance(1000);
    }
    clock.advance(10_000);
    expect(lines.length).toBe(1 + 3); // one per interval: at 10 s, 20 s, and what was left at 30 s
    const summaries = lines.slice(1);
    expect(summaries.reduce((n, l) => n + (l.claims as number), 0)).toBe(10_000);
    expect(summaries[0]).toMatchObject({
      claims: 4000,
      defended: 0,
      ipCount: 3,
      macCount: 40,
      intervalMs: 10_000,
      level: 40,
    });
    expect(summaries[0]!.macs).toHaveLength(8);
    expect(summaries[0]!.ips).toEqual(['192.0.2.1×1334', '192.0.2.2×1333', '192.0.2.3×1333']);
    expect(String(summaries[0]!.msg)).toMatch(/4000 more claims .* in the last 10s/);
    // quiet for an interval: the next claim is logged at once again
    clock.advance(20_000);
    expect(lines).toHaveLength(4);
    log.record(claim('192.0.2.9', '02:00:00:00:00:09'), false);
    expect(lines).toHaveLength(5);
    expect(lines[4]).toMatchObject({ ip: '192.0.2.9', defended: false });
  });

  it('stop() logs what is pending', () => {
    const { lines, log } = setup();
    log.record(claim('192.0.2.1', '02:00:00:00:00:01'), true);
    log.record(claim('192.0.2.1', '02:00:00:00:00:01'), true);
    log.stop();
    expect(lines.map((l) => l.claims)).toEqual([undefined, 1]);
    log.stop();
    expect(lines).toHaveLength(2);
  });
});
