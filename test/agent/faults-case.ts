// Fault injection at the native boundary (issue 24), the cases that faults.netns.test.ts and
// faults-2.netns.test.ts run (half the classes each, so that they run side by side): for each
// error class, the real agent (`fibkeeper run` in the lab's router) under route churn, link
// flaps and control API traffic, with that class injected into its netlink and packet sockets from the moment it
// is ready (src/lab/faults.ts). Afterwards the kernel must hold exactly the desired
// state, computed without the agent (`ip route get IP oif DEV fibmatch` per forwardable IP,
// the external IPs the API acknowledged, XDP on every selected device), /livez and the API
// must have answered throughout, and SIGTERM must end it cleanly. A few seconds per class
// here; bench/faults runs two minutes per class.
import { mkdtempSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { faultSoak } from '../../src/lab/index.js';
import type { FaultClass } from '../../src/native/index.js';
import { privileged } from '../helpers/netns.js';

const { skip } = privileged();

/** Probability per call of each class, chosen so that every socket meets several faults. */
export const RATES: Record<FaultClass, number> = {
  EINVAL: 0.002,
  ENOBUFS: 0.01,
  EMSGSIZE: 0.005,
  EBUSY: 0.002,
  EAGAIN: 0.005,
  timeout: 0.001,
  truncate: 0.005,
  hang: 0.02,
};
/** Per class: the deaf periods of `timeout` outlast silentMs, so that they need a reopen. */
const EXTRA: Partial<Record<FaultClass, string>> = { timeout: ',deafMs=4000' };
/** Classes that replace a socket (an error that is not an overflow, or silence). */
const REOPENING: FaultClass[] = ['EINVAL', 'EBUSY', 'timeout'];
/** Shortened socket health timings: a deaf socket is replaced after 2 s of silence. */
export const HEALTH =
  'phase=ready,probeMs=500,silentMs=2000,liveMs=8000,deafMs=1500,hangMs=1500,stormMs=30';

/** One test per class of `classes`. */
export function faultCases(classes: readonly FaultClass[]): void {
  describe.skipIf(skip)('the agent under injected kernel errors', () => {
    it.each(classes.map((c) => [c]))(
      '%s: the kernel ends up as desired, /livez and the API answered throughout',
      async (cls) => {
        const dir = mkdtempSync(join(tmpdir(), `fkt-faults-${cls}-`));
        try {
          const faults = `classes=${cls},rate=${RATES[cls]},seed=7,${HEALTH}${EXTRA[cls] ?? ''}`;
          const r = await faultSoak({
            prefix: `f${randomBytes(3).toString('hex')}`,
            faults,
            churnMs: 6000,
            settleMs: 30_000,
            dir,
            bin: resolve('bin/fibkeeper.js'),
            node: process.execPath,
          });
          const tail = r.log.split('\n').slice(-40).join('\n');
          const injected = Object.entries(r.injected).filter(([k]) => k.startsWith(`${cls} `));
          expect(
            injected.reduce((n, [, v]) => n + v, 0),
            JSON.stringify(r.injected),
          ).toBeGreaterThan(0);
          expect(r.diff, tail).toEqual([]);
          expect(r.convergedMs, tail).toBeDefined();
          expect(r.livez, tail).toMatchObject({ failed: 0, unanswered: 0 });
          expect(r.livez.ok).toBeGreaterThan(10);
          expect(r.api.unanswered).toBe(0);
          expect(r.api.ok).toBeGreaterThan(5);
          if (REOPENING.includes(cls)) {
            expect(
              Object.values(r.reopens).reduce((a, b) => a + b, 0),
              tail,
            ).toBeGreaterThan(0);
          }
          expect(r.stop.code, tail).toBe(0);
        } finally {
          rmSync(dir, { recursive: true, force: true });
        }
      },
      120_000,
    );
  });
}
