// A next hop that does not answer: its entry goes FAILED. fibkeeper keeps trying (legacy:
// it writes the entry again with backoff until it resolves; managed: the kernel re-probes by
// itself), so when the gateway answers again the entry resolves without anyone's help.
import { describe, expect, it } from 'vitest';
import { ip, privileged, sysctl, waitFor } from '../helpers/netns.js';
import { buildLab, entry, hasMarks, startAgent, waitEntry, type Lab } from './lab.js';

const { skip } = privileged();

/** Resolution attempts on ra0 give up after 2 broadcasts 250 ms apart. */
function quickGiveUp(lab: Lab): void {
  sysctl(lab.r, 'net.ipv4.neigh.ra0.retrans_time_ms', 250);
  sysctl(lab.r, 'net.ipv4.neigh.ra0.mcast_solicit', 2);
}

describe.skipIf(skip)('neighbor: a gateway that is down, then back', () => {
  for (const mode of ['legacy', 'managed'] as const) {
    it(`${mode}: the FAILED entry is retried with backoff until the gateway answers again`, async () => {
      const lab = buildLab(`nb-fl-${mode.slice(0, 3)}`);
      quickGiveUp(lab);
      ip(lab.a, 'addr', 'del', '10.1.0.2/24', 'dev', 'pa0'); // the gateway is down
      const n = await startAgent(lab.r, {
        config: { refresh: mode, retryMin: 100, retryMax: 1000, unusableAfter: 2000 },
      });
      expect(n.mode).toBe(mode);
      n.upsert('test', ['10.9.0.5']); // via 10.1.0.2
      await n.waitReady();
      await waitEntry(lab.r, '10.1.0.2', 'ra0', (e) => e.state.includes('FAILED'));
      // Down for longer than neighbor.unusableAfter: the agent calls it unusable; legacy has
      // written it again at least 3 times by then (each attempt FAILED again), managed left
      // the re-probing to the kernel.
      await waitFor(
        () =>
          n.health().level === 'degraded' &&
          (mode === 'managed' || n.status().counters.reinserts.failed >= 3),
        {
          timeoutMs: 10_000,
          what: () => `degraded, reinserts ${n.status().counters.reinserts.failed}`,
        },
      );
      // Between attempts FAILED, during one INCOMPLETE: never resolved.
      expect(['FAILED', 'INCOMPLETE']).toContain(entry(lab.r, '10.1.0.2', 'ra0')?.state[0]);
      // Unresolved for longer than neighbor.unusableAfter: the agent is degraded and names
      // the next hop, its device and the forwardable IP behind it; the gauge counts it.
      const h = n.health();
      expect(h.level).toBe('degraded');
      expect(h.unusableCount).toBe(1);
      expect(h.unusable[0]).toMatchObject({
        nexthop: '10.1.0.2',
        device: 'ra0',
        forwardable: ['10.9.0.5'],
      });
      expect(h.unusable[0]!.forSeconds).toBeGreaterThanOrEqual(2);
      expect(['failed', 'incomplete']).toContain(h.unusable[0]!.state);
      expect(n.status().unusable.map((u) => u.nexthop)).toEqual(['10.1.0.2']);
      expect(await n.metrics.registry.metrics()).toMatch(
        /^fibkeeper_neighbor_unusable_entries\{device="ra0"\} 1$/m,
      );
      const whileDown = n.status().counters.reinserts.failed;
      if (mode === 'legacy') {
        // Retried, with backoff: an attempt takes 0.5 s, then waits 0.1, 0.2, 0.4, 0.8, 1 s...
        expect(whileDown).toBeGreaterThanOrEqual(3);
        expect(whileDown).toBeLessThanOrEqual(8);
      } else {
        expect(whileDown).toBe(0); // the kernel re-probes managed entries itself
      }
      ip(lab.a, 'addr', 'add', '10.1.0.2/24', 'dev', 'pa0'); // back
      const back = await waitEntry(
        lab.r,
        '10.1.0.2',
        'ra0',
        (e) => e.state.includes('REACHABLE'),
        8000,
      );
      expect(hasMarks(back, mode === 'managed')).toBe(true);
      // Resolved: the backoff starts over, nothing more is written.
      await waitFor(() => n.status({ ip: '10.9.0.5' }).desired[0]?.losses === 0, {
        what: 'losses reset',
      });
      // The agent reads the event that `ip` already shows: healthy again once it has.
      await waitFor(() => n.health().level === 'ok', { what: 'healthy again' });
      expect(n.health()).toMatchObject({ unusableCount: 0, unusable: [] });
      expect(await n.metrics.registry.metrics()).toMatch(
        /^fibkeeper_neighbor_unusable_entries\{device="ra0"\} 0$/m,
      );
      // Nothing left to write: no retry scheduled and nothing backing off (the reconciler
      // dropped the next hop's backoff when it read the REACHABLE entry), so the count stays.
      const after = n.status().counters.reinserts.failed;
      await waitFor(
        () => {
          const s = n.status().summary;
          return s.scheduledRetries === 0 && s.backingOff === 0;
        },
        { what: () => `no retry left: ${JSON.stringify(n.status().summary)}` },
      );
      expect(n.status().counters.reinserts.failed).toBe(after);
    });
  }
});
