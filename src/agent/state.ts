// What was added through the control API — forwardable IPs per owner, external IPs — kept in
// a small JSON file so that a restarted agent (even after SIGKILL) restores it before it
// prunes anything. A save is durable before it returns: a temp file written in full (short
// writes continued, the size checked), fsynced, renamed over the file, and the directory
// fsynced; any failure leaves the previous file as it was and throws StorageError.
//
// Loading checks every entry on its own with the rules the API applies (src/config/rules):
// a bad entry is reported and skipped, and never takes the valid ones with it. Skipped
// entries stay in the file (they were the user's, and may become valid again); only entries
// that cannot be IP strings at all are dropped.
import { existsSync, readFileSync, unlinkSync } from 'node:fs';
import { checkIp, OWNER_RE, RESERVED_OWNERS } from '../config/index.js';
import { FibkeeperError } from '../errors/index.js';
import { writeDurably } from './durable.js';
import {
  appendDurably,
  applyChange,
  cutJournal,
  formatJournalPieces,
  removeJournal,
  replayJournal,
  type JournalOp,
  type MutableState,
  type UndoStep,
} from './journal.js';

export type { MutableState } from './journal.js';
export { writeDurably } from './durable.js';

/** The state as the agent holds it: owner → IPs, and the external IPs (canonical where valid). */
export interface ControlState {
  readonly forwardable: ReadonlyMap<string, ReadonlySet<string>>;
  readonly extip: ReadonlySet<string>;
}

/** An entry of the state file that is not applied, and why. */
export interface SkippedEntry {
  /** "forwardable OWNER IP", "forwardable OWNER", or "extip IP". */
  entry: string;
  reason: string;
}

export function emptyState(): MutableState {
  return { forwardable: new Map(), extip: new Set() };
}

/**
 * Sets up to this size are written sorted (the file's diffs stay readable); larger ones in
 * the order their IPs were added, since sorting a million strings would hold the event loop
 * for a second on every save.
 */
export const SORTED_UP_TO = 4096;
/** IPs formatted per piece of a streamed save (a piece takes about a millisecond). */
const PIECE = 2048;

const ordered = (set: ReadonlySet<string>): Iterable<string> =>
  set.size <= SORTED_UP_TO ? [...set].sort() : set;

/**
 * The file's text in pieces of at most PIECE IPs: owners sorted, one IP per line. Joined,
 * the pieces are formatState's text; a save writes each piece as it is made, so that a save
 * of a million IPs never holds the event loop for more than a piece.
 */
export function* formatStatePieces(s: ControlState, seq?: number): Generator<string> {
  const list = (set: ReadonlySet<string>, indent: string): Generator<string> =>
    (function* () {
      if (set.size === 0) return yield '[]';
      let piece = '[';
      let n = 0;
      let first = true;
      for (const ip of ordered(set)) {
        piece += `${first ? '' : ','}\n${indent} ${JSON.stringify(ip)}`;
        first = false;
        if (++n === PIECE) {
          yield piece;
          piece = '';
          n = 0;
        }
      }
      yield `${piece}\n${indent}]`;
    })();
  const owners = [...s.forwardable.keys()].sort();
  const seqLine = seq === undefined ? '' : `\n "seq": ${seq},`;
  yield `{\n "version": 1,${seqLine}\n "forwardable": {`;
  for (let i = 0; i < owners.length; i++) {
    const o = owners[i]!;
    yield `${i > 0 ? ',' : ''}\n  ${JSON.stringify(o)}: `;
    yield* list(s.forwardable.get(o) ?? new Set(), '  ');
  }
  yield `${owners.length > 0 ? '\n ' : ''}},\n "extip": `;
  yield* list(s.extip, ' ');
  yield '\n}\n';
}

/** The file's text: owners sorted, IPs sorted up to SORTED_UP_TO, one IP per line. */
export function formatState(s: ControlState): string {
  return [...formatStatePieces(s)].join('');
}

