// The ForwardableIP table: canonical IP → set of owners. Every call validates all of its
// input first and then applies it, so a call is all or nothing. A row lives while it has an
// owner. Besides the table, an IpRangeIndex of the same IPs answers "which forwardable IPs
// does this prefix cover" for incremental recomputation.
//
// The table is a plain map (canonical IP → its sorted owners, one shared array per single
// owner) rather than a statedb Table: nothing watches it (changes go to the listener), so
// revisions, per-row nodes and an owner index would only cost memory and time with 100,000
// rows. An owner's IPs are found by a scan (setOwner, status), which is rare.
import { InvalidArgumentError } from '../errors/index.js';
import {
  canonicalIp,
  classifyIp,
  IpRangeIndex,
  ipArgText,
  isCanonicalUnicast,
  markCanonicalUnicast,
  validateUnicastIp,
  type IpArg,
} from '../ipaddr/index.js';
import type { Initializable } from '../statedb/index.js';
import { Initializers } from './init.js';
import type { ForwardableIP } from './types.js';

/** What a call changed for its owner: IPs it took that it did not hold, and IPs it gave up. */
export interface OwnerChange {
  added: number;
  removed: number;
}

/** What the calculator hears: IPs whose row was created or deleted by a commit. */
export interface ForwardableListener {
  changed(added: readonly string[], removed: readonly string[]): void;
}

export interface ForwardableParams {
  /** The node's own addresses (canonical IP → device name) at the time of the call. */
  nodeAddresses: () => ReadonlyMap<string, string>;
}

const OWNER = /^[A-Za-z0-9][A-Za-z0-9._:/@-]{0,62}$/;
/** Rejections quoted in one error; the rest are counted. */
const QUOTED = 3;

/** Throws InvalidArgumentError unless `owner` is a short name (letters, digits, ._:/@-). */
export function validateOwner(owner: unknown): string {
  if (typeof owner !== 'string' || !OWNER.test(owner)) {
    throw new InvalidArgumentError(
      `owner ${JSON.stringify(owner)} is not a valid owner name (1-63 characters: letters, digits and ._:/@-, starting with a letter or digit)`,
    );
  }
  return owner;
}

/** What a message quotes of an IP: its text (canonical when it was parsed), else the value. */
const quoted = (v: unknown): unknown =>
  typeof v === 'object' && v !== null ? ipArgText(v as IpArg) : v;

function rejected(problems: string[]): InvalidArgumentError {
  const more = problems.length - QUOTED;
  const tail = more > 0 ? `; and ${more} more rejected` : '';
  const what = problems.length === 1 ? 'forwardable IP rejected' : 'forwardable IPs rejected';
  return new InvalidArgumentError(`${what}: ${problems.slice(0, QUOTED).join('; ')}${tail}`);
}

function ownersWith(owners: readonly string[], owner: string): readonly string[] {
  if (owners.includes(owner)) return owners;
  return [...owners, owner].sort();
}

export class ForwardableIPs implements Initializable {
  readonly name = 'forwardable-ips';
  readonly #byRange = new IpRangeIndex();
  /**
   * IPs added but not yet in `byRange` (from `#indexedTo` on): a bulk load does not build the
   * range index on its way to the kernel. The subsystem indexes them in slices once it is
   * idle (indexSome); a query (a route change) indexes what is left.
   */
  #unindexed: string[] = [];
  #indexedTo = 0;
  /** Canonical IP → its owners (sorted, never empty). */
  readonly #rows = new Map<string, readonly string[]>();
  readonly #init = new Initializers('forwardable-ips');
  readonly #nodeAddresses: () => ReadonlyMap<string, string>;
  /** One shared `[owner]` list per owner: most IPs have a single owner. */
  readonly #singles = new Map<string, readonly string[]>();
  /** Owner → how many IPs it holds. */
  readonly #held = new Map<string, number>();
  #listener: ForwardableListener | undefined = undefined;

  constructor(params: ForwardableParams) {
    this.#nodeAddresses = params.nodeAddresses;
  }

  setListener(l: ForwardableListener | undefined): void {
    this.#listener = l;
  }

  /** The IPs of the table, by address range (brought up to date on access). */
  get index(): IpRangeIndex {
    this.indexSome(Infinity);
    return this.#byRange;
  }

  /** IPs added and not yet in the range index. */
  get unindexed(): number {
    return this.#unindexed.length - this.#indexedTo;
  }

