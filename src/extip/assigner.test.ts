import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseIp, type ParsedIp } from '../ipaddr/index.js';
import { silentLogger } from '../log/index.js';
import { IFA_F_DADFAILED, IFA_F_TENTATIVE } from '../netlink/index.js';
import { Assigner } from './assigner.js';
import { DuplicateAddressError } from './dad.js';
import { FakeClock, turns } from '../sched/testing.js';
import { FakeHolder, RecordingSink, recordingMetrics } from './testing.js';
import type { ObservedAddress } from './types.js';

function setup(opts: { holder?: FakeHolder; dad?: (ip: ParsedIp) => Promise<void> } = {}) {
  const clock = new FakeClock();
  const holder = opts.holder ?? new FakeHolder();
  const sink = new RecordingSink(clock);
  const { metrics, counts } = recordingMetrics();
  const announced = new Set<string>();
  const a = new Assigner({
    ops: holder,
    announcer: {
      add: (ip) => {
        announced.add(ip.address);
        try {
          sink.announce(ip);
          return undefined;
        } catch (err) {
          return err as Error;
        }
      },
      remove: (ip) => void announced.delete(ip),
      announcedAt: (ip) => (announced.has(ip) ? sink.times(ip).at(-1) : undefined),
    },
    clock,
    log: silentLogger(),
    metrics,
    ...(opts.dad ? { dad: opts.dad } : {}),
  });
  holder.listener = (kind, addr) => a.onAddress(kind, addr);
  return { clock, holder, sink, counts, a, announced };
}

const ips = (...t: string[]) => t.map((x) => parseIp(x));
const onHolder = (h: FakeHolder) => [...h.addrs.keys()].sort();
const obs = (t: string, flags = 0): ObservedAddress => {
  const ip = parseIp(t);
  return { ip, prefixlen: ip.family === 4 ? 32 : 128, flags };
};