export class StateFileError extends FibkeeperError {
  constructor(path: string, problem: string, options?: { cause?: unknown }) {
    super(
      `the state file ${path} ${problem}. It holds what the control API added; fix it or restore it from a backup. ` +
        'Moving it away starts the agent without it, and the agent then removes from the kernel what only that file held ' +
        '(neighbor entries of its forwardable IPs, its external IPs on the holder device)',
      { ...options, code: 'FIBKEEPER_ERR_CONFIG' },
    );
  }
}

/** The static rules on a state that the config also names (`forwardable.static`, `extip.static`). */
export interface StaticSets {
  forwardable: ReadonlySet<string>;
  extip: ReadonlySet<string>;
}

/**
 * Parses a state file's text. Throws StateFileError when it is not a state file at all;
 * otherwise returns every entry that is a string (valid or not: the file keeps them), the
 * applicable ones (`usable`) and the others with their reason.
 */
export function parseState(
  text: string,
  path: string,
  statics: StaticSets = { forwardable: new Set(), extip: new Set() },
): { state: MutableState; usable: ControlState; skipped: SkippedEntry[] } {
  const { state, dropped } = readStateDoc(text, path);
  const { usable, skipped } = usableOf(state, statics);
  return { state, usable, skipped: [...dropped, ...skipped] };
}

/**
 * A state file's content as it is (entries that are strings, valid or not), the `seq` of the
 * last journal change it holds (0: none), and the entries dropped for not being strings.
 */
export function readStateDoc(
  text: string,
  path: string,
): { state: MutableState; seq: number; dropped: SkippedEntry[] } {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new StateFileError(path, `is not valid JSON (${(err as Error).message})`, { cause: err });
  }
  const d = doc as { version?: unknown; seq?: unknown; forwardable?: unknown; extip?: unknown };
  if (
    typeof doc !== 'object' ||
    doc === null ||
    d.version !== 1 ||
    (d.seq !== undefined && typeof d.seq !== 'number') ||
    typeof d.forwardable !== 'object' ||
    d.forwardable === null ||
    Array.isArray(d.forwardable) ||
    !Array.isArray(d.extip)
  ) {
    throw new StateFileError(
      path,
      'has an unknown layout (want {"version": 1, "forwardable": {}, "extip": []})',
    );
  }
  const dropped: SkippedEntry[] = [];
  const strings = (list: unknown, where: string): Set<string> => {
    const out = new Set<string>();
    if (!Array.isArray(list)) {
      dropped.push({ entry: where, reason: 'not a list of IPs (dropped)' });
      return out;
    }
    for (const v of list as unknown[]) {
      if (typeof v === 'string') out.add(v);
      else
        dropped.push({ entry: `${where} ${JSON.stringify(v)}`, reason: 'not a string (dropped)' });
    }
    return out;
  };
  const forwardable = new Map<string, Set<string>>();
  for (const [owner, list] of Object.entries(d.forwardable as Record<string, unknown>)) {
    const ips = strings(list, `forwardable ${owner}`);
    if (ips.size > 0) forwardable.set(owner, ips);
  }
  const state: MutableState = { forwardable, extip: strings(d.extip, 'extip') };
  return { state, seq: (d.seq as number | undefined) ?? 0, dropped };
}

/**
 * The entries of a state that pass the static rules (canonical), and the others with the
 * reason: a malformed or reserved IP, a bad or reserved owner name, an IP that is both
 * forwardable and external (the external IP wins: it is an address of this node).
 */
