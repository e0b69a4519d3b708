// Pure decisions of the loader: which links get XDP, which counter slot a device gets, and
// what to do about the program found on a device. No I/O here; forwarder.ts acts on them.
import { matchGlob } from '../neighbor/index.js';
import { ARPHRD_ETHER, IFF_LOOPBACK, IFF_UP, type Link } from '../netlink/index.js';
import { FK_MAX_SLOTS, FK_SLOT_OTHER } from './layout.js';

export interface SelectionConfig {
  /** Device names or globs (* and ?). */
  devices: readonly string[];
  /** fibkeeper's external-IP holder device: never selected. */
  holderName: string;
}

export interface DeviceVerdict {
  ifindex: number;
  name: string;
  /** The Ethernet address, undefined when the device has none. */
  mac: string | undefined;
  selected: boolean;
  /** Why not, when not selected. */
  reason: string | undefined;
  /**
   * A device that is not selected only for now (down) keeps its record, slot and counters;
   * others lose theirs.
   */
  keepRecord: boolean;
  /**
   * Set when the device matches and is eligible but is left without a program on purpose (an
   * upper device of a selected device): why.
   */
  skipped?: string;
}

function zeroMac(mac: string | undefined): boolean {
  return mac === undefined || /^[0:]*$/.test(mac);
}

/**
 * A link gets the XDP program when its name matches `devices`, it is not loopback, it is an
 * Ethernet device with a non-zero address, it is up, it is not the port of a bridge, bond,
 * team or VRF (the kernel bridges or bonds those frames, or routes them in another table:
 * never what the program would do) and it is not the holder device. A device that goes down
 * is detached (so another program can take its hook meanwhile) but keeps its record.
 */
export function selectDevice(link: Link, sel: SelectionConfig): DeviceVerdict {
  const name = link.name ?? `if${link.index}`;
  const mac = link.type === ARPHRD_ETHER && !zeroMac(link.address) ? link.address : undefined;
  let reason: string | undefined;
  if (name === sel.holderName) reason = 'fibkeeper holder device';
  else if (!sel.devices.some((g) => matchGlob(g, name))) reason = 'not in the devices option';
  else if (link.flags & IFF_LOOPBACK) reason = 'loopback';
  else if (link.type !== ARPHRD_ETHER) reason = 'not an Ethernet device';
  else if (mac === undefined) reason = 'no Ethernet address';
  else if (link.master) {
    reason = `port of ifindex ${link.master} (a bridge, bond, team or VRF port: the kernel does not route its frames itself)`;
  } else if (!(link.flags & IFF_UP)) reason = 'down';
  return {
    ifindex: link.index,
    name,
    mac,
    selected: reason === undefined,
    reason,
    keepRecord: reason === undefined || reason === 'down',
  };
}

/**
 * Kinds of device stacked on a lower device in the kernel's sense (netdev_upper_dev_link) and
 * naming it in IFLA_LINK: while such an upper device has an XDP program, the kernel refuses one
 * on its lower device (EEXIST, "upper device already has a program").
 */
export const UPPER_KINDS: ReadonlySet<string> = new Set([
  'macvlan',
  'macvtap',
  'ipvlan',
  'ipvtap',
  'vlan',
  'macsec',
]);

/** The lower device of `l` in this namespace, when `l` is an upper device of one. */
export function lowerOf(l: Link): number | undefined {
  const kind = l.info?.kind;
  if (kind === undefined || !UPPER_KINDS.has(kind)) return undefined;
  if (l.linkNetnsId !== undefined || l.link === undefined || l.link === l.index) return undefined;
  return l.link;
}

/**
 * fibkeeper prefers the lower device: an upper device (macvlan, ipvlan, vlan, ...) whose lower
 * device is selected too gets no program, since the kernel would then refuse the lower's (and a
 * physical NIC's native XDP sees the upper's frames first anyway). Such verdicts are turned to
 * not selected, with `skipped` saying why; the others are returned as they are.
 */
export function skipStackedUppers(
  verdicts: readonly DeviceVerdict[],
  links: readonly Link[],
): DeviceVerdict[] {
  const byIfindex = new Map(verdicts.map((v) => [v.ifindex, v]));
  const linkOf = new Map(links.map((l) => [l.index, l]));
  return verdicts.map((v) => {
    const l = linkOf.get(v.ifindex);
    const lower = l === undefined ? undefined : byIfindex.get(lowerOf(l) ?? 0);
    if (!v.selected || lower === undefined || !lower.selected) return v;
    const why = `upper device of ${lower.name} (${l?.info?.kind}): ${lower.name} is selected and gets the program (the kernel refuses one on a device while an upper device of it has one)`;
    return { ...v, selected: false, keepRecord: false, reason: why, skipped: why };
  });
}

/** A slot in use: by a device that exists now (present) or one that went away. */
export interface SlotUse {
  name: string;
  slot: number;
  present: boolean;
}

/**
 * The counter slot for a new device: the lowest free slot above FK_SLOT_OTHER; else the slot
 * of a device that is gone (`evict` names it: its record must go and its counters be
 * zeroed); else FK_SLOT_OTHER, shared by every device beyond FK_MAX_SLOTS - 1.
 */
export function pickSlot(
  used: readonly SlotUse[],
  max: number = FK_MAX_SLOTS,
): { slot: number; evict?: string } {
  const taken = new Set(used.map((u) => u.slot));
  for (let s = FK_SLOT_OTHER + 1; s < max; s++) if (!taken.has(s)) return { slot: s };
  const gone = used
    .filter((u) => !u.present && u.slot !== FK_SLOT_OTHER)
    .sort((a, b) => a.slot - b.slot)[0];
  if (gone !== undefined) return { slot: gone.slot, evict: gone.name };
  return { slot: FK_SLOT_OTHER };
}

/** What sits on a selected device's XDP hook, as far as the loader can tell. */
export interface HookState {
  /** Every attached program id (native, generic, offload), empty when none. */
  progIds: readonly number[];
  /** The record (by device name) whose pinned link holds this device, if any. */
  ownerRecord: string | undefined;
}

export type AttachDecision =
  /** Ours already, under this device's own record: keep (upgrade if stale). */
  | { kind: 'keep' }
  /** Ours, but pinned under another name (the device was renamed): move it over. */
  | { kind: 'move'; from: string }
  /** Nothing attached: attach ours. */
  | { kind: 'attach' }
  /** Someone else's program: leave it (report), or remove it first with force. */
  | { kind: 'foreign'; progIds: readonly number[]; force: boolean };

export function decideAttach(name: string, hook: HookState, force: boolean): AttachDecision {
  if (hook.ownerRecord !== undefined) {
    return hook.ownerRecord === name ? { kind: 'keep' } : { kind: 'move', from: hook.ownerRecord };
  }
  if (hook.progIds.length === 0) return { kind: 'attach' };
  return { kind: 'foreign', progIds: hook.progIds, force };
}
