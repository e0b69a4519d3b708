// The one ordered write path of the control state. Every change — API requests, SIGHUP
// reloads, the XDP miss tracker — goes through one queue. Requests that wait together are
// committed together (one durable write for the batch): each is checked against the state
// as the earlier ones leave it, the new state is saved (StateStore.save: durable before it
// returns), and only then applied to the subsystems, in queue order. A request is answered
// after that, so an acknowledged change is always in the file; a save that fails fails
// every request of the batch (StorageError → 507) and changes nothing anywhere.
//
// External IPs: the assigner takes the desired set in call order and applies it to the
// kernel in the background; the request waits for its IPs (with the caller's deadline), the
// queue does not.
import { CONFIG_OWNER, RESERVED_OWNERS, conflictError } from '../config/index.js';
import { ConflictError, NotSupportedError, TimeoutError, describeError } from '../errors/index.js';
import type { IpArg, ParsedIp } from '../ipaddr/index.js';
import type { Logger } from '../log/index.js';
import type { ControlState, StateStore } from './state.js';

/**
 * A change the control API asks for. IPs are checked (static rules), parsed once and without
 * duplicates by the API already; the targets take the parsed values and parse nothing again.
 */
export type Change =
  | {
      op: 'forwardable.add' | 'forwardable.del' | 'forwardable.set';
      owner: string;
      ips: readonly ParsedIp[];
    }
  | { op: 'extip.add' | 'extip.del'; ips: readonly ParsedIp[] };

const texts = (ips: readonly ParsedIp[]): string[] => ips.map((ip) => ip.address);

/** What the control plane needs of the neighbor subsystem (IPs as text or parsed). */
export interface ForwardableTarget {
  /** Canonical IPs, or InvalidArgumentError naming the bad ones (node addresses included). */
  check(ips: readonly IpArg[]): string[];
  upsert(owner: string, ips: readonly IpArg[]): void;
  delete(owner: string, ips: readonly IpArg[]): void;
  setOwner(owner: string, ips: readonly IpArg[]): void;
  /** The owners of one forwardable IP (config and miss-tracker owners included); [] for none. */
  owners(ip: string): readonly string[];
}

/** What the control plane needs of the external-IP subsystem. */
export interface ExtipTarget {
  check(ips: readonly IpArg[]): string[];
  assign(ips: readonly IpArg[]): Promise<void>;
  unassign(ips: readonly IpArg[]): Promise<void>;
  /** Why the subsystem cannot do its work now (for a request past its deadline). */
  problems(): string[];
}

export interface ControlPlaneParams {
  store: StateStore;
  forwardable: () => ForwardableTarget | undefined;
  extip: () => ExtipTarget | undefined;
  /** The config's own lists (`forwardable.static`, `extip.static`), canonical. */
  statics: () => { forwardable: ReadonlySet<string>; extip: ReadonlySet<string> };
  /** Cluster mode: the cluster external IPs (desired in etcd, cluster.static). */
  clusterIps?: () => ReadonlySet<string> | undefined;
  log: Logger;
  /** Called after each save attempt. */
  onSave?: (ok: boolean) => void;
  /** Most requests in one batch (one write). */
  maxBatch?: number;
}

/** What a forwardable change did to its owner's set: IPs taken that it lacked, IPs given up. */
export interface OwnerChange {
  added: number;
  removed: number;
}

interface Request {
  kind: 'change';
  change: Change;
  /** Forwardable changes: what they did to the owner's set (set when planned). */
  changed?: OwnerChange;
  phase: 'queued' | 'saving' | 'applying' | 'done';
  queuedAt: number;
  resolve: () => void;
  reject: (err: Error) => void;
}

interface Exclusive {
  kind: 'exclusive';
  what: string;
  run: () => Promise<void>;
}

type Item = Request | Exclusive;

