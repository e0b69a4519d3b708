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
import { ipArgText, type IpArg, type ParsedIp } from '../ipaddr/index.js';
import type { Logger } from '../log/index.js';
import { undoChanges, type JournalOp, type UndoStep } from './journal.js';
import type { MutableState, StateStore } from './state.js';

/**
 * A change the control API asks for. IPs are checked (static rules), parsed once and without
 * duplicates by the API already; the targets take the parsed values and parse nothing again.
 */
export type Change =
  | {
      op: 'forwardable.add' | 'forwardable.del' | 'forwardable.set';
      owner: string;
      /** Parsed (a JSON request) or canonical text (a bulk request: parseIpLines). */
      ips: readonly IpArg[];
    }
  | { op: 'extip.add' | 'extip.del'; ips: readonly ParsedIp[] };

const texts = (ips: readonly IpArg[]): string[] => ips.map(ipArgText);

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
  /** Called with each change once it is applied (events). */
  onApplied?: (change: Change, changed: OwnerChange | undefined) => void;
  /** Most requests in one batch (one write). */
  maxBatch?: number;
}

/**
 * What a change did: for a forwardable one, IPs its owner took that it lacked and IPs it gave
 * up; for an extip del, the IPs that were not external IPs of this agent (`absent`).
 */
export interface OwnerChange {
  added: number;
  removed: number;
  absent?: string[];
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

type Draft = MutableState;

/** A change as the state file's journal takes it: its canonical IPs. */
function journalOp(c: Change, ips: readonly string[]): JournalOp {
  return c.op.startsWith('forwardable.')
    ? { op: c.op, owner: (c as { owner: string }).owner, ips }
    : { op: c.op, ips };
}

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
    const draft = store.draft;
    const accepted: { req: Request; ips: string[]; undo: UndoStep }[] = [];
    for (const req of batch) {
      try {
        accepted.push({ req, ...this.#plan(req, draft) });
      } catch (err) {
        req.phase = 'done';
        req.reject(err as Error);
      }
    }
    if (accepted.length === 0) return;
    for (const a of accepted) a.req.phase = 'saving';
    try {
      await store.persist();
      this.#p.onSave?.(true);
    } catch (err) {
      this.#p.onSave?.(false);
      undoChanges(
        accepted.map((a) => a.undo),
        draft,
      );
      for (const a of accepted) ((a.req.phase = 'done'), a.req.reject(err as Error));
      return;
    }
    // Applied in queue order, synchronously: nothing else runs in between.
    const failed: { req: Request; err: Error }[] = [];
    const waits: { req: Request; done: Promise<void> }[] = [];
    for (const a of accepted) {
      try {
        const done = this.#apply(a.req.change);
        this.#p.onApplied?.(a.req.change, a.req.changed);
        if (done) waits.push({ req: a.req, done });
        else ((a.req.phase = 'done'), a.req.resolve());
      } catch (err) {
        failed.push({ req: a.req, err: err as Error });
      }
    }
    if (failed.length > 0) await this.#undo(accepted, failed);
    else if (store.compactionDue) await this.#compact();
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
    accepted: { req: Request; ips: string[]; undo: UndoStep }[],
    failed: { req: Request; err: Error }[],
  ): Promise<void> {
    const bad = new Set(failed.map((f) => f.req));
    const store = this.#p.store;
    undoChanges(
      accepted.map((a) => a.undo),
      store.draft,
    );
    // The whole state: the journal holds the refused change already.
    for (const a of accepted) if (!bad.has(a.req)) store.record(journalOp(a.req.change, a.ips));
    store.discard();
    try {
      await store.compact();
    } catch (err) {
      this.#p.log.error(
        { err: describeError(err) },
        'control plane: a refused change could not be taken out of the state file again; the next start reports and skips it',
      );
    }
    for (const f of failed) ((f.req.phase = 'done'), f.req.reject(f.err));
  }

  /** Writes the whole state and drops the journal (in the queue: nothing changes meanwhile). */
  async #compact(): Promise<void> {
    this.#activity = 'the state file being written in full';
    try {
      await this.#p.store.compact();
    } catch (err) {
      // The journal still holds every change: nothing is lost; the next batch tries again.
      this.#p.log.warn({ err: describeError(err) }, 'control plane: state file compaction failed');
    }
  }

  /**
   * Checks a change against the node and the draft; applies it to the draft; returns its IPs
   * and how to take it back (and, for a forwardable change, notes on the request what it did
   * to the owner's set).
   */
  #plan(req: Request, draft: Draft): { ips: string[]; undo: UndoStep } {
    const c = req.change;
    const ips = this.#check(c, draft);
    if (c.op === 'extip.del') {
      const statics = this.#p.statics().extip;
      const absent = ips.filter((ip) => !draft.extip.has(ip) && !statics.has(ip));
      req.changed = { added: 0, removed: ips.length - absent.length, absent };
    }
    const undo = this.#p.store.record(journalOp(c, ips));
    if (undo.kind === 'fw')
      req.changed = { added: undo.added.length, removed: undo.removed.length };
    else if (undo.kind === 'fwSet') {
      const now = draft.forwardable.get(undo.owner) ?? new Set<string>();
      const prev = undo.prev ?? new Set<string>();
      let added = 0;
      let removed = 0;
      for (const ip of now) if (!prev.has(ip)) added++;
      for (const ip of prev) if (!now.has(ip)) removed++;
      req.changed = { added, removed };
    }
    return { ips, undo };
  }

  /** Checks a change against the node and the draft; returns its IPs (canonical). */
  #check(c: Change, draft: Draft): string[] {
    if (c.op.startsWith('forwardable.')) {
      const n = this.#p.forwardable();
      if (!n)
        throw new NotSupportedError(
          'neighbor',
          'the neighbor subsystem is off (neighbor.enabled: false)',
        );
      if (c.op === 'forwardable.del') return texts(c.ips);
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
      return ips;
    }
    const x = this.#p.extip();
    if (!x) throw new NotSupportedError('extip', 'external IPs are off (extip.enabled: false)');
    if (c.op === 'extip.del') return texts(c.ips);
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
