// The range index of a bulk load (which forwardable IPs a route's prefix covers) is built in
// the background while the load's entries are written, so that the first route change after
// it does not index them all before it can answer (1.5 s after a load of 1,000,000 IPs); a
// delete meanwhile does not build it either.
import { describe, expect, it } from 'vitest';
import { ip, privileged, waitFor } from '../helpers/netns.js';
import { buildLab, startAgent } from './lab.js';

const { skip } = privileged();

describe.skipIf(skip)('neighbor: the range index of a bulk load', () => {
  it('is built in slices after the load, and answers a route change over the load', async () => {
    const lab = buildLab('nb-ix');
    ip(lab.r, 'route', 'add', 'blackhole', '198.18.0.0/15'); // no entries for the load
    // No route event of the kernel's own after the load: the link-local addresses' DAD is over
    // (its end adds routes, and any route change indexes the rest at once).
    await waitFor(() => !ip(lab.r, '-6', 'addr', 'show').includes('tentative'), {
      timeoutMs: 10_000,
      what: 'link-local DAD over',
    });
    const n = await startAgent(lab.r);
    await n.waitReady();
    const ips = Array.from({ length: 40_000 }, (_, i) => `198.18.${i >> 8}.${i & 255}`);
    n.setOwner('bulk', ips);
    expect(n.unindexedIps).toBe(40_000); // setOwner returns before any indexing
    n.delete('bulk', ['198.18.0.9']);
    expect(n.unindexedIps).toBe(40_000); // a delete indexes nothing
    await n.settled();
    // Within a second (without the background slices they waited 1.6 s here, for an
    // unrelated route event: at 1,000,000 the first route change paid for them).
    await waitFor(() => n.unindexedIps === 0, { timeoutMs: 1000, what: 'the index built' });
    // The index answers for the load: a route over part of it moves those IPs.
    ip(lab.r, 'route', 'add', '198.18.1.0/24', 'dev', 'ra0');
    await waitFor(
      () =>
        n
          .status()
          .forwardable.filter(
            (f) => f.ip.startsWith('198.18.1.') && f.reason !== 'blackhole route 198.18.0.0/15',
          ).length === 256,
      { timeoutMs: 10_000, what: '198.18.1.0/24 looked up again' },
    );
    const reasons = new Set(
      n
        .status()
        .forwardable.filter((f) => f.ip.startsWith('198.18.0.'))
        .map((f) => f.reason),
    );
    expect([...reasons]).toEqual(['blackhole route 198.18.0.0/15']);
  });
});
