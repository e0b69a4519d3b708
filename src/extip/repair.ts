// HolderRepair: puts the holder device back when someone else changes it — sets it up again
// when it was set down, recreates (or re-adopts) it when it was deleted, with backoff until
// that works; the assigner then refills it. Writes the kernel through the Holder and the
// handle; reads nothing of its own but one link get (is it still down?).
import { describeError, errnoCode } from '../errors/index.js';
import type { Logger } from '../log/index.js';
import { IFF_UP, type NetlinkHandle } from '../netlink/index.js';
import { backoff, Timer, type Clock } from '../sched/index.js';
import type { Assigner } from './assigner.js';
import type { Holder } from './holder.js';
import type { ExtipMetrics } from './metrics.js';

export interface HolderRepairParams {
  nl: Pick<NetlinkHandle, 'linkGet' | 'linkSetUp'>;
  holder: Holder;
  assigner: Pick<Assigner, 'holderLost' | 'holderBack'>;
  metrics: ExtipMetrics;
  log: Logger;
  clock: Clock;
}

export class HolderRepair {
  readonly #p: HolderRepairParams;
  #stopped = false;
  #recreating: Promise<void> | undefined;
  /** A set-up of the holder under way (setUp), and whether to look again after it. */
  #settingUp: Promise<void> | undefined;
  #setUpAgain = false;
  #error: string | undefined;
  readonly #sleepers = new Set<() => void>();

  constructor(p: HolderRepairParams) {
    this.#p = p;
  }

  /** Why the last recreation failed (cleared once the holder is back). */
  get error(): string | undefined {
    return this.#error;
  }

  /**
   * Sets the holder up again, one repair at a time: several events can say it is down (a
   * batch of changes, a feed's replay of an older event after a dump), so the kernel is asked
   * first, and a repair is made and counted only while the holder really is down. An event
   * that comes while one runs makes it look once more when it ends.
   */
  setUp(index: number): Promise<void> {
    if (this.#settingUp !== undefined) {
      this.#setUpAgain = true;
      return this.#settingUp;
    }
    this.#settingUp = (async () => {
      do {
        this.#setUpAgain = false;
        try {
          const now = await this.#p.nl.linkGet(index);
          if ((now.flags & IFF_UP) !== 0) continue;
          this.#p.log.warn(
            { holder: this.#p.holder.name },
            'extip: the holder device was set down; setting up',
          );
          await this.#p.nl.linkSetUp(index);
          this.#p.metrics.repaired('holder-up');
        } catch (err) {
          // ENODEV: it is being deleted; the link event that follows recreates it
          if (errnoCode(err) !== 'ENODEV') this.#failed(err);
          return;
        }
      } while (this.#setUpAgain && !this.#stopped);
    })().finally(() => {
      this.#settingUp = undefined;
    });
    return this.#settingUp;
  }

  /** The holder was deleted: address calls wait, the assigner forgets, it is recreated. */
  deleted(): void {
    this.#p.log.warn(
      { holder: this.#p.holder.name },
      'extip: the holder device was deleted; recreating',
    );
    this.#p.holder.markGone();
    this.#p.assigner.holderLost();
    void this.recreate();
  }

  /** Recreates (or re-adopts) the holder until it works; the assigner then refills it. */
  recreate(): Promise<void> {
    const { holder, metrics, assigner, log } = this.#p;
    this.#recreating ??= (async () => {
      for (let failures = 1; !this.#stopped; failures++) {
        try {
          holder.markGone();
          const { created } = await holder.ensure();
          this.#error = undefined;
          metrics.repaired('holder');
          assigner.holderBack();
          log.info({ holder: holder.name, created }, 'extip: holder device back');
          return;
        } catch (err) {
          this.#failed(err);
          this.#error = describeError(err);
          await this.#sleep(backoff(100, 10_000, failures));
        }
      }
    })().finally(() => {
      this.#recreating = undefined;
    });
    return this.#recreating;
  }

  /** Ends the pauses between attempts; resolves when no repair runs. Idempotent. */
  async stop(): Promise<void> {
    this.#stopped = true;
    for (const wake of [...this.#sleepers]) wake();
    await Promise.allSettled([this.#recreating, this.#settingUp]);
  }

  /** A pause that stop() cuts short; none starts once stop() was asked. */
  #sleep(ms: number): Promise<void> {
    if (this.#stopped) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = new Timer(this.#p.clock);
      const wake = (): void => {
        this.#sleepers.delete(wake);
        timer.cancel();
        resolve();
      };
      timer.start(ms, wake);
      this.#sleepers.add(wake);
    });
  }

  #failed(err: unknown): void {
    this.#p.metrics.error('repair');
    this.#p.log.warn({ err: describeError(err) }, 'extip: repair failed');
  }
}
