// The state file's journal (`<stateFile>.journal`): once the state file is large, a save
// appends the batch's changes to the journal — one JSON line per change, written in full and
// fsynced before the batch is acknowledged — instead of rewriting every IP. The state is the
// state file (the snapshot, with the sequence number of the last change it holds, `seq`)
// plus the journal's lines with a higher `seq`, replayed in order. Once the journal has
// grown to a quarter of the snapshot, the snapshot is written again (streamed, off the event
// loop: writeDurably) and the journal removed. A crash at any point leaves a snapshot and a
// journal whose replay gives every acknowledged change: a line cut short by the crash was
// never acknowledged and is dropped at the next start; lines the new snapshot already holds
// are skipped by their `seq`.
//
// A change's effect on the state (applyChange) is defined here once: the control plane
// applies it to its draft, the replay to the loaded state.
import { constants, truncateSync } from 'node:fs';
import { open, unlink } from 'node:fs/promises';
import { StorageError } from '../errors/index.js';

/** A state the control plane changes in place (StateStore.draft). */
export interface MutableState {
  readonly forwardable: Map<string, Set<string>>;
  readonly extip: Set<string>;
}

/** One change as the journal (and the control plane's draft) takes it: canonical IPs. */
export interface JournalOp {
  op: 'forwardable.add' | 'forwardable.del' | 'forwardable.set' | 'extip.add' | 'extip.del';
  /** The owner of a forwardable change. */
  owner?: string;
  ips: readonly string[];
}

const OPS = new Set<string>([
  'forwardable.add',
  'forwardable.del',
  'forwardable.set',
  'extip.add',
  'extip.del',
]);

/**
 * How to take a change back: the IPs it added and removed (not those that were there or
 * absent already), or the set it replaced. O(change), never a copy of the state.
 */
export type UndoStep =
  | { kind: 'fw'; owner: string; added: string[]; removed: string[] }
  | { kind: 'fwSet'; owner: string; prev: Set<string> | undefined }
  | { kind: 'ext'; added: string[]; removed: string[] };

/** What a change does to a state; returns how to take it back. */
export function applyChange(c: JournalOp, s: MutableState): UndoStep {
  const owner = c.owner ?? '';
  switch (c.op) {
    case 'forwardable.add': {
      const set = s.forwardable.get(owner) ?? new Set<string>();
      const added: string[] = [];
      for (const ip of c.ips) if (!set.has(ip)) (set.add(ip), added.push(ip));
      if (set.size > 0) s.forwardable.set(owner, set);
      return { kind: 'fw', owner, added, removed: [] };
    }
    case 'forwardable.del': {
      const set = s.forwardable.get(owner);
      const removed: string[] = [];
      if (set) for (const ip of c.ips) if (set.delete(ip)) removed.push(ip);
      if (set?.size === 0) s.forwardable.delete(owner);
      return { kind: 'fw', owner, added: [], removed };
    }
    case 'forwardable.set': {
      const prev = s.forwardable.get(owner);
      if (c.ips.length === 0) s.forwardable.delete(owner);
      else s.forwardable.set(owner, new Set(c.ips));
      return { kind: 'fwSet', owner, prev };
    }
    case 'extip.add': {
      const added: string[] = [];
      for (const ip of c.ips) if (!s.extip.has(ip)) (s.extip.add(ip), added.push(ip));
      return { kind: 'ext', added, removed: [] };
    }
    case 'extip.del': {
      const removed: string[] = [];
      for (const ip of c.ips) if (s.extip.delete(ip)) removed.push(ip);
      return { kind: 'ext', added: [], removed };
    }
  }
}

/** Takes back `steps` (applied in this order) from a state, last first. */
export function undoChanges(steps: readonly UndoStep[], s: MutableState): void {
  for (let i = steps.length - 1; i >= 0; i--) {
    const u = steps[i]!;
    if (u.kind === 'fwSet') {
      if (u.prev === undefined) s.forwardable.delete(u.owner);
      else s.forwardable.set(u.owner, u.prev);
      continue;
    }
    const set =
      u.kind === 'ext'
        ? s.extip
        : (s.forwardable.get(u.owner) ??
          s.forwardable.set(u.owner, new Set<string>()).get(u.owner)!);
    for (const ip of u.added) set.delete(ip);
    for (const ip of u.removed) set.add(ip);
    if (u.kind === 'fw' && set.size === 0) s.forwardable.delete(u.owner);
  }
}

/** IPs per piece of a line (a piece takes about a millisecond to make). */
const PIECE = 2048;