export function usableOf(
  state: ControlState,
  statics: StaticSets,
): { usable: ControlState; skipped: SkippedEntry[] } {
  const skipped: SkippedEntry[] = [];
  const skip = (entry: string, reason: string) => skipped.push({ entry, reason });
  const valid = (raw: string, entry: string): string | undefined => {
    try {
      return checkIp(raw);
    } catch (err) {
      skip(entry, (err as Error).message);
      return undefined;
    }
  };
  const extip = new Set<string>();
  const allExtip = new Set<string>();
  for (const raw of state.extip) {
    const ip = valid(raw, `extip ${raw}`);
    if (ip === undefined) continue;
    allExtip.add(ip);
    if (statics.forwardable.has(ip)) {
      skip(
        `extip ${ip}`,
        'forwardable.static lists it; an IP is forwardable or external, never both',
      );
    } else extip.add(ip);
  }
  const forwardable = new Map<string, Set<string>>();
  for (const [owner, ips] of state.forwardable) {
    if (!OWNER_RE.test(owner)) {
      skip(`forwardable ${owner}`, 'not a valid owner name');
      continue;
    }
    const reserved = RESERVED_OWNERS.get(owner);
    if (reserved !== undefined) {
      skip(`forwardable ${owner}`, `owner "${owner}" is managed by the agent itself (${reserved})`);
      continue;
    }
    const usable = new Set<string>();
    for (const raw of ips) {
      const ip = valid(raw, `forwardable ${owner} ${raw}`);
      if (ip === undefined) continue;
      if (allExtip.has(ip) || statics.extip.has(ip)) {
        const where = allExtip.has(ip) ? 'in the state file' : 'extip.static';
        skip(
          `forwardable ${owner} ${ip}`,
          `also an external IP (${where}); an IP is forwardable or external, never both`,
        );
      } else usable.add(ip);
    }
    if (usable.size > 0) forwardable.set(owner, usable);
  }
  return { usable: { forwardable, extip }, skipped };
}

/** Default of StateStore's `journalFrom`: a state file this large saves through the journal. */
export const JOURNAL_FROM_BYTES = 1 << 20;

/**
 * The state file of one agent: what is durable, and how to make a new state durable. A
 * small state (under `journalFrom` bytes of file) is written in full at every save; a larger
 * one appends each save's changes to `<path>.journal` and is written in full only when the
 * journal has grown to a quarter of it (journal.ts).
 */
export class StateStore {
  #state: MutableState = emptyState();
  #skipped: SkippedEntry[] = [];
  /** The changes made to the draft since the last persist (record()). */
  #ops: JournalOp[] = [];
  /** The last change's number: in the snapshot or the journal (or lost with a failed save). */
  #seq = 0;
  #snapshotBytes = 0;
  #journalBytes = 0;
  /** A journal write failed and may have left a line: the next save writes a snapshot. */
  #snapshotNext = false;
  readonly #journalFrom: number;

  constructor(
    readonly path: string,
    opts: { journalFrom?: number } = {},
  ) {
    this.#journalFrom = opts.journalFrom ?? JOURNAL_FROM_BYTES;
  }

  get journalPath(): string {
    return `${this.path}.journal`;
  }