  /** Puts up to `limit` of the IPs added into the range index; true when some are left. */
  indexSome(limit: number): boolean {
    const adds = this.#unindexed;
    const end = Math.min(adds.length, this.#indexedTo + limit);
    // An IP removed (and maybe re-added) since is indexed by its current presence.
    for (let i = this.#indexedTo; i < end; i++) {
      const ip = adds[i]!;
      if (this.#rows.has(ip)) this.#byRange.add(ip);
    }
    if (end < adds.length) {
      this.#indexedTo = end;
      return true;
    }
    this.#unindexed = [];
    this.#indexedTo = 0;
    return false;
  }

  // ---- initialization ----------------------------------------------------------------

  /**
   * Registers a source of forwardable IPs; the table is initialized once every source has
   * called its done function.
   */
  registerInitializer(name: string): () => void {
    return this.#init.register(name);
  }

  get initialized(): boolean {
    return this.#init.initialized;
  }

  waitInitialized(signal?: AbortSignal): Promise<void> {
    return this.#init.waitInitialized(signal);
  }

  /**
   * Validates IPs to be made forwardable: valid unicast, not reserved, not the node's own.
   * Returns them canonical (duplicates possible); throws one InvalidArgumentError naming the
   * bad IPs. IPs parsed already (by the API) are checked from their bytes, not parsed again.
   */
  #validateForAdd(ips: readonly IpArg[]): string[] {
    if (!Array.isArray(ips)) throw new InvalidArgumentError('forwardable IPs: expected a list');
    const nodeAddresses = this.#nodeAddresses();
    if (isCanonicalUnicast(ips)) return this.#notNodeAddresses(ips as string[], nodeAddresses);
    const out: string[] = [];
    const problems: string[] = [];
    for (const text of ips) {
      try {
        if (typeof text === 'object' && text !== null) {
          out.push(validateUnicastIp(text, { nodeAddresses }).address);
          continue;
        }
        if (typeof text !== 'string') throw new InvalidArgumentError('not a string');
        // Fast path without allocating the address bytes; anything unusual goes through
        // validateUnicastIp for its explained error.
        const ip = classifyIp(text) === 'unicast' ? canonicalIp(text) : undefined;
        if (ip !== undefined && !nodeAddresses.has(ip)) {
          // The caller's string when it is canonical: one string per IP, shared by the
          // tables (and the state file's set), not a copy each.
          out.push(ip === text ? text : ip);
          continue;
        }
        out.push(validateUnicastIp(text, { nodeAddresses }).address);
      } catch (err) {
        problems.push(`${JSON.stringify(quoted(text))}: ${(err as Error).message}`);
      }
    }
    if (problems.length > 0) throw rejected(problems);
    return out;
  }

  /** Checked canonical IPs (a bulk request's): only the node's own addresses are refused. */
  #notNodeAddresses(ips: readonly string[], nodeAddresses: ReadonlyMap<string, string>): string[] {
    const problems: string[] = [];
    for (const ip of ips) {
      if (nodeAddresses.has(ip)) {
        try {
          validateUnicastIp(ip, { nodeAddresses });
        } catch (err) {
          problems.push(`${JSON.stringify(ip)}: ${(err as Error).message}`);
        }
      }
    }
    if (problems.length > 0) throw rejected(problems);
    return ips as string[];
  }