describe('Assigner', () => {
  it('assigns, announces once on the way, and lists the state', async () => {
    const { a, holder, sink, counts } = setup();
    await a.request(ips('192.0.2.1', '2001:db8::1'), true);
    expect(onHolder(holder)).toEqual(['192.0.2.1', '2001:db8::1']);
    expect(sink.sent.map((s) => s.ip).sort()).toEqual(['192.0.2.1', '2001:db8::1']);
    expect(a.list().map((s) => [s.ip, s.state, s.lastError])).toEqual([
      ['192.0.2.1', 'assigned', undefined],
      ['2001:db8::1', 'assigned', undefined],
    ]);
    expect(counts.get('assigned ipv4')).toBe(1);
    expect(counts.get('assigned ipv6')).toBe(1);
  });

  it('is idempotent: assigning again or an address already there (EEXIST) succeeds', async () => {
    const { a, holder, sink } = setup();
    holder.addrs.set('192.0.2.1', obs('192.0.2.1')); // there already, unknown to the assigner
    await a.request(ips('192.0.2.1'), true);
    await a.request(ips('192.0.2.1'), true);
    expect(holder.history).toEqual(['add 192.0.2.1 exists']);
    expect(sink.sent).toHaveLength(1);
    await a.request(ips('192.0.2.1'), false);
    await a.request(ips('192.0.2.1'), false);
    await a.request(ips('198.51.100.7'), false); // never assigned: success
    expect(holder.history).toEqual(['add 192.0.2.1 exists', 'del 192.0.2.1/32']);
    expect(a.list()).toEqual([]);
  });

  it('reports a kernel error per IP, names it in a batch error, and keeps the others', async () => {
    const { a, holder, counts } = setup();
    holder.faults.set('192.0.2.2', 'EACCES');
    const err = await a.request(ips('192.0.2.1', '192.0.2.2', '192.0.2.3'), true).catch((e) => e);
    expect(err.message).toMatch(/assign: 1 of 3 IPs failed: 192\.0\.2\.2: .*EACCES/);
    expect(err.failures.map((f: { ip: string }) => f.ip)).toEqual(['192.0.2.2']);
    expect(onHolder(holder)).toEqual(['192.0.2.1', '192.0.2.3']);
    const failed = a.list().find((s) => s.ip === '192.0.2.2');
    expect(failed?.state).toBe('failed');
    expect(failed?.lastError).toMatch(/EACCES/);
    expect(counts.get('error assign')).toBe(1);
    expect(counts.get('assigned ipv4')).toBe(2);
    expect(counts.get('failed ipv4')).toBe(1);
    // the periodic check retries it
    a.reconcile(holder.list(), a.epoch());
    await turns(5);
    expect(onHolder(holder)).toEqual(['192.0.2.1', '192.0.2.2', '192.0.2.3']);
    expect(a.list().every((s) => s.state === 'assigned')).toBe(true);
    expect(counts.get('failed ipv4')).toBe(0);
    // failed again, then given up by its requester: no longer counted
    holder.faults.set('192.0.2.9', 'EACCES');
    await a.request(ips('192.0.2.9'), true).catch(() => undefined);
    expect(counts.get('failed ipv4')).toBe(1);
    await a.request(ips('192.0.2.9'), false);
    expect(a.list().map((s) => s.ip)).not.toContain('192.0.2.9');
    expect(counts.get('failed ipv4')).toBe(0);
  });

  it('re-adds an address someone deleted, counts the repair, and announces it again', async () => {
    const { a, holder, sink, counts } = setup();
    await a.request(ips('192.0.2.1'), true);
    holder.externalDel('192.0.2.1');
    await turns(5);
    expect(onHolder(holder)).toEqual(['192.0.2.1']);
    expect(counts.get('repaired address')).toBe(1);
    expect(sink.sent).toHaveLength(2);
  });

  it('refills after the holder was lost, without counting each address', async () => {
    const { a, holder, counts } = setup();
    await a.request(ips('192.0.2.1', '192.0.2.2'), true);
    holder.addrs.clear(); // the device went away with its addresses
    a.holderLost();
    await turns(5);
    expect(onHolder(holder)).toEqual(['192.0.2.1', '192.0.2.2']);
    expect(counts.get('repaired address')).toBeUndefined();
  });

  it('adopts what is on the holder at start-up and removes it only after setDesired', async () => {
    const { a, holder, sink, counts } = setup();
    for (const t of ['192.0.2.1', '192.0.2.2']) holder.addrs.set(t, obs(t));
    a.adopt(holder.list());
    expect(a.list().map((s) => [s.ip, s.state, s.adopted])).toEqual([
      ['192.0.2.1', 'assigned', true],
      ['192.0.2.2', 'assigned', true],
    ]);
    expect(sink.sent).toHaveLength(2); // announced again at start-up
    // an address someone adds before the desired set is loaded is left alone
    holder.externalAdd(obs('192.0.2.9'));
    await turns(3);
    expect(onHolder(holder)).toEqual(['192.0.2.1', '192.0.2.2', '192.0.2.9']);
    await a.setDesired(ips('192.0.2.2', '192.0.2.3'));
    expect(onHolder(holder)).toEqual(['192.0.2.2', '192.0.2.3']);
    expect(holder.history.filter((h) => h.startsWith('del')).sort()).toEqual([
      'del 192.0.2.1/32',
      'del 192.0.2.9/32',
    ]);
    expect(counts.get('repaired foreign')).toBe(1);
    // after loading, a foreign address is removed as soon as it is seen
    holder.externalAdd(obs('192.0.2.50'));
    await turns(5);
    expect(onHolder(holder)).toEqual(['192.0.2.2', '192.0.2.3']);
    expect(counts.get('repaired foreign')).toBe(2);
  });

  it('an address the kernel runs DAD for on the holder: announced only once not tentative', async () => {
    const holder = new FakeHolder({ newFlags: () => IFA_F_TENTATIVE });
    const { a, sink, clock, counts } = setup({ holder });
    const p = a.request(ips('2001:db8::5'), true);
    await turns(3);
    expect(a.list()[0]?.state).toBe('tentative');
    expect(sink.sent).toHaveLength(0);
    clock.advance(1000);
    holder.setFlags('2001:db8::5', 0);
    await p;
    expect(a.list()[0]?.state).toBe('assigned');
    expect(sink.sent).toHaveLength(1);
    expect(counts.get('assigned ipv6')).toBe(1);
  });

  it("the kernel's dadfailed on the holder is reported and not counted as assigned", async () => {
    const holder = new FakeHolder({ newFlags: () => IFA_F_TENTATIVE });
    const { a, sink, counts } = setup({ holder });
    const p = a.request(ips('2001:db8::6'), true).catch((e) => e);
    await turns(3);
    holder.setFlags('2001:db8::6', IFA_F_TENTATIVE | IFA_F_DADFAILED);
    const err = await p;
    expect(err.message).toMatch(/duplicate address detection failed/);
    expect(err.code).toBe('FIBKEEPER_ERR_CONFLICT');
    expect(a.list()[0]).toMatchObject({ state: 'failed', announcedAt: undefined });
    expect(sink.sent).toHaveLength(0);
    expect(counts.get('assigned ipv6') ?? 0).toBe(0);
  });

  it('an address that stays tentative on the holder fails after 5 s', async () => {
    const holder = new FakeHolder({ newFlags: () => IFA_F_TENTATIVE });
    const { a, clock } = setup({ holder });
    const p = a.request(ips('2001:db8::7'), true).catch((e) => e);
    await turns(3);
    clock.advance(5000);
    expect((await p).message).toMatch(/stayed tentative/);
  });

  it('duplicate address detection runs before the add; a duplicate is failed, never added or announced', async () => {
    const probes: { ip: string; settle: (err?: Error) => void }[] = [];
    const dad = (ip: ParsedIp) =>
      new Promise<void>((resolve, reject) => {
        probes.push({ ip: ip.address, settle: (err) => (err ? reject(err) : resolve()) });
      });
    const { a, holder, sink, counts } = setup({ dad });
    const p = a.request(ips('192.0.2.1', '2001:db8::1'), true).catch((e: unknown) => e);
    await turns(3);
    expect(probes.map((x) => x.ip)).toEqual(['192.0.2.1', '2001:db8::1']);
    expect(a.list().map((s) => s.state)).toEqual(['tentative', 'tentative']);
    expect(holder.history).toEqual([]); // nothing added while probing
    probes[0]!.settle();
    probes[1]!.settle(
      new DuplicateAddressError('2001:db8::1', '02:00:00:00:00:99', 'neighbor advertisement'),
    );
    const err = (await p) as Error & { failures: { ip: string; error: Error }[] };
    expect(err.failures.map((f) => f.ip)).toEqual(['2001:db8::1']);
    expect(err.message).toMatch(/2001:db8::1: duplicate address.*02:00:00:00:00:99/);
    expect(holder.history).toEqual(['add 192.0.2.1']);
    expect(sink.sent.map((x) => x.ip)).toEqual(['192.0.2.1']);
    expect(a.list()).toMatchObject([
      { ip: '192.0.2.1', state: 'assigned', conflict: undefined },
      {
        ip: '2001:db8::1',
        state: 'failed',
        conflict: { mac: '02:00:00:00:00:99', what: 'neighbor advertisement' },
      },
    ]);
    expect(counts.get('assigned ipv6') ?? 0).toBe(0);
    expect(counts.get('failed ipv6')).toBe(1);
    expect(counts.get('failed ipv4')).toBe(0);
    // the periodic check probes the failed one again; free now: assigned
    a.reconcile(holder.list(), a.epoch());
    await turns(3);
    expect(probes.map((x) => x.ip)).toEqual(['192.0.2.1', '2001:db8::1', '2001:db8::1']);
    probes[2]!.settle();
    await turns(5);
    expect(a.list()[1]).toMatchObject({
      state: 'assigned',
      conflict: undefined,
      lastError: undefined,
    });
    expect(onHolder(holder)).toEqual(['192.0.2.1', '2001:db8::1']);
    expect(counts.get('failed ipv6')).toBe(0);
  });

  it('no second detection for an address that comes back (repair), nor for one adopted', async () => {
    let probes = 0;
    const dad = async () => void probes++;
    const { a, holder } = setup({ dad });
    a.adopt([obs('192.0.2.7')]);
    await a.request(ips('192.0.2.1'), true);
    expect(probes).toBe(1);
    holder.externalDel('192.0.2.1');
    await turns(5);
    expect(onHolder(holder)).toEqual(['192.0.2.1']);
    expect(probes).toBe(1);
    await a.request(ips('192.0.2.7'), true); // adopted: already ours
    expect(probes).toBe(1);
  });

  it('a lost holder: its addresses come back without a probe, a failed IP only with one', async () => {
    const pending: { ip: string; settle: (err?: Error) => void }[] = [];
    const dad = (ip: ParsedIp) =>
      new Promise<void>((resolve, reject) =>
        pending.push({ ip: ip.address, settle: (e) => (e ? reject(e) : resolve()) }),
      );
    const { a, holder } = setup({ dad });
    const ok = a.request(ips('192.0.2.1'), true);
    const dup = a.request(ips('192.0.2.2'), true).catch(() => undefined);
    await turns(2);
    pending[0]!.settle();
    pending[1]!.settle(new DuplicateAddressError('192.0.2.2', '02:00:00:00:00:99', 'ARP reply'));
    await Promise.all([ok, dup]);
    holder.addrs.clear();
    a.holderLost();
    await turns(5);
    expect(onHolder(holder)).toEqual(['192.0.2.1']); // put back at once
    expect(pending.map((p) => p.ip)).toEqual(['192.0.2.1', '192.0.2.2', '192.0.2.2']);
    expect(a.list()[1]?.state).toBe('tentative'); // the failed one is probed again first
  });

  it('unassigned while probing: never added; retryFailed() probes failed IPs again', async () => {
    const pending: ((err?: Error) => void)[] = [];
    const dad = () =>
      new Promise<void>((resolve, reject) => pending.push((e) => (e ? reject(e) : resolve())));
    const { a, holder } = setup({ dad });
    const p = a.request(ips('192.0.2.1'), true);
    await turns(2);
    const q = a.request(ips('192.0.2.1'), false);
    pending[0]!();
    await Promise.all([p, q]);
    expect(holder.history).toEqual([]);
    const r = a.request(ips('192.0.2.2'), true).catch((e: unknown) => e);
    await turns(2);
    pending[1]!(new Error('external interface ext0 went down'));
    expect(((await r) as Error).message).toMatch(/went down/);
    a.retryFailed();
    await turns(2);
    expect(pending).toHaveLength(3);
    pending[2]!();
    await turns(5);
    expect(onHolder(holder)).toEqual(['192.0.2.2']);
  });

  it('stop() rejects what is pending and refuses new requests', async () => {
    const holder = new FakeHolder({ latency: () => 3 });
    const { a } = setup({ holder });
    const p = a.request(ips('192.0.2.1'), true).catch((e) => e);
    a.stop();
    expect((await p).code).toBe('FIBKEEPER_ERR_CLOSED');
    await expect(a.request(ips('192.0.2.2'), true)).rejects.toThrow(/stopped/);
  });

  it('concurrent requests end in the state of their serial order by call time', async () => {
    const pool = ['192.0.2.1', '192.0.2.2', '2001:db8::1', '2001:db8::2'];
    const call = fc.record({
      want: fc.boolean(),
      ips: fc.subarray(pool, { minLength: 1 }),
      gap: fc.nat(3),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(call, { minLength: 1, maxLength: 12 }),
        fc.array(fc.nat(4), { minLength: 8, maxLength: 8 }),
        fc.array(fc.constantFrom('add', 'del'), { maxLength: 3 }),
        async (calls, delays, external) => {
          let i = 0;
          const next = () => delays[i++ % delays.length]!;
          const holder = new FakeHolder({ latency: next, eventDelay: next });
          const { a } = setup({ holder });
          await a.setDesired([]); // loaded: addresses nobody asked for are removed
          const serial = new Set<string>();
          const pending: Promise<void>[] = [];
          for (const [k, c] of calls.entries()) {
            pending.push(a.request(ips(...c.ips), c.want));
            for (const ip of c.ips) c.want ? serial.add(ip) : serial.delete(ip);
            // someone else meddles with the holder meanwhile
            const ext = external[k];
            if (ext === 'del') holder.externalDel(pool[k % pool.length]!);
            if (ext === 'add') holder.externalAdd(obs(pool[k % pool.length]!));
            await turns(c.gap);
          }
          await Promise.all(pending); // every request succeeds
          a.reconcile(holder.list(), a.epoch()); // the periodic check settles the meddling
          const settled = () =>
            onHolder(holder).join() === [...serial].sort().join() &&
            a.list().every((s) => s.state === 'assigned');
          for (let t = 0; t < 100 && !settled(); t++) await turns(1);
          expect(onHolder(holder)).toEqual([...serial].sort());
          expect(
            a
              .desired()
              .map((ip) => ip.address)
              .sort(),
          ).toEqual([...serial].sort());
          expect(a.list().every((s) => s.state === 'assigned')).toBe(true);
        },
      ),
      { numRuns: 150 },
    );
  });
});
