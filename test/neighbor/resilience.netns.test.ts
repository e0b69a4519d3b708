// The subsystem under stress: an event flood that overflows its neighbor socket, a device
// deleted and created again, and 5,000 next hops on one device.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import {
  ifindexOf,
  ip,
  ipJson,
  makeNetns,
  privileged,
  vethPair,
  waitFor,
} from '../helpers/netns.js';
import { buildLab, hasMarks, neighs, owned, PROTO, startAgent, waitEntry } from './lab.js';

const { skip } = privileged();

function batchFile(lines: string[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'fkt-nb-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'cmds');
  writeFileSync(file, lines.join('\n') + '\n');
  return file;
}

const v4 = (base: number, i: number): string =>
  `${base >>> 24}.${(base >>> 16) & 255}.${((base + i) >>> 8) & 255}.${(base + i) & 255}`;

describe.skipIf(skip)('neighbor resilience', () => {
  it('resyncs after its neighbor socket overflows and loses nothing', async () => {
    const lab = buildLab('nb-ovf');
    const n = await startAgent(lab.r, { tuning: { neighRcvbuf: 4096 } });
    const ours = ['10.1.0.2', '10.1.0.3', '10.1.0.20', '10.2.0.2', '10.2.0.20'];
    n.upsert('test', ours);
    await n.waitReady();
    const want = [
      '10.1.0.2 ra0',
      '10.1.0.3 ra0',
      '10.1.0.20 ra0',
      '10.2.0.2 rb0',
      '10.2.0.20 rb0',
    ].sort();
    await waitFor(() => JSON.stringify(owned(lab.r)) === JSON.stringify(want), {
      what: 'initial entries',
    });
    // Settled: the subsystem sees every entry resolved (its view is complete again even if
    // its own writes already overflowed the tiny socket).
    await waitFor(() => n.status().summary.kernelEntriesByState.reachable === 5, {
      what: 'entries seen REACHABLE',
    });
    const overflowsBefore = n.status().counters.resyncs['neighbors/overflow'] ?? 0;
    // 3,000 operator entries (extern_learn: exempt from gc_thresh3) written in one burst,
    // with deletions of two of fibkeeper's entries in the middle of it.
    const flood = Array.from(
      { length: 3000 },
      (_, i) =>
        `neigh replace ${v4(0x0a320000, i)} lladdr 02:00:00:00:00:01 dev rb0 nud reachable extern_learn`,
    );
    flood.splice(1500, 0, 'neigh del 10.1.0.20 dev ra0', 'neigh del 10.2.0.2 dev rb0');
    ip(lab.r, '-batch', batchFile(flood));
    await waitFor(
      () => (n.status().counters.resyncs['neighbors/overflow'] ?? 0) > overflowsBefore,
      { what: 'an overflow resync' },
    );
    await waitFor(() => JSON.stringify(owned(lab.r)) === JSON.stringify(want), {
      timeoutMs: 10_000,
      what: `entries back, have ${owned(lab.r).join(', ')}`,
    });
    for (const e of neighs(lab.r).filter((x) => x.protocol === PROTO)) {
      expect(hasMarks(e), JSON.stringify(e)).toBe(true);
    }
    // The operator's entries are untouched.
    expect(neighs(lab.r).filter((x) => x.dev === 'rb0' && x.dst.startsWith('10.50.'))).toHaveLength(
      3000,
    );
    ip(lab.r, 'neigh', 'flush', 'dev', 'rb0', 'to', '10.50.0.0/16', 'nud', 'all');
  });

  it('follows a device that is deleted and created again with a new ifindex', async () => {
    const lab = buildLab('nb-dev');
    const n = await startAgent(lab.r);
    n.upsert('test', ['10.1.0.20', '10.2.0.20']);
    await n.waitReady();
    await waitEntry(lab.r, '10.2.0.20', 'rb0', hasMarks);
    const before = lab.rb0;
    ip(lab.r, 'link', 'del', 'rb0');
    await waitFor(() => n.status().desired.every((d) => d.ifindex !== before), {
      what: 'entries of the deleted device dropped',
    });
    vethPair(lab.r, 'rb0', lab.b, 'pb0');
    ip(lab.r, 'addr', 'add', '10.2.0.1/24', 'dev', 'rb0');
    for (const a of ['10.2.0.2/24', '10.2.0.20/24']) ip(lab.b, 'addr', 'add', a, 'dev', 'pb0');
    const after = ifindexOf(lab.r, 'rb0');
    expect(after).not.toBe(before);
    const e = await waitEntry(lab.r, '10.2.0.20', 'rb0', (x) => x.state.includes('REACHABLE'));
    expect(hasMarks(e)).toBe(true);
    // The kernel can show the entry before a loaded agent has read the answer to its write.
    await waitFor(() => n.status({ ip: '10.2.0.20' }).desired[0]?.status === 'done', {
      what: 'the write reported done',
    });
    expect(n.status({ ip: '10.2.0.20' }).desired).toEqual([
      expect.objectContaining({
        ifindex: after,
        device: 'rb0',
        nexthop: '10.2.0.20',
        status: 'done',
      }),
    ]);
    expect(owned(lab.r)).toEqual(['10.1.0.20 ra0', '10.2.0.20 rb0']);
  });

  it('holds 5,000 next hops on one device without a gc_thresh3 failure', async () => {
    const r = makeNetns('nb-5k-r');
    const c = makeNetns('nb-5k-c');
    vethPair(r, 'rc0', c, 'pc0');
    ip(r, 'addr', 'add', '10.100.0.1/16', 'dev', 'rc0');
    const n = await startAgent(r, { config: { devices: ['rc0'] } });
    const ips = Array.from({ length: 5000 }, (_, i) => v4(0x0a640000, i + 2));
    n.upsert('bulk', ips);
    await n.waitReady();
    await waitFor(() => n.status().summary.desiredByStatus.done === 5000, {
      timeoutMs: 20_000,
      what: '5,000 entries written',
    });
    const kernel = ipJson<{ dst: string; protocol?: string; extern_learn?: null }[]>(
      r,
      'neigh',
      'show',
      'dev',
      'rc0',
      'nud',
      'all',
    ).filter((x) => x.protocol === PROTO && x.extern_learn === null);
    expect(kernel).toHaveLength(5000);
    expect(n.status().counters.reconcileErrors).toBe(0);
    expect(n.health().level).toBe('ok');
  });
});