  /**
   * Reads the file and its journal (a missing one is an empty state), removes a temp file
   * left by a write that was killed and a journal line cut short by a crash. Throws
   * StateFileError for an unreadable or corrupt file; returns the applicable entries and the
   * skipped ones. The caller holds the state-file lock — or passes `repair: false` (`fibkeeper
   * config check`, maybe beside a running agent), and nothing on disk is changed.
   */
  load(
    statics?: StaticSets,
    opts: { repair?: boolean } = {},
  ): { usable: ControlState; skipped: SkippedEntry[] } {
    if (this.path === '') return { usable: emptyState(), skipped: [] };
    // `repair: false` (config check, beside a running agent): read only, change no file.
    const repair = opts.repair ?? true;
    // A temp file is what a write killed before its rename left: never the state.
    try {
      if (repair) unlinkSync(`${this.path}.tmp`);
    } catch {
      /* none (or not removable: the next save says why) */
    }
    const text = this.#read(this.path);
    const doc =
      text === undefined
        ? { state: emptyState(), seq: 0, dropped: [] }
        : readStateDoc(text, this.path);
    this.#snapshotBytes = text === undefined ? 0 : Buffer.byteLength(text);
    this.#seq = doc.seq;
    const journal = this.#read(this.journalPath);
    if (journal !== undefined) {
      try {
        const r = replayJournal(journal, doc.seq, doc.state);
        this.#seq = r.seq;
        this.#journalBytes = r.wholeBytes;
        const cut = r.wholeBytes !== Buffer.byteLength(journal);
        if (cut && repair) cutJournal(this.journalPath, r.wholeBytes);
      } catch (err) {
        throw new StateFileError(this.journalPath, `is corrupt (${(err as Error).message})`, {
          cause: err,
        });
      }
    }
    const { usable, skipped } = usableOf(doc.state, statics ?? noStatics());
    this.#state = doc.state;
    this.#skipped = [...doc.dropped, ...skipped];
    return { usable, skipped: this.#skipped };
  }

  #read(path: string): string | undefined {
    try {
      return readFileSync(path, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw new StateFileError(path, `cannot be read (${(err as Error).message})`, {
        cause: err,
      });
    }
  }

  /** The state as saved (skipped entries included). */
  get state(): ControlState {
    return this.#state;
  }

  /** Entries of the loaded file that are not applied. */
  get skipped(): readonly SkippedEntry[] {
    return this.#skipped;
  }

  /**
   * The state as saved, to be changed in place by the one writer (the control plane's queue)
   * through record(), which then calls persist() — or undoes its changes when persist throws.
   */
  get draft(): MutableState {
    return this.#state;
  }

  /** Applies a change to the draft and notes it for the next persist(); how to undo it. */
  record(op: JournalOp): UndoStep {
    this.#ops.push(op);
    return applyChange(op, this.#state);
  }

  /** Forgets the recorded changes (the caller has undone them). */
  discard(): void {
    this.#ops = [];
  }

  /**
   * Makes the draft durable: the recorded changes appended to the journal, or the whole
   * state written (streamed: see writeDurably). Throws StorageError on failure (the caller
   * undoes its changes).
   */
  async persist(): Promise<void> {
    const ops = this.#ops;
    this.#ops = [];
    if (this.path === '') return;
    if (
      this.#snapshotNext ||
      this.#snapshotBytes === 0 ||
      this.#snapshotBytes < this.#journalFrom
    ) {
      return this.#snapshot(this.#seq + ops.length);
    }
    const seq = this.#seq;
    // The numbers are used up even if the write fails: a line it may have left behind is
    // never taken for a later change (and the snapshot written next supersedes it).
    this.#seq += ops.length;
    try {
      this.#journalBytes = await appendDurably(
        this.journalPath,
        formatJournalPieces(seq, ops),
        this.#journalBytes,
      );
    } catch (err) {
      this.#snapshotNext = true;
      throw err;
    }
  }

  /** The journal is a quarter of the snapshot (or more): time for compact(). */
  get compactionDue(): boolean {
    return this.#journalBytes > Math.max(this.#journalFrom, this.#snapshotBytes / 4);
  }

  /** Writes the whole state (streamed) and removes the journal. Throws StorageError. */
  async compact(): Promise<void> {
    if (this.path !== '') await this.#snapshot(this.#seq);
  }

  /** Sizes for status and metrics: the state file and its journal, in bytes. */
  get sizes(): { stateFile: number; journal: number } {
    return { stateFile: this.#snapshotBytes, journal: this.#journalBytes };
  }

  async #snapshot(seq: number): Promise<void> {
    this.#snapshotBytes = await writeDurably(this.path, formatStatePieces(this.#state, seq));
    this.#seq = seq;
    this.#snapshotNext = false;
    if (this.#journalBytes > 0 || existsSync(this.journalPath)) {
      await removeJournal(this.journalPath);
      this.#journalBytes = 0;
    }
  }

  /** Makes `next` durable, then current. Throws StorageError and keeps the old one on failure. */
  async save(next: ControlState): Promise<void> {
    const copy: MutableState = { forwardable: new Map(), extip: new Set(next.extip) };
    for (const [o, ips] of next.forwardable) copy.forwardable.set(o, new Set(ips));
    const prev = this.#state;
    this.#state = copy;
    this.#ops = [];
    try {
      if (this.path !== '') await this.#snapshot(this.#seq + 1);
    } catch (err) {
      this.#state = prev;
      throw err;
    }
  }
}

const noStatics = (): StaticSets => ({ forwardable: new Set(), extip: new Set() });