function cloneState(s: ControlState): {
  forwardable: Map<string, Set<string>>;
  extip: Set<string>;
} {
  const forwardable = new Map<string, Set<string>>();
  for (const [o, ips] of s.forwardable) forwardable.set(o, new Set(ips));
  return { forwardable, extip: new Set(s.extip) };
}
type Draft = ReturnType<typeof cloneState>;

export class ControlPlane {
  readonly #p: ControlPlaneParams;
  readonly #queue: Item[] = [];
  #running = false;
  /** What the queue is busy with (for the reason of a timed-out request). */
  #activity = 'idle';

  constructor(p: ControlPlaneParams) {
    this.#p = p;
  }

  /**
   * Queues a change and resolves once it is durable and applied (external IPs: on the holder).
   * `signal` is the caller's deadline: a change still queued then is dropped (TimeoutError,
   * nothing applied); one already saved stays, and the TimeoutError says so.
   */
  submit(change: Change, signal?: AbortSignal): Promise<OwnerChange | undefined> {
    return new Promise<OwnerChange | undefined>((resolve, reject) => {
      const req: Request = {
        kind: 'change',
        change,
        phase: 'queued',
        queuedAt: Date.now(),
        resolve: () => resolve(undefined),
        reject,
      };
      let settled = false;
      const finish = () => {
        settled = true;
        signal?.removeEventListener('abort', onAbort);
      };
      req.resolve = () => {
        if (!settled) (finish(), resolve(req.changed));
      };
      req.reject = (err) => {
        if (!settled) (finish(), reject(err));
      };
      const onAbort = () => this.#timedOut(req);
      if (signal?.aborted)
        return reject(new TimeoutError('the request was cancelled before it was queued'));
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#queue.push(req);
      void this.#drain();
    });
  }