  /** Parses IPs to be released: only the text has to be an address (a parsed one is one). */
  #validateForDelete(ips: readonly IpArg[]): Set<string> {
    if (!Array.isArray(ips)) throw new InvalidArgumentError('forwardable IPs: expected a list');
    const out = new Set<string>();
    const problems: string[] = [];
    for (const text of ips) {
      try {
        if (typeof text === 'object' && text !== null) out.add(text.address);
        else if (typeof text !== 'string') throw new InvalidArgumentError('not a string');
        else out.add(canonicalIp(text));
      } catch (err) {
        problems.push(`${JSON.stringify(quoted(text))}: ${(err as Error).message}`);
      }
    }
    if (problems.length > 0) throw rejected(problems);
    return out;
  }

  /** Checks IPs as upsert() does, changing nothing; returns them canonical, without duplicates. */
  check(ips: readonly IpArg[]): string[] {
    const out = [...new Set(this.#validateForAdd(ips))];
    return isCanonicalUnicast(ips) ? markCanonicalUnicast(out) : out;
  }

  /**
   * Adds `owner` to each IP (creating rows). Atomic; idempotent. Returns how many IPs the
   * owner did not hold before (`added`; `removed` is 0).
   */
  upsert(owner: string, ips: readonly IpArg[]): OwnerChange {
    validateOwner(owner);
    const valid = this.#validateForAdd(ips);
    const added: string[] = [];
    let claimed = 0;
    for (const ip of valid) if (this.#addOwner(ip, owner, added)) claimed++;
    this.#notify(added, []);
    return { added: claimed, removed: 0 };
  }

  /**
   * Removes `owner` from each IP (a row goes with its last owner). Atomic; idempotent.
   * Returns how many of the IPs the owner held (`removed`): IPs it did not hold are no error
   * and are not counted.
   */
  delete(owner: string, ips: readonly IpArg[]): OwnerChange {
    validateOwner(owner);
    const valid = this.#validateForDelete(ips);
    const removed: string[] = [];
    let released = 0;
    for (const ip of valid) if (this.#removeOwner(ip, owner, removed)) released++;
    this.#notify([], removed);
    return { added: 0, removed: released };
  }

  /**
   * Makes `ips` exactly the set `owner` holds (an empty list releases all). Atomic. Returns
   * how many IPs the owner took and gave up.
   */
  setOwner(owner: string, ips: readonly IpArg[]): OwnerChange {
    validateOwner(owner);
    const valid = this.#validateForAdd(ips);
    const added: string[] = [];
    const removed: string[] = [];
    let claimed = 0;
    let released = 0;
    if ((this.#held.get(owner) ?? 0) > 0) {
      const keep = new Set(valid);
      for (const [ip, owners] of this.#rows) {
        if (!keep.has(ip) && owners.includes(owner) && this.#removeOwner(ip, owner, removed)) {
          released++;
        }
      }
    }
    for (const ip of valid) if (this.#addOwner(ip, owner, added)) claimed++;
    this.#notify(added, removed);
    return { added: claimed, removed: released };
  }

  /** Every row. */
  list(): ForwardableIP[] {
    const out: ForwardableIP[] = [];
    for (const [ip, owners] of this.#rows) out.push(row(ip, owners));
    return out;
  }

  get(ip: string): ForwardableIP | undefined {
    const owners = this.#rows.get(ip);
    return owners === undefined ? undefined : row(ip, owners);
  }

  /** The IP (canonical) is forwardable. */
  has(ip: string): boolean {
    return this.#rows.has(ip);
  }

  /** Every forwardable IP (canonical), live: do not change the table while iterating. */
  ips(): IterableIterator<string> {
    return this.#rows.keys();
  }

  /** The rows one owner holds. */
  rowsOf(owner: string): ForwardableIP[] {
    const out: ForwardableIP[] = [];
    for (const [ip, owners] of this.#rows) if (owners.includes(owner)) out.push(row(ip, owners));
    return out;
  }

  /** The IPs one owner holds. */
  ipsOf(owner: string): string[] {
    return this.rowsOf(owner).map((f) => f.ip);
  }

  get size(): number {
    return this.#rows.size;
  }

  /** Adds `owner` to `ip`; true when the owner did not hold it. */
  #addOwner(ip: string, owner: string, added: string[]): boolean {
    const cur = this.#rows.get(ip);
    if (cur === undefined) {
      this.#rows.set(ip, this.#alone(owner));
      this.#unindexed.push(ip);
      this.#hold(owner, 1);
      added.push(ip);
      return true;
    }
    const owners = ownersWith(cur, owner);
    if (owners === cur) return false;
    this.#rows.set(ip, owners);
    this.#hold(owner, 1);
    return true;
  }

  /** Counts the IPs each owner holds (setOwner scans the table only for an owner with some). */
  #hold(owner: string, delta: number): void {
    const n = (this.#held.get(owner) ?? 0) + delta;
    if (n > 0) this.#held.set(owner, n);
    else this.#held.delete(owner);
  }

  #alone(owner: string): readonly string[] {
    let a = this.#singles.get(owner);
    if (a === undefined) {
      a = Object.freeze([owner]);
      this.#singles.set(owner, a);
    }
    return a;
  }

  /** Removes `owner` from `ip`; true when the owner held it. */
  #removeOwner(ip: string, owner: string, removed: string[]): boolean {
    const cur = this.#rows.get(ip);
    if (cur === undefined || !cur.includes(owner)) return false;
    this.#hold(owner, -1);
    if (cur.length === 1) {
      this.#rows.delete(ip);
      // not this.index: one delete would index every IP still waiting (a million after a load)
      this.#byRange.delete(ip);
      removed.push(ip);
      return true;
    }
    const rest = cur.filter((o) => o !== owner);
    this.#rows.set(ip, rest.length === 1 ? this.#alone(rest[0]!) : rest);
    return true;
  }

  #notify(added: readonly string[], removed: readonly string[]): void {
    if (added.length > 0 || removed.length > 0) this.#listener?.changed(added, removed);
  }
}

function row(ip: string, owners: readonly string[]): ForwardableIP {
  return { ip, family: ip.includes(':') ? 6 : 4, owners };
}
