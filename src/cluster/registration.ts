// This node's member key: created bound to each new lease (create-if-absent: a key of
// another lease — an earlier run whose lease has not expired, or another agent with the same
// name — is waited out, never taken), and written again when what it says changes (the node
// became able or unable to hold IPs).
import type { Logger } from 'pino';
import { describeError } from '../errors/index.js';
import type { Clock } from '../sched/index.js';
import type { KeyLayout } from './keys.js';
import type { LeaseKeeper } from './lease.js';
import type { ClusterStore } from './store.js';
import type { ClusterView } from './view.js';

export interface RegistrationParams {
  node: string;
  store: ClusterStore;
  layout: KeyLayout;
  view: ClusterView;
  lease: LeaseKeeper;
  clock: Clock;
  log: Logger | undefined;
  /** The member key's value now. */
  value(): string;
  stopping(): boolean;
  /** Runs `fn` after `ms` unless stopping. */
  later(ms: number, fn: () => void): void;
  /** The retry delay after `attempt` + 1 failures. */
  backoff(attempt: number): number;
  timed<T>(fn: () => Promise<T>): Promise<T>;
  /** Registered with lease `id` (or the key was rewritten): reconcile. */
  onChange(registered: boolean): void;
}

export class Registration {
  readonly #p: RegistrationParams;
  /** The lease the member key is bound to, once created. */
  lease: string | undefined;
  #busy = false;
  #since = 0;

  constructor(p: RegistrationParams) {
    this.#p = p;
  }

  /** The lease changed (granted or lost): the key must be created again. */
  forget(): void {
    this.lease = undefined;
  }

  /** Creates the member key bound to the current lease. */
  register(attempt = 0): void {
    const p = this.#p;
    const id = p.lease.id;
    if (this.#busy || p.stopping() || id === undefined || this.lease === id) return;
    this.#busy = true;
    if (attempt === 0) this.#since = p.clock.now();
    const key = p.layout.member(p.node);
    const value = p.value();
    p.timed(() => p.store.createIfAbsent(key, value, id)).then(
      (rev) => {
        this.#busy = false;
        if (p.lease.id !== id) return this.register(0);
        if (rev > 0) {
          this.lease = id;
          p.view.local(key, value, id, rev, p.clock.now());
          p.log?.info({ node: p.node, lease: id }, 'cluster member registered');
          if (value !== p.value()) this.update(0);
          p.onChange(true);
          return;
        }
        const waited = p.clock.now() - this.#since;
        if (waited > 3 * p.lease.ttlMs) {
          p.log?.error(
            { node: p.node, waitedMs: Math.round(waited) },
            'cluster member key is held by another lease and stays: is another agent running with the same cluster.nodeName?',
          );
        }
        p.later(p.backoff(Math.min(attempt, 4)), () => this.register(attempt + 1));
      },
      (err: unknown) => {
        this.#busy = false;
        p.log?.debug({ err: describeError(err) }, 'cluster member registration failed');
        p.later(p.backoff(attempt), () => this.register(attempt + 1));
      },
    );
  }

  /** Writes the member key's value again, bound to the registered lease. */
  update(attempt = 0): void {
    const p = this.#p;
    const id = this.lease;
    if (id === undefined || p.stopping()) return; // registering writes the current value
    const key = p.layout.member(p.node);
    const value = p.value();
    p.timed(() => p.store.replaceIfLease(key, value, id)).then(
      (rev) => {
        if (rev > 0) p.view.local(key, value, id, rev, p.clock.now());
        if (value !== p.value()) this.update(0);
        p.onChange(false);
      },
      (err: unknown) => {
        p.log?.debug({ err: describeError(err) }, 'cluster member update failed');
        p.later(p.backoff(attempt), () => this.update(attempt + 1));
      },
    );
  }
}
