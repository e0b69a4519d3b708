// Link calls, each the equivalent of an `ip link` command.
import { closeSync, openSync } from 'node:fs';
import { InvalidArgumentError } from '../errors/index.js';
import { stripUndefined } from '../util/index.js';
import type { Client } from './client.js';
import {
  AF_UNSPEC,
  formatLink,
  IFF_UP,
  type Link,
  type LinkInfo,
  NLM_F_CREATE,
  NLM_F_EXCL,
  NLM_F_REQUEST,
  parseLink,
  RTEXT_FILTER_SKIP_STATS,
  RTEXT_FILTER_VF,
  RTM_DELLINK,
  RTM_GETLINK,
  RTM_NEWLINK,
} from './codec/index.js';

/** A device named by ifindex or by name. */
export type Dev = number | string;

function devFields(dev: Dev): Pick<Link, 'index' | 'name'> {
  if (typeof dev === 'number') {
    if (!Number.isInteger(dev) || dev <= 0) throw new InvalidArgumentError(`bad ifindex ${dev}`);
    return { index: dev };
  }
  if (dev.length === 0 || dev.length > 15)
    throw new InvalidArgumentError(`bad device name ${JSON.stringify(dev)}`);
  return { index: 0, name: dev };
}

function blank(dev?: Dev): Link {
  return {
    family: AF_UNSPEC,
    type: 0,
    index: 0,
    flags: 0,
    change: 0,
    ...(dev === undefined ? {} : devFields(dev)),
  };
}

/** linkList — like `ip link show`: every link of the namespace. */
export function linkList(c: Client): Promise<Link[]> {
  return c.dump(
    (w) =>
      formatLink(w, RTM_GETLINK, NLM_F_REQUEST, { ...blank(), extMask: RTEXT_FILTER_SKIP_STATS }),
    parseLink,
    'linkList',
  );
}

/** linkGet — like `ip link show dev DEV`. Fails with NetlinkError ENODEV when absent. */
export function linkGet(c: Client, dev: Dev): Promise<Link> {
  return c.get(
    (w) =>
      formatLink(w, RTM_GETLINK, NLM_F_REQUEST, {
        ...blank(dev),
        extMask: RTEXT_FILTER_VF | RTEXT_FILTER_SKIP_STATS,
      }),
    parseLink,
    `linkGet ${dev}`,
  );
}

/** What linkAdd creates. */
export interface LinkAddSpec {
  name: string;
  /** "dummy", "bridge", "veth", "ifb", or any kind that needs no kind data. */
  kind: string;
  mtu?: number;
  address?: string;
  /** ifindex of a bridge to enslave the new link to. */
  master?: number;
  txqlen?: number;
  /** Bring the link up on creation. */
  up?: boolean;
  /** veth only: the peer's name, and optionally its namespace (name under /run/netns or a path). */
  peer?: { name: string; netns?: string; address?: string; mtu?: number };
}

/**
 * linkAdd — like `ip link add NAME [address MAC] [mtu N] [master M] [up] type KIND
 * [peer name PEER [netns NS]]`. Fails with EEXIST when the name is taken.
 */
export async function linkAdd(c: Client, spec: LinkAddSpec): Promise<void> {
  const info: LinkInfo = { kind: spec.kind };
  let fd: number | undefined;
  try {
    if (spec.peer) {
      if (spec.kind !== 'veth') throw new InvalidArgumentError('linkAdd: peer is for veth only');
      const peer: Link = {
        ...blank(spec.peer.name),
        mtu: spec.peer.mtu,
        address: spec.peer.address,
      };
      if (spec.peer.netns !== undefined) {
        const path = spec.peer.netns.startsWith('/')
          ? spec.peer.netns
          : `/run/netns/${spec.peer.netns}`;
        fd = openSync(path, 'r');
        peer.netnsFd = fd;
      }
      info.peer = stripUndefined(peer);
    }
    const link: Link = stripUndefined({
      ...blank(spec.name),
      flags: spec.up ? IFF_UP : 0,
      change: spec.up ? IFF_UP : 0,
      mtu: spec.mtu,
      address: spec.address,
      master: spec.master,
      txqlen: spec.txqlen,
      info,
    });
    await c.ack(
      (w) => formatLink(w, RTM_NEWLINK, NLM_F_REQUEST | NLM_F_CREATE | NLM_F_EXCL, link),
      `linkAdd ${spec.name} type ${spec.kind}`,
    );
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** linkDel — like `ip link del DEV`. */
export function linkDel(c: Client, dev: Dev): Promise<void> {
  return c.ack((w) => formatLink(w, RTM_DELLINK, NLM_F_REQUEST, blank(dev)), `linkDel ${dev}`);
}

/** What linkSet changes; absent fields stay as they are. */
export interface LinkChanges {
  up?: boolean;
  mtu?: number;
  address?: string;
  /** ifindex of the new master, 0 to release from the current one. */
  master?: number;
  /** Rename. */
  name?: string;
  txqlen?: number;
}

/** linkSet — like `ip link set DEV [up|down] [mtu N] [address MAC] [master M|nomaster] [name NEW]`. */
export function linkSet(c: Client, dev: Dev, changes: LinkChanges): Promise<void> {
  const base = blank(dev);
  if (changes.name !== undefined && base.name !== undefined) {
    throw new InvalidArgumentError('linkSet: renaming needs the device by ifindex');
  }
  const link: Link = stripUndefined({
    ...base,
    name: changes.name ?? base.name,
    flags: changes.up ? IFF_UP : 0,
    change: changes.up === undefined ? 0 : IFF_UP,
    mtu: changes.mtu,
    address: changes.address,
    master: changes.master,
    txqlen: changes.txqlen,
  });
  return c.ack((w) => formatLink(w, RTM_NEWLINK, NLM_F_REQUEST, link), `linkSet ${dev}`);
}
