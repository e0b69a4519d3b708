// Keeps a ClusterView current: reads every key under the prefix, then watches from the next
// revision. A watch that ends on an error resumes from the last revision seen (nothing is
// missed); one whose revision was compacted away reads everything again.
import { describeError } from '../errors/index.js';
import { backoff, Timer, type Clock } from '../sched/index.js';
import type { ClusterMetrics } from './metrics.js';
import { CompactedError, type ClusterStore, type WatchHandle } from './store.js';
import type { ClusterView } from './view.js';

export interface ViewSyncParams {
  store: ClusterStore;
  view: ClusterView;
  prefix: string;
  clock: Clock;
  metrics: ClusterMetrics;
  retryMinMs: number;
  retryMaxMs: number;
  /** The view changed (or was read for the first time). */
  onChange(): void;
  /** Times a request (for the request metrics). */
  timed<T>(op: 'get', fn: () => Promise<T>): Promise<T>;
  log?: { debug(o: object, msg: string): void; info(o: object, msg: string): void };
}

export class ViewSync {
  readonly #p: ViewSyncParams;
  #watch: WatchHandle | undefined;
  #retry = 0;
  /** Pending between a failure (or a read) and the next step. */
  readonly #timer: Timer;
  #syncing = false;
  #fullRead = true;
  #ready = false;
  #stopped = false;

  constructor(p: ViewSyncParams) {
    this.#p = p;
    this.#timer = new Timer(p.clock);
  }

  /** The view has been read once. */
  get ready(): boolean {
    return this.#ready;
  }

  /** A watch is open. */
  get watching(): boolean {
    return this.#watch !== undefined;
  }

  start(): void {
    this.#read();
  }

  stop(): void {
    this.#stopped = true;
    this.#watch?.cancel();
    this.#watch = undefined;
    this.#timer.cancel();
  }

  /** etcd answers again: take the next step now rather than at the next backoff step. */
  now(): void {
    if (!this.#timer.pending) return; // reading, or watching
    this.#timer.cancel();
    this.#retry = 0;
    this.#step();
  }

  #later(ms: number): void {
    this.#timer.start(ms, () => {
      if (!this.#stopped) this.#step();
    });
  }

  #backoff(): number {
    return backoff(this.#p.retryMinMs, this.#p.retryMaxMs, ++this.#retry);
  }

  #step(): void {
    if (this.#ready && !this.#fullRead) this.#watchFrom(this.#p.view.revision + 1);
    else this.#read();
  }

  #read(): void {
    if (this.#stopped || this.#syncing) return;
    this.#syncing = true;
    const { view, prefix, clock } = this.#p;
    this.#p
      .timed('get', () => this.#p.store.getPrefix(prefix))
      .then(
        ({ revision, kvs }) => {
          this.#syncing = false;
          if (this.#stopped) return;
          this.#retry = 0;
          this.#fullRead = false;
          view.reset(kvs, revision, clock.now());
          this.#ready = true;
          this.#watchFrom(revision + 1);
          this.#p.onChange();
        },
        (err: unknown) => {
          this.#syncing = false;
          this.#p.log?.debug({ err: describeError(err) }, 'cluster read failed');
          this.#later(this.#backoff());
        },
      );
  }

  #watchFrom(revision: number): void {
    if (this.#stopped) return;
    const { view, clock } = this.#p;
    this.#watch = this.#p.store.watchPrefix(this.#p.prefix, revision, {
      onEvents: (events, rev) => {
        this.#retry = 0;
        if (view.apply(events, rev, clock.now())) this.#p.onChange();
      },
      onEnd: (err) => {
        this.#watch = undefined;
        if (this.#stopped) return;
        const compacted = err instanceof CompactedError;
        this.#p.metrics.resync(compacted ? 'compacted' : 'error');
        this.#p.log?.info(
          { err: describeError(err), revision: view.revision },
          compacted
            ? 'cluster watch compacted; reading everything again'
            : 'cluster watch ended; resuming',
        );
        if (compacted) this.#fullRead = true;
        this.#later(compacted ? 0 : this.#backoff());
      },
    });
  }
}
