// What was added through the control API — forwardable IPs per owner, external IPs — kept
// in a small JSON file so that a restarted agent (even after SIGKILL) restores it before it
// prunes anything. Writes are atomic (temp file, fsync, rename) and serialized.
import {
  closeSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  writeSync,
} from 'node:fs';
import { dirname } from 'node:path';
import { FibkeeperError } from '../errors/index.js';

export interface PersistedState {
  version: 1;
  /** owner -> canonical IPs */
  forwardable: Record<string, string[]>;
  /** canonical external IPs */
  extip: string[];
}

export function emptyState(): PersistedState {
  return { version: 1, forwardable: {}, extip: [] };
}

export class StateStore {
  private state: PersistedState = emptyState();
  constructor(readonly path: string) {}

  /** Reads the file; a missing file is an empty state, a corrupt one an error naming the file. */
  load(): PersistedState {
    if (this.path === '') return (this.state = emptyState());
    let text: string;
    try {
      text = readFileSync(this.path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return (this.state = emptyState());
      throw new FibkeeperError(`cannot read the state file ${this.path}`, {
        cause: err,
        code: 'FIBKEEPER_ERR_SYSTEM',
      });
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (err) {
      throw new FibkeeperError(
        `the state file ${this.path} is not valid JSON; move it away to start without the API's state`,
        { cause: err, code: 'FIBKEEPER_ERR_CONFIG' },
      );
    }
    const p = parsed as Partial<PersistedState>;
    const okList = (v: unknown) => Array.isArray(v) && v.every((x) => typeof x === 'string');
    if (
      p.version !== 1 ||
      typeof p.forwardable !== 'object' ||
      p.forwardable === null ||
      !Object.values(p.forwardable).every(okList) ||
      !okList(p.extip)
    ) {
      throw new FibkeeperError(
        `the state file ${this.path} has an unknown layout; move it away to start without it`,
        {
          code: 'FIBKEEPER_ERR_CONFIG',
        },
      );
    }
    this.state = {
      version: 1,
      forwardable: { ...p.forwardable },
      extip: [...(p.extip as string[])],
    };
    return this.snapshot();
  }

  snapshot(): PersistedState {
    return {
      version: 1,
      forwardable: Object.fromEntries(
        Object.entries(this.state.forwardable).map(([k, v]) => [k, [...v]]),
      ),
      extip: [...this.state.extip],
    };
  }

  owner(owner: string): string[] {
    return [...(this.state.forwardable[owner] ?? [])];
  }

  get extip(): string[] {
    return [...this.state.extip];
  }

  /** Replaces one owner's set (empty removes the owner) and writes the file. */
  setOwner(owner: string, ips: readonly string[]): void {
    const next = this.snapshot();
    if (ips.length === 0) delete next.forwardable[owner];
    else next.forwardable[owner] = [...new Set(ips)].sort();
    this.write(next);
  }

  setExtip(ips: readonly string[]): void {
    const next = this.snapshot();
    next.extip = [...new Set(ips)].sort();
    this.write(next);
  }

  private write(next: PersistedState): void {
    if (this.path !== '') {
      mkdirSync(dirname(this.path), { recursive: true, mode: 0o750 });
      const tmp = `${this.path}.tmp`;
      const fd = openSync(tmp, 'w', 0o600);
      try {
        writeSync(fd, JSON.stringify(next, null, 1) + '\n');
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      renameSync(tmp, this.path);
      try {
        const dfd = openSync(dirname(this.path), 'r');
        try {
          fsyncSync(dfd);
        } finally {
          closeSync(dfd);
        }
      } catch {
        /* directory fsync is best effort */
      }
    }
    this.state = next;
  }
}
