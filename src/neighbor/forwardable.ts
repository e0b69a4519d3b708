// The ForwardableIP table: canonical IP → set of owners. Every call validates all of its
// input first and then applies it in one table write, so a call is all or nothing. A row
// lives while it has an owner. Besides the table, an IpRangeIndex of the same IPs answers
// "which forwardable IPs does this prefix cover" for incremental recomputation.
import { InvalidArgumentError } from '../errors/index.js';
import { canonicalIp, classifyIp, IpRangeIndex, validateUnicastIp } from '../ipaddr/index.js';
import { Table, type TableWriter } from '../statedb/index.js';
import type { ForwardableIP } from './types.js';

/** What the calculator hears: IPs whose row was created or deleted by a commit. */
export interface ForwardableListener {
  changed(added: readonly string[], removed: readonly string[]): void;
}

export interface ForwardableParams {
  /** The node's own addresses (canonical IP → device name) at the time of the call. */
  nodeAddresses: () => ReadonlyMap<string, string>;
  now?: () => number;
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

export class ForwardableIPs {
  readonly table: Table<ForwardableIP>;
  /** The IPs of the table, by address range. */
  readonly index = new IpRangeIndex();
  private readonly nodeAddresses: () => ReadonlyMap<string, string>;
  /** One shared `[owner]` list per owner: most IPs have a single owner. */
  private readonly singles = new Map<string, readonly string[]>();
  private listener: ForwardableListener | undefined = undefined;

  constructor(params: ForwardableParams) {
    this.nodeAddresses = params.nodeAddresses;
    this.table = new Table<ForwardableIP>({
      name: 'forwardable-ips',
      primaryKey: (f) => f.ip,
      indexes: { owner: (f) => f.owners },
      now: params.now,
    });
  }

  setListener(l: ForwardableListener | undefined): void {
    this.listener = l;
  }

  /**
   * Validates IPs to be made forwardable: valid unicast, not reserved, not the node's own.
   * Returns canonical IP → family; throws one InvalidArgumentError naming the bad IPs.
   */
  private validateForAdd(ips: readonly string[]): Map<string, 4 | 6> {
    if (!Array.isArray(ips)) throw new InvalidArgumentError('forwardable IPs: expected a list');
    const nodeAddresses = this.nodeAddresses();
    const out = new Map<string, 4 | 6>();
    const problems: string[] = [];
    for (const text of ips) {
      try {
        if (typeof text !== 'string') throw new InvalidArgumentError('not a string');
        // Fast path without allocating the address bytes; anything unusual goes through
        // validateUnicastIp for its explained error.
        const ip = classifyIp(text) === 'unicast' ? canonicalIp(text) : undefined;
        if (ip !== undefined && !nodeAddresses.has(ip)) {
          out.set(ip, ip.includes(':') ? 6 : 4);
          continue;
        }
        const p = validateUnicastIp(text, { nodeAddresses });
        out.set(p.address, p.family);
      } catch (err) {
        problems.push(`${JSON.stringify(text)}: ${(err as Error).message}`);
      }
    }
    if (problems.length > 0) throw rejected(problems);
    return out;
  }

  /** Parses IPs to be released: only the text has to be an address. */
  private validateForDelete(ips: readonly string[]): Set<string> {
    if (!Array.isArray(ips)) throw new InvalidArgumentError('forwardable IPs: expected a list');
    const out = new Set<string>();
    const problems: string[] = [];
    for (const text of ips) {
      try {
        if (typeof text !== 'string') throw new InvalidArgumentError('not a string');
        out.add(canonicalIp(text));
      } catch (err) {
        problems.push(`${JSON.stringify(text)}: ${(err as Error).message}`);
      }
    }
    if (problems.length > 0) throw rejected(problems);
    return out;
  }

  /** Adds `owner` to each IP (creating rows). Atomic; idempotent. */
  upsert(owner: string, ips: readonly string[]): void {
    validateOwner(owner);
    const valid = this.validateForAdd(ips);
    const added: string[] = [];
    this.table.write((w) => {
      for (const [ip, family] of valid) this.addOwner(w, ip, family, owner, added);
    });
    this.notify(added, []);
  }

  /** Removes `owner` from each IP (a row goes with its last owner). Atomic; idempotent. */
  delete(owner: string, ips: readonly string[]): void {
    validateOwner(owner);
    const valid = this.validateForDelete(ips);
    const removed: string[] = [];
    this.table.write((w) => {
      for (const ip of valid) this.removeOwner(w, ip, owner, removed);
    });
    this.notify([], removed);
  }

  /** Makes `ips` exactly the set `owner` holds (an empty list releases all). Atomic. */
  setOwner(owner: string, ips: readonly string[]): void {
    validateOwner(owner);
    const valid = this.validateForAdd(ips);
    const added: string[] = [];
    const removed: string[] = [];
    this.table.write((w) => {
      for (const f of this.table.getBy('owner', owner)) {
        if (!valid.has(f.ip)) this.removeOwner(w, f.ip, owner, removed);
      }
      for (const [ip, family] of valid) this.addOwner(w, ip, family, owner, added);
    });
    this.notify(added, removed);
  }

  /** Every row. */
  list(): ForwardableIP[] {
    return this.table.list();
  }

  get(ip: string): ForwardableIP | undefined {
    return this.table.get(ip);
  }

  /** The IPs one owner holds. */
  ipsOf(owner: string): string[] {
    return this.table.getBy('owner', owner).map((f) => f.ip);
  }

  get size(): number {
    return this.table.size;
  }

  private addOwner(
    w: TableWriter<ForwardableIP>,
    ip: string,
    family: 4 | 6,
    owner: string,
    added: string[],
  ): void {
    const cur = this.table.get(ip);
    if (cur === undefined) {
      w.insert({ ip, family, owners: this.alone(owner) });
      this.index.add(ip);
      added.push(ip);
      return;
    }
    const owners = ownersWith(cur.owners, owner);
    if (owners !== cur.owners) w.upsert({ ...cur, owners });
  }

  private alone(owner: string): readonly string[] {
    let a = this.singles.get(owner);
    if (a === undefined) {
      a = Object.freeze([owner]);
      this.singles.set(owner, a);
    }
    return a;
  }

  private removeOwner(
    w: TableWriter<ForwardableIP>,
    ip: string,
    owner: string,
    removed: string[],
  ): void {
    const cur = this.table.get(ip);
    if (cur === undefined || !cur.owners.includes(owner)) return;
    if (cur.owners.length === 1) {
      w.delete(ip);
      this.index.delete(ip);
      removed.push(ip);
      return;
    }
    const rest = cur.owners.filter((o) => o !== owner);
    w.upsert({ ...cur, owners: rest.length === 1 ? this.alone(rest[0]!) : rest });
  }

  private notify(added: readonly string[], removed: readonly string[]): void {
    if (added.length > 0 || removed.length > 0) this.listener?.changed(added, removed);
  }
}
