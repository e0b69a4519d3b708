import { describe, expect, it } from 'vitest';
import { silentLogger } from '../log/index.js';
import type { RtEvent, Subscription, SubscriptionHandlers } from '../netlink/index.js';
import { Feed } from '../netlink/index.js';
import { FakeClock } from '../sched/testing.js';
import { neigh } from './testing.js';

describe('feed', () => {
  it('reacts to a dump only after the events held during it are applied', async () => {
    const order: string[] = [];
    let handlers: SubscriptionHandlers | undefined;
    let finish: (v: string[]) => void = () => undefined;
    const feed = new Feed<string[]>({
      name: 'test',
      subscribe: (h) => {
        handlers = h;
        return { close: () => undefined } as unknown as Subscription;
      },
      dump: () => new Promise<string[]>((resolve) => (finish = resolve)),
      load: (d) => order.push(`load ${d.join(',')}`),
      apply: (ev) =>
        order.push(`apply ${ev.kind} ${(ev as RtEvent & { object: 'neigh' }).msg.dst}`),
      caughtUp: () => order.push('caught up'),
      resynced: () => undefined,
      clock: new FakeClock(),
      log: silentLogger(),
      retryMs: 10,
    });
    feed.open();
    const initial = feed.initial();
    // Written while the dump runs: the dump misses it, the held event has it.
    handlers?.onEvent({ kind: 'new', object: 'neigh', msg: neigh(2, '10.0.0.7') });
    finish(['10.0.0.1']);
    await initial;
    expect(order).toEqual(['load 10.0.0.1', 'apply new 10.0.0.7', 'caught up']);
  });
});
