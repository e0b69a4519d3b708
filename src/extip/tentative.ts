// The wait for the kernel's duplicate address detection on an address someone else put on
// the holder with DAD (fibkeeper adds its own nodad): it ends with the address event that
// clears IFA_F_TENTATIVE (done), sets IFA_F_DADFAILED or removes it (failed), or after
// TENTATIVE_TIMEOUT_MS on the clock (failed: no carrier?).
import { TimeoutError } from '../errors/index.js';
import { IFA_F_DADFAILED, IFA_F_TENTATIVE } from '../netlink/index.js';
import { Timer, type Clock } from '../sched/index.js';
import { dadFailed, type Entry } from './types.js';

/** How long such an address may stay tentative before the assignment fails, ms. */
export const TENTATIVE_TIMEOUT_MS = 5000;

/**
 * Resolves once `e`'s address is no longer tentative; rejects when its DAD failed or timed
 * out. `waiting` is called when there is something to wait for.
 */
export function waitTentative(e: Entry, clock: Clock, waiting: () => void): Promise<void> {
  const flags = e.flags;
  if (flags !== undefined && (flags & IFA_F_DADFAILED) !== 0) {
    return Promise.reject(dadFailed(e.ip));
  }
  if (flags !== undefined && (flags & IFA_F_TENTATIVE) === 0) return Promise.resolve();
  waiting();
  return new Promise<void>((resolve, reject) => {
    const timer = new Timer(clock);
    timer.start(TENTATIVE_TIMEOUT_MS, () => {
      e.tentative = undefined;
      reject(
        new TimeoutError(
          `${e.ip.address} stayed tentative on the holder (the kernel's duplicate address detection) for ${TENTATIVE_TIMEOUT_MS} ms; does the holder have a carrier?`,
        ),
      );
    });
    e.tentative = { resolve, reject, timer };
  });
}

/** Ends a wait: done (no failure), or failed with failure() (built only if one waited). */
export function finishTentative(e: Entry, failure?: () => Error): void {
  const d = e.tentative;
  if (d === undefined) return;
  e.tentative = undefined;
  d.timer.cancel();
  if (failure === undefined) d.resolve();
  else d.reject(failure());
}
