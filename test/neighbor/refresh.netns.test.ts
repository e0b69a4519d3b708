// Keeping entries fresh: on the legacy path (kernels without managed neighbors, forced here
// with refresh: legacy) fibkeeper makes the kernel re-resolve entries that went STALE; with
// managed entries the kernel does it and fibkeeper refreshes nothing.
import { describe, expect, it, onTestFinished } from 'vitest';
import { NetlinkHandle, nudStateNames } from '../../src/netlink/index.js';
import { privileged, sysctl, waitFor } from '../helpers/netns.js';
import { buildLab, entry, hasMarks, startAgent, waitEntry, type Lab } from './lab.js';

const { skip } = privileged();

/**
 * Entries on ra0 age quickly: REACHABLE for 0.25-0.75 s, then STALE (unless used in that
 * instant); a used STALE entry is probed at once (no DELAY wait).
 */
function fastAging(lab: Lab): void {
  sysctl(lab.r, 'net.ipv4.neigh.ra0.base_reachable_time_ms', 500);
  sysctl(lab.r, 'net.ipv4.neigh.ra0.delay_first_probe_time', 0);
}

/** The NUD states 10.1.0.20 on ra0 goes through, from neighbor events. */
function watchStates(ns: string, dst: string): string[] {
  const h = NetlinkHandle.open({ netns: ns });
  const states: string[] = [];
  const sub = h.subscribe(['neigh'], {
    onEvent: (ev) => {
      if (ev.kind === 'overflow') states.push('OVERFLOW');
      else if (ev.object === 'neigh' && ev.msg.dst === dst) {
        states.push(ev.kind === 'del' ? 'DELETED' : (nudStateNames(ev.msg.state)[0] ?? '?'));
      }
    },
  });
  onTestFinished(() => {
    sub.close();
    h.close();
  });
  return states;
}

describe.skipIf(skip)('neighbor refresh', () => {
  it('legacy: refreshes entries that go STALE, so they resolve again', async () => {
    const lab = buildLab('nb-leg');
    fastAging(lab);
    const n = await startAgent(lab.r, { config: { refresh: 'legacy' } });
    expect(n.mode).toBe('legacy');
    n.upsert('test', ['10.1.0.20', '10.1.0.3']);
    await n.waitReady();
    const first = await waitEntry(lab.r, '10.1.0.20', 'ra0', (e) => e.state.includes('REACHABLE'));
    expect(hasMarks(first, false)).toBe(true); // extern_learn and proto 241, no managed flag
    // Watch the entry: it goes STALE, fibkeeper refreshes it, it is REACHABLE again.
    const seen: string[] = [];
    await waitFor(
      () => {
        const s = entry(lab.r, '10.1.0.20', 'ra0')?.state[0] ?? 'ABSENT';
        if (seen[seen.length - 1] !== s) seen.push(s);
        const stale = seen.indexOf('STALE');
        return stale >= 0 && seen.slice(stale + 1).includes('REACHABLE');
      },
      {
        timeoutMs: 15_000,
        intervalMs: 10,
        what: `STALE then REACHABLE again, saw ${seen.join(' ')}`,
      },
    );
    await waitFor(() => n.status().counters.refreshes >= 2, {
      timeoutMs: 10_000,
      what: 'refreshes counted',
    });
    for (const ip of ['10.1.0.20', '10.1.0.3']) {
      expect(hasMarks(entry(lab.r, ip, 'ra0'), false), ip).toBe(true);
    }
    expect(n.status().counters.reinserts.failed).toBe(0);
  });

  it('legacy on old kernels: entries created in two steps carry the marks', async () => {
    const lab = buildLab('nb-leg2');
    const n = await startAgent(lab.r, {
      config: { refresh: 'legacy' },
      tuning: { legacyTwoStep: true },
    });
    n.upsert('test', ['10.1.0.20', '10.9.0.1']);
    await n.waitReady();
    for (const ip of ['10.1.0.20', '10.1.0.2']) {
      const e = await waitEntry(lab.r, ip, 'ra0', (x) => x.state.includes('REACHABLE'));
      expect(hasMarks(e, false), ip).toBe(true);
    }
  });

  it('managed: the kernel keeps entries fresh and fibkeeper refreshes nothing', async () => {
    const lab = buildLab('nb-mgd');
    fastAging(lab);
    const n = await startAgent(lab.r, { config: { refresh: 'auto' } });
    expect(n.mode).toBe('managed');
    n.upsert('test', ['10.1.0.20', '10.1.0.3']);
    await n.waitReady();
    await waitEntry(lab.r, '10.1.0.20', 'ra0', (e) => e.state.includes('REACHABLE'));
    const seen = watchStates(lab.r, '10.1.0.20');
    // The kernel's own round: the entry goes STALE and the kernel re-probes it (managed) back
    // to REACHABLE; the agent read those events and wrote nothing.
    await waitFor(
      () => seen.includes('STALE') && seen.slice(seen.indexOf('STALE')).includes('REACHABLE'),
      {
        timeoutMs: 15_000,
        what: () => `STALE then REACHABLE, saw ${seen.join(' ')}`,
      },
    );
    expect(hasMarks(entry(lab.r, '10.1.0.20', 'ra0'))).toBe(true);
    const c = n.status().counters;
    expect(c.refreshes).toBe(0);
    expect(c.reinserts).toEqual({ deleted: 0, failed: 0 });
  });
});
