// ARP on the wire in the steady state stays within a bound set by neighbor.rateLimit, not by
// the size of the table. With managed entries the kernel re-probes every entry once per
// reachable time, in bursts as large as the table; so `neighbor.refresh: auto` runs the
// legacy path (fibkeeper refreshes STALE entries, rate-limited) once it wants more than
// rateLimit entries, and managed entries again at half of that.
import { describe, expect, it } from 'vitest';
import { formatStatus } from '../../src/cli/status-format.js';
import { ipJson, ip, makeNetns, privileged, sysctl, vethPair, waitFor } from '../helpers/netns.js';
import { PROTO, startAgent, type IpNeigh } from './lab.js';

const { skip } = privileged();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const v4 = (i: number): string => `10.100.${(i >>> 8) & 255}.${i & 255}`;

/**
 * Router R (rc0, 10.100.0.1/16) towards a peer that answers ARP for the whole /16 (proxy ARP
 * without delay). Entries on rc0 age fast: REACHABLE for 0.5-1.5 s, then STALE; a refreshed
 * STALE entry is probed at once. (With a first-probe delay longer than the reachable time the
 * kernel would take the entry it has just confirmed for one in use, and probe every entry
 * every cycle by itself, fibkeeper or not.)
 */
function lab(): { r: string; c: string } {
  const r = makeNetns('nb-bd-r');
  const c = makeNetns('nb-bd-c');
  vethPair(r, 'rc0', c, 'pc0');
  ip(c, 'link', 'add', 'pq0', 'type', 'veth', 'peer', 'name', 'pq1');
  for (const d of ['pq0', 'pq1']) ip(c, 'link', 'set', d, 'up');
  ip(r, 'addr', 'add', '10.100.0.1/16', 'dev', 'rc0');
  sysctl(r, 'net.ipv4.neigh.rc0.base_reachable_time_ms', 1000);
  sysctl(r, 'net.ipv4.neigh.rc0.delay_first_probe_time', 0);
  for (const kv of [
    'net.ipv4.ip_forward=1', // proxy ARP answers only on a forwarding device
    'net.ipv4.conf.all.rp_filter=0',
    'net.ipv4.conf.pc0.rp_filter=0',
    'net.ipv4.conf.pc0.proxy_arp=1',
    'net.ipv4.neigh.pc0.proxy_delay=0',
  ]) {
    const [k, v] = kv.split('=') as [string, string];
    sysctl(c, k, v);
  }
  ip(c, 'route', 'add', '10.100.0.0/16', 'dev', 'pq0');
  ip(c, 'route', 'add', '10.100.0.1/32', 'dev', 'pc0');
  return { r, c };
}

/** ARP requests that reached the peer so far. */
function requestsSeen(c: string): number {
  const l = ipJson<{ stats64: { rx: { packets: number } } }[]>(c, '-s', 'link', 'show', 'pc0');
  return l[0]!.stats64.rx.packets;
}

function marked(r: string): IpNeigh[] {
  return ipJson<IpNeigh[]>(r, 'neigh', 'show', 'dev', 'rc0', 'nud', 'all').filter(
    (x) => x.protocol === PROTO,
  );
}

const usable = (x: IpNeigh) =>
  x.lladdr !== undefined && ['REACHABLE', 'STALE', 'DELAY', 'PROBE'].includes(x.state[0]!);

