// Writing a file durably: a temp file written in full (short writes continued, the size
// checked), fsynced, renamed over the file, the directory fsynced. The state file's snapshot
// is written so (state.ts); its journal is appended to (journal.ts).
import { constants, mkdirSync } from 'node:fs';
import { open, rename, unlink } from 'node:fs/promises';
import { dirname } from 'node:path';
import { StorageError } from '../errors/index.js';

const DIR_FSYNC_UNSUPPORTED = new Set(['EINVAL', 'ENOTSUP', 'EOPNOTSUPP']);

/**
 * Writes `text` (or the pieces of an iterable, each written as it is made: the event loop
 * runs between them) to `path` durably: `path.tmp` written in full, fsynced, renamed over
 * `path`, the directory fsynced. On any failure the temp file is removed, `path` keeps its
 * previous content, and StorageError names the step and the errno.
 */
export async function writeDurably(path: string, text: string | Iterable<string>): Promise<number> {
  const tmp = `${path}.tmp`;
  let step = `create ${tmp}`;
  let renamed = false;
  let bytes = 0;
  try {
    mkdirSync(dirname(path), { recursive: true, mode: 0o750 });
    const fh = await open(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC, 0o600);
    try {
      step = `write ${tmp}`;
      let at = 0;
      for (const piece of typeof text === 'string' ? [text] : text) {
        const data = Buffer.from(piece, 'utf8');
        for (let off = 0; off < data.length;) {
          const { bytesWritten } = await fh.write(data, off, data.length - off, at + off);
          if (bytesWritten <= 0) throw new Error(`wrote nothing at byte ${at + off}`);
          off += bytesWritten;
        }
        at += data.length;
      }
      step = `fsync ${tmp}`;
      await fh.sync();
      const { size } = await fh.stat();
      if (size !== at) throw new Error(`holds ${size} bytes, not ${at}`);
      bytes = at;
    } finally {
      await fh.close();
    }
    step = `rename ${tmp} to ${path}`;
    await rename(tmp, path);
    renamed = true;
    step = `fsync the directory ${dirname(path)}`;
    const dir = await open(dirname(path), constants.O_RDONLY);
    try {
      await dir.sync().catch((err: NodeJS.ErrnoException) => {
        if (!DIR_FSYNC_UNSUPPORTED.has(err.code ?? '')) throw err;
      });
    } finally {
      await dir.close();
    }
    return bytes;
  } catch (err) {
    if (!renamed) await unlink(tmp).catch(() => undefined);
    const code = (err as NodeJS.ErrnoException).code;
    const why =
      code === 'ENOSPC' || code === 'EDQUOT'
        ? `${code}: no space left on the device that holds it`
        : code === 'EROFS'
          ? 'EROFS: the file system is read-only'
          : (err as Error).message;
    throw new StorageError(
      `the state file ${path} could not be saved (${step}: ${why})${renamed ? '; the new content may or may not survive a crash' : '; nothing was changed'}`,
      { cause: err },
    );
  }
}