/** The journal lines of `ops`, numbered from `seq + 1`, in pieces of at most PIECE IPs. */
export function* formatJournalPieces(seq: number, ops: readonly JournalOp[]): Generator<string> {
  for (const [i, o] of ops.entries()) {
    const owner = o.owner === undefined ? '' : `,"owner":${JSON.stringify(o.owner)}`;
    let piece = `{"seq":${seq + i + 1},"op":"${o.op}"${owner},"ips":[`;
    for (let k = 0; k < o.ips.length; k++) {
      piece += (k > 0 ? ',' : '') + JSON.stringify(o.ips[k]);
      if ((k + 1) % PIECE === 0) {
        yield piece;
        piece = '';
      }
    }
    yield `${piece}]}\n`;
  }
}

/** A complete journal line that is not one: the file is corrupt (not a cut-short write). */
export class JournalLineError extends Error {}

/**
 * Replays a journal's text onto `state`: every complete line with a `seq` above `after`, in
 * order. Returns the last `seq` and how many bytes are whole lines (a last line without its
 * line end was cut short by a crash: never acknowledged, not applied). Throws
 * JournalLineError naming the line for a complete line that is not a change.
 */
export function replayJournal(
  text: string,
  after: number,
  state: MutableState,
): { seq: number; wholeBytes: number; applied: number } {
  let seq = after;
  let applied = 0;
  let at = 0;
  let lineNo = 0;
  for (let nl = text.indexOf('\n'); nl >= 0; nl = text.indexOf('\n', at)) {
    lineNo++;
    const line = text.slice(at, nl);
    at = nl + 1;
    let o: { seq?: unknown; op?: unknown; owner?: unknown; ips?: unknown };
    try {
      o = JSON.parse(line) as typeof o;
    } catch (err) {
      throw new JournalLineError(`line ${lineNo} is not JSON (${(err as Error).message})`);
    }
    const ok =
      typeof o === 'object' &&
      o !== null &&
      typeof o.seq === 'number' &&
      typeof o.op === 'string' &&
      OPS.has(o.op) &&
      (o.owner === undefined || typeof o.owner === 'string') &&
      (o.op.startsWith('extip.') || typeof o.owner === 'string') &&
      Array.isArray(o.ips) &&
      (o.ips as unknown[]).every((ip) => typeof ip === 'string');
    if (!ok) throw new JournalLineError(`line ${lineNo} is not a change`);
    if ((o.seq as number) <= seq) continue;
    seq = o.seq as number;
    applyChange(o as JournalOp, state);
    applied++;
  }
  return { seq, wholeBytes: Buffer.byteLength(text.slice(0, at)), applied };
}

/** Drops a cut-short last line (never acknowledged) so that the next append starts a line. */
export function cutJournal(path: string, wholeBytes: number): void {
  truncateSync(path, wholeBytes);
}

/**
 * Appends `pieces` to the journal at `path` (created if absent) and fsyncs it; returns its
 * new size. On failure the journal is cut back to `size` (what it held before) and
 * StorageError names the step; `cutBack` says whether that worked.
 */
export async function appendDurably(
  path: string,
  pieces: Iterable<string>,
  size: number,
): Promise<number> {
  let step = `open ${path}`;
  let at = size;
  const fh = await open(path, constants.O_WRONLY | constants.O_CREAT, 0o600).catch((err) => {
    throw storageError(path, step, err, true);
  });
  try {
    step = `write ${path}`;
    for (const piece of pieces) {
      const data = Buffer.from(piece, 'utf8');
      for (let off = 0; off < data.length;) {
        const { bytesWritten } = await fh.write(data, off, data.length - off, at);
        if (bytesWritten <= 0) throw new Error(`wrote nothing at byte ${at}`);
        off += bytesWritten;
        at += bytesWritten;
      }
    }
    step = `fsync ${path}`;
    await fh.datasync();
    return at;
  } catch (err) {
    const cut = await fh.truncate(size).then(
      () => fh.datasync().then(() => true),
      () => false,
    );
    throw storageError(path, step, err, cut);
  } finally {
    await fh.close();
  }
}

/** Removes the journal (its changes are in the snapshot now); a missing one is no error. */
export async function removeJournal(path: string): Promise<void> {
  await unlink(path).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'ENOENT') throw storageError(path, `remove ${path}`, err, false);
  });
}

function storageError(path: string, step: string, err: unknown, unchanged: boolean): StorageError {
  const code = (err as NodeJS.ErrnoException).code;
  const why =
    code === 'ENOSPC' || code === 'EDQUOT'
      ? `${code}: no space left on the device that holds it`
      : code === 'EROFS'
        ? 'EROFS: the file system is read-only'
        : (err as Error).message;
  return new StorageError(
    `the state file's journal ${path} could not be saved (${step}: ${why})${unchanged ? '; nothing was changed' : '; the change may or may not survive a crash'}`,
    { cause: err },
  );
}
