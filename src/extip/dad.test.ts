import { describe, expect, it } from 'vitest';
import { parseIp, type ParsedIp } from '../ipaddr/index.js';
import { DadProber, DuplicateAddressError } from './dad.js';
import { FakeClock, turns } from '../sched/testing.js';
import { recordingMetrics } from './testing.js';

function setup(o: { probes?: number; intervalMs?: number; waitMs?: number } = {}) {
  const clock = new FakeClock();
  const { metrics, counts } = recordingMetrics();
  const sent: { ip: string; at: number; nonce: Buffer }[] = [];
  const listening = new Map<string, number>();
  let failing: Error | undefined;
  const prober = new DadProber({
    probes: o.probes ?? 3,
    intervalMs: o.intervalMs ?? 250,
    waitMs: o.waitMs ?? 1000,
    clock,
    metrics,
    sink: {
      sendProbe: (ip: ParsedIp, nonce: Buffer) => {
        if (failing) throw failing;
        sent.push({ ip: ip.address, at: clock.now(), nonce });
      },
      listen: (ip: ParsedIp, on: boolean) =>
        void listening.set(ip.address, (listening.get(ip.address) ?? 0) + (on ? 1 : -1)),
    },
  });
  const fail = (err: Error | undefined) => void (failing = err);
  return { clock, prober, sent, listening, counts, fail };
}

/** Settles `p` into a value to look at: 'unique', or the error. */
const outcome = (p: Promise<void>) => {
  const box: { v?: unknown } = {};
  p.then(
    () => (box.v = 'unique'),
    (err: unknown) => (box.v = err),
  );
  return box;
};

describe('DadProber', () => {
  it('sends the probes apart, listens after the last, then calls the address unique', async () => {
    const { clock, prober, sent, listening, counts } = setup();
    const t0 = clock.now();
    const r = outcome(prober.probe(parseIp('2001:db8::5')));
    expect(sent.map((s) => s.at - t0)).toEqual([0]); // the first at once
    expect(listening.get('2001:db8::5')).toBe(1);
    clock.advance(500);
    expect(sent.map((s) => s.at - t0)).toEqual([0, 250, 500]);
    expect(new Set(sent.map((s) => s.nonce.toString('hex'))).size).toBe(1); // one nonce a run
    clock.advance(999);
    await turns(1);
    expect(r.v).toBeUndefined();
    expect(prober.probing('2001:db8::5')).toBe(true);
    clock.advance(1);
    await turns(1);
    expect(r.v).toBe('unique');
    expect(prober.probing('2001:db8::5')).toBe(false);
    expect(listening.get('2001:db8::5')).toBe(0);
    expect(counts.get('dad ipv6 unique')).toBe(1);
    expect(prober.durationMs).toBe(1500);
  });

  it('a claim during the probes or the wait makes the address a duplicate, at once', async () => {
    const { clock, prober, sent, counts } = setup();
    const a = outcome(prober.probe(parseIp('192.0.2.5')));
    const b = outcome(prober.probe(parseIp('192.0.2.6')));
    clock.advance(250);
    expect(prober.claim('192.0.2.5', '02:00:00:00:00:99', 'ARP reply')).toBe(true);
    clock.advance(600); // into b's wait
    expect(prober.claim('192.0.2.6', '02:00:00:00:00:98', 'ARP probe')).toBe(true);
    await turns(1);
    expect(a.v).toBeInstanceOf(DuplicateAddressError);
    expect(a.v).toMatchObject({
      code: 'FIBKEEPER_ERR_CONFLICT',
      ip: '192.0.2.5',
      mac: '02:00:00:00:00:99',
      what: 'ARP reply',
    });
    expect((a.v as Error).message).toMatch(/^192\.0\.2\.5: duplicate address.*02:00:00:00:00:99/);
    expect(b.v).toMatchObject({ mac: '02:00:00:00:00:98', what: 'ARP probe' });
    clock.advance(5000);
    expect(sent.filter((s) => s.ip === '192.0.2.5')).toHaveLength(2); // no probe after
    expect(counts.get('dad ipv4 duplicate')).toBe(2);
    // once over, a claim is nobody's business here
    expect(prober.claim('192.0.2.5', '02:00:00:00:00:99', 'ARP reply')).toBe(false);
  });

  it('our own solicitation looped back (same nonce) is not a claim; another nonce is', async () => {
    const { clock, prober, sent } = setup();
    const r = outcome(prober.probe(parseIp('2001:db8::7')));
    const nonce = sent[0]!.nonce;
    expect(prober.claim('2001:db8::7', '02:00:00:00:00:01', 'NS', nonce)).toBe(true);
    await turns(1);
    expect(r.v).toBeUndefined();
    prober.claim('2001:db8::7', '02:00:00:00:00:01', 'NS', Buffer.from('ffffffffffff', 'hex'));
    await turns(1);
    expect(r.v).toBeInstanceOf(DuplicateAddressError);
    clock.advance(2000);
  });

  it('a probe that cannot be sent fails the detection with the reason; a second call shares a run', async () => {
    const { clock, prober, fail, counts, listening } = setup();
    const p = prober.probe(parseIp('192.0.2.7'));
    expect(prober.probe(parseIp('192.0.2.7'))).toBe(p);
    const r = outcome(p);
    fail(new Error('send: ENETDOWN'));
    clock.advance(250);
    await turns(1);
    expect((r.v as Error).message).toBe(
      '192.0.2.7: duplicate address detection could not probe: send: ENETDOWN',
    );
    expect(counts.get('dad ipv4 error')).toBe(1);
    expect(counts.get('error dad')).toBe(1);
    expect(listening.get('192.0.2.7')).toBe(0);
  });

  it('abortAll() and stop() end what runs; stop() refuses new runs', async () => {
    const { prober } = setup();
    const a = outcome(prober.probe(parseIp('192.0.2.8')));
    prober.abortAll(new Error('external interface ext0 went down'));
    await turns(1);
    expect((a.v as Error).message).toMatch(/could not probe: external interface ext0 went down/);
    const b = outcome(prober.probe(parseIp('192.0.2.9')));
    prober.stop(new Error('stopped'));
    await turns(1);
    expect((b.v as Error).message).toMatch(/stopped/);
    await expect(prober.probe(parseIp('192.0.2.9'))).rejects.toThrow(/stopped/);
  });
});