  /** Runs `fn` alone, in queue order (a reload, the miss tracker). */
  exclusive<T>(what: string, fn: () => Promise<T> | T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#queue.push({
        kind: 'exclusive',
        what,
        run: async () => {
          try {
            resolve(await fn());
          } catch (err) {
            reject(err as Error);
          }
        },
      });
      void this.#drain();
    });
  }

  /** Requests waiting in the queue. */
  get depth(): number {
    return this.#queue.length;
  }

  #timedOut(req: Request): void {
    const waited = Date.now() - req.queuedAt;
    if (req.phase === 'queued') {
      const i = this.#queue.indexOf(req);
      if (i >= 0) this.#queue.splice(i, 1);
      req.reject(
        new TimeoutError(
          `not applied: waited ${waited} ms in the write queue behind ${this.#activity}`,
        ),
      );
    } else if (req.phase === 'saving') {
      req.reject(
        new TimeoutError(
          `the state file write has not finished after ${waited} ms (a slow or stuck disk?); the change may or may not be saved`,
        ),
      );
    } else if (req.phase === 'applying') {
      const why = this.#p.extip()?.problems() ?? [];
      req.reject(
        new TimeoutError(
          `saved, but not yet applied after ${waited} ms${why.length ? `: ${why.join('; ')}` : ''}; it stays wanted and is retried (fibkeeper extip list shows its state; extip del withdraws it)`,
        ),
      );
    }
  }

  async #drain(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    try {
      while (this.#queue.length > 0) {
        const head = this.#queue[0] as Item;
        if (head.kind === 'exclusive') {
          this.#queue.shift();
          this.#activity = head.what;
          await head.run();
          continue;
        }
        const batch: Request[] = [];
        const max = this.#p.maxBatch ?? 1000;
        while (batch.length < max && this.#queue[0]?.kind === 'change') {
          batch.push(this.#queue.shift() as Request);
        }
        this.#activity = `a batch of ${batch.length} change(s)`;
        await this.#commit(batch);
      }
    } catch (err) {
      this.#p.log.error({ err: describeError(err) }, 'control plane: unexpected error');
    } finally {
      this.#activity = 'idle';
      this.#running = false;
    }
  }

  async #commit(batch: Request[]): Promise<void> {
    const store = this.#p.store;
    const base = store.state;
    const draft = cloneState(base);
    const accepted: { req: Request; ips: string[] }[] = [];
    for (const req of batch) {
      try {
        accepted.push({ req, ips: this.#plan(req, draft) });
      } catch (err) {
        req.phase = 'done';
        req.reject(err as Error);
      }
    }
    if (accepted.length === 0) return;
    for (const a of accepted) a.req.phase = 'saving';
    try {
      await store.save(draft);
      this.#p.onSave?.(true);
    } catch (err) {
      this.#p.onSave?.(false);
      for (const a of accepted) ((a.req.phase = 'done'), a.req.reject(err as Error));
      return;
    }
    // Applied in queue order, synchronously: nothing else runs in between.
    const failed: { req: Request; err: Error }[] = [];
    const waits: { req: Request; done: Promise<void> }[] = [];
    for (const a of accepted) {
      try {
        const done = this.#apply(a.req.change);
        if (done) waits.push({ req: a.req, done });
        else ((a.req.phase = 'done'), a.req.resolve());
      } catch (err) {
        failed.push({ req: a.req, err: err as Error });
      }
    }
    if (failed.length > 0) await this.#undo(base, accepted, failed);
    for (const w of waits) {
      w.req.phase = 'applying';
      w.done.then(
        () => ((w.req.phase = 'done'), w.req.resolve()),
        (err: Error) => ((w.req.phase = 'done'), w.req.reject(err)),
      );
    }
  }

  /**
   * A change that passed its check but failed to apply (the node's addresses changed while
   * the file was written): the file is written again without it. Still in the queue, so no
   * later change has been planned on top of it.
   */
  async #undo(
    base: ControlState,
    accepted: { req: Request; ips: string[] }[],
    failed: { req: Request; err: Error }[],
  ): Promise<void> {
    const bad = new Set(failed.map((f) => f.req));
    const fixed = cloneState(base);
    for (const a of accepted) if (!bad.has(a.req)) this.#effect(a.req.change, a.ips, fixed);
    try {
      await this.#p.store.save(fixed);
    } catch (err) {
      this.#p.log.error(
        { err: describeError(err) },
        'control plane: a refused change could not be taken out of the state file again; the next start reports and skips it',
      );
    }
    for (const f of failed) ((f.req.phase = 'done'), f.req.reject(f.err));
  }

  /**
   * Checks a change against the node and the draft; applies it to the draft; returns its IPs
   * (and, for a forwardable change, notes on the request what it did to the owner's set).
   */
  #plan(req: Request, draft: Draft): string[] {
    const c = req.change;
    if (c.op === 'forwardable.add' || c.op === 'forwardable.del' || c.op === 'forwardable.set') {
      const before = new Set(draft.forwardable.get(c.owner) ?? []);
      const ips = this.#planForwardable(c, draft);
      const after = draft.forwardable.get(c.owner) ?? new Set<string>();
      let added = 0;
      let removed = 0;
      for (const ip of after) if (!before.has(ip)) added++;
      for (const ip of before) if (!after.has(ip)) removed++;
      req.changed = { added, removed };
      return ips;
    }
    return this.#planForwardable(c, draft);
  }

  #planForwardable(c: Change, draft: Draft): string[] {
    if (c.op.startsWith('forwardable.')) {
      const n = this.#p.forwardable();
      if (!n)
        throw new NotSupportedError(
          'neighbor',
          'the neighbor subsystem is off (neighbor.enabled: false)',
        );
      if (c.op === 'forwardable.del') {
        const ips = texts(c.ips);
        this.#effect(c, ips, draft);
        return ips;
      }
      const ips = n.check(c.ips);
      const statics = this.#p.statics();
      for (const ip of ips) {
        if (draft.extip.has(ip) || statics.extip.has(ip)) {
          throw conflictError(
            ip,
            `an external IP${draft.extip.has(ip) ? '' : ' (extip.static)'}`,
            'forwardable',
            draft.extip.has(ip)
              ? `remove it first: fibkeeper extip del ${ip}`
              : 'remove it from extip.static first',
          );
        }
      }
      this.#effect(c, ips, draft);
      return ips;
    }
    const x = this.#p.extip();
    if (!x) throw new NotSupportedError('extip', 'external IPs are off (extip.enabled: false)');
    if (c.op === 'extip.del') {
      const ips = texts(c.ips);
      this.#effect(c, ips, draft);
      return ips;
    }
    const ips = x.check(c.ips);
    const cluster = this.#p.clusterIps?.();
    for (const ip of ips) {
      if (cluster?.has(ip)) {
        throw new ConflictError(
          `${ip} is a cluster external IP (held by one node of the cluster at a time), so it cannot also be a node-local one; delete it from the cluster first (fibkeeper cluster extip del ${ip})`,
        );
      }
      const owners = this.#ownersOf(ip, draft);
      if (owners.length > 0) {
        throw conflictError(
          ip,
          `forwardable (owner ${owners.join(', ')})`,
          'external',
          owners.includes(CONFIG_OWNER)
            ? 'remove it from forwardable.static first'
            : `remove it first: fibkeeper forwardable del ${ip} --owner ${owners[0]}`,
        );
      }
    }
    this.#effect(c, ips, draft);
    return ips;
  }

  /**
   * Who wants `ip` forwardable: the API's owners as the draft has them (changes of this batch
   * included), plus the agent's own owners (config, miss tracker) as the table has them.
   */
  #ownersOf(ip: string, draft: Draft): string[] {
    const out: string[] = [];
    for (const [o, ips] of draft.forwardable) if (ips.has(ip)) out.push(o);
    if (this.#p.statics().forwardable.has(ip)) out.push(CONFIG_OWNER);
    for (const o of this.#p.forwardable()?.owners(ip) ?? []) {
      if (RESERVED_OWNERS.has(o) && !out.includes(o)) out.push(o);
    }
    return out.sort();
  }

  /** What a change does to a state. */
  #effect(c: Change, ips: readonly string[], s: Draft): void {
    switch (c.op) {
      case 'forwardable.add': {
        const set = s.forwardable.get(c.owner) ?? new Set<string>();
        for (const ip of ips) set.add(ip);
        if (set.size > 0) s.forwardable.set(c.owner, set);
        return;
      }
      case 'forwardable.del': {
        const set = s.forwardable.get(c.owner);
        if (!set) return;
        for (const ip of ips) set.delete(ip);
        if (set.size === 0) s.forwardable.delete(c.owner);
        return;
      }
      case 'forwardable.set':
        if (ips.length === 0) s.forwardable.delete(c.owner);
        else s.forwardable.set(c.owner, new Set(ips));
        return;
      case 'extip.add':
        for (const ip of ips) s.extip.add(ip);
        return;
      case 'extip.del':
        for (const ip of ips) s.extip.delete(ip);
        return;
    }
  }

  /**
   * Applies a saved change with the IPs the API parsed (the check passed them all: it takes
   * all or nothing); returns what to wait for (external IPs), if anything.
   */
  #apply(c: Change): Promise<void> | undefined {
    const ips = c.ips;
    switch (c.op) {
      case 'forwardable.add':
        this.#p.forwardable()?.upsert(c.owner, ips);
        return undefined;
      case 'forwardable.del':
        this.#p.forwardable()?.delete(c.owner, ips);
        return undefined;
      case 'forwardable.set':
        this.#p.forwardable()?.setOwner(c.owner, ips);
        return undefined;
      case 'extip.add': {
        const x = this.#p.extip();
        if (!x) throw new ConflictError('extip: the external-IP subsystem went away');
        x.check(ips); // the node's addresses may have changed while the file was written
        return x.assign(ips);
      }
      case 'extip.del':
        return this.#p.extip()?.unassign(ips);
    }
  }
}