describe.skipIf(skip)('neighbor: ARP bounded by rateLimit, not by the table', () => {
  it('auto: 2,000 next hops with rateLimit 50 stay usable at most ~3 x 50 requests a second', async () => {
    const { r, c } = lab();
    const rateLimit = 50;
    const n = await startAgent(r, { config: { devices: ['rc0'], refresh: 'auto', rateLimit } });
    const ips = Array.from({ length: 2000 }, (_, i) => v4(i + 2));
    n.upsert('bulk', ips);
    await n.waitReady();
    await waitFor(() => marked(r).filter(usable).length === 2000, {
      timeoutMs: 20_000,
      what: '2,000 usable entries',
    });
    expect(n.mode).toBe('legacy'); // more than rateLimit entries
    await sleep(3000); // every entry has gone STALE at least once: the steady state
    const before = requestsSeen(c);
    const t0 = performance.now();
    let worst = 2000;
    for (let k = 0; k < 10; k++) {
      await sleep(1000);
      worst = Math.min(worst, marked(r).filter(usable).length);
    }
    const seconds = (performance.now() - t0) / 1000;
    const perSecond = (requestsSeen(c) - before) / seconds;
    // The documented bound: at most 3 probes per refresh, at most rateLimit refreshes a
    // second (plus the limiter's burst of a tenth of a second). Managed entries cost ~400/s.
    expect(perSecond).toBeLessThanOrEqual(3 * rateLimit * 1.1);
    expect(perSecond).toBeGreaterThan(0); // refreshes do run
    expect(worst).toBe(2000); // STALE entries keep their address: all stay usable
    expect(n.status().counters.refreshes).toBeGreaterThan(0);
  });

  it('auto: switches to legacy above rateLimit entries and back to managed at half of it', async () => {
    const { r } = lab();
    const n = await startAgent(r, { config: { devices: ['rc0'], refresh: 'auto', rateLimit: 20 } });
    const flagged = (managed: boolean) => () => {
      const m = marked(r);
      return (
        m.length > 0 && m.every((x) => x.extern_learn === null && (x.managed === null) === managed)
      );
    };
    n.upsert(
      'a',
      Array.from({ length: 10 }, (_, i) => v4(i + 2)),
    );
    await n.waitReady();
    expect(n.mode).toBe('managed');
    await waitFor(flagged(true), { what: '10 managed entries' });
    n.upsert(
      'b',
      Array.from({ length: 30 }, (_, i) => v4(i + 100)),
    );
    await waitFor(() => marked(r).length === 40 && flagged(false)(), {
      timeoutMs: 10_000,
      what: '40 legacy entries (the 10 managed ones written again)',
    });
    expect(n.mode).toBe('legacy');
    n.delete(
      'b',
      Array.from({ length: 30 }, (_, i) => v4(i + 100)),
    );
    await waitFor(() => marked(r).length === 10 && flagged(true)(), {
      timeoutMs: 10_000,
      what: '10 managed entries again',
    });
    expect(n.mode).toBe('managed');
    expect(n.status().counters.modeSwitches).toEqual({ legacy: 1, managed: 1 });
    const text = await n.metrics.registry.metrics();
    expect(text).toContain('fibkeeper_neighbor_refresh_mode{mode="managed"} 1');
  });

  it('managed (forced): keeps its path above rateLimit entries, and warns until they are down to half', async () => {
    const { r } = lab();
    const n = await startAgent(r, {
      config: { devices: ['rc0'], refresh: 'managed', rateLimit: 20 },
    });
    const managedFlags = () => {
      const m = marked(r);
      return m.length > 0 && m.every((x) => x.extern_learn === null && x.managed === null);
    };
    const gauge = async () =>
      /^fibkeeper_neighbor_managed_over_limit (\d+)$/m.exec(
        await n.metrics.registry.metrics(),
      )?.[1];
    n.upsert(
      'a',
      Array.from({ length: 10 }, (_, i) => v4(i + 2)),
    );
    await n.waitReady();
    await waitFor(managedFlags, { what: '10 managed entries' });
    expect(n.status().warnings).toEqual([]);
    expect(await gauge()).toBe('0');
    n.upsert(
      'b',
      Array.from({ length: 30 }, (_, i) => v4(i + 100)),
    );
    await waitFor(() => marked(r).length === 40 && managedFlags(), {
      timeoutMs: 10_000,
      what: '40 entries, all managed (the path is forced)',
    });
    expect(n.mode).toBe('managed');
    const [w] = n.status().warnings;
    expect(w).toContain('neighbor.refresh is managed with 40 desired entries');
    expect(w).toContain('neighbor.rateLimit (20)');
    expect(w).toContain('set neighbor.refresh: auto');
    expect(formatStatus({ neighbor: n.status() })).toContain(`  warning: ${w}`);
    expect(await gauge()).toBe('1');
    // Down to 15 (over half of 20): still warned; down to 10: cleared.
    n.delete(
      'b',
      Array.from({ length: 25 }, (_, i) => v4(i + 100)),
    );
    await waitFor(() => marked(r).length === 15, { timeoutMs: 10_000, what: '15 entries' });
    expect(n.status().warnings).toHaveLength(1);
    n.delete(
      'b',
      Array.from({ length: 5 }, (_, i) => v4(i + 125)),
    );
    await waitFor(() => marked(r).length === 10, { timeoutMs: 10_000, what: '10 entries' });
    await waitFor(() => n.status().warnings.length === 0, { what: 'the warning cleared' });
    expect(await gauge()).toBe('0');
    expect(n.status().counters.modeSwitches).toEqual({ legacy: 0, managed: 0 });
  });
});
