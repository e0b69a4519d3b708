// `fibkeeper xdp detach` without a running agent: everything the agent of a namespace pinned
// is found under <pinDir>/ns<inode>/; its links are detached and the directory unpinned.
import { existsSync } from 'node:fs';
import { describeError } from '../errors/index.js';
import type { Logger } from '../log/index.js';
import { BpfLink, isBpffs } from '../native/index.js';
import { devPaths, pinPaths, pinnedDevices, unpin } from './pins.js';

export interface DetachPinnedParams {
  /** The agent's namespace (name under /run/netns or a path); default our own. */
  netns?: string;
  /** The agent's xdp.pinDir. */
  pinDir: string;
  log: Logger;
}

/**
 * Detaches every XDP link fibkeeper pinned for `netns` and unpins all of it (maps included).
 * Only links pinned by fibkeeper are touched, so a foreign program is never detached. Returns
 * the devices whose link was detached. Nothing pinned: returns [] (not an error).
 */
export function detachPinned(p: DetachPinnedParams): string[] {
  if (!existsSync(p.pinDir) || !isBpffs(p.pinDir)) return [];
  const paths = pinPaths(p.pinDir, p.netns);
  if (!existsSync(paths.root)) return [];
  const detached: string[] = [];
  for (const name of pinnedDevices(paths)) {
    const path = devPaths(paths, name).link;
    if (!existsSync(path)) continue;
    const link = BpfLink.fromPinned(path);
    try {
      const attached = (link.info().ifindex ?? 0) !== 0;
      if (attached) {
        link.detach();
        detached.push(name);
      }
    } catch (err) {
      p.log.warn({ device: name, err: describeError(err) }, 'xdp detach: link');
    } finally {
      link.close();
    }
  }
  unpin(paths.root);
  p.log.info({ devices: detached, pins: paths.root }, 'xdp: detached and unpinned');
  return detached;
}
