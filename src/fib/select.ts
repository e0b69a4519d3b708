// Pure decisions of the loader: which links get XDP, which counter slot a device gets, and
// what to do about the program found on a device. No I/O here; forwarder.ts acts on them.
import {
  DOWN,
  skipStackedUppers as skipUppers,
  xdpVerdict,
  type DeviceSelection,
  type Link,
} from '../netlink/index.js';
import { FK_MAX_SLOTS, FK_SLOT_OTHER } from './layout.js';

export { lowerOf, UPPER_KINDS } from '../netlink/index.js';

/** The `devices` option and the holder device (netlink's DeviceSelection). */
export type SelectionConfig = DeviceSelection;

export interface DeviceVerdict {
  ifindex: number;
  name: string;
  /** The hardware (Ethernet) address, undefined when the device has none. */
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

/**
 * The one device verdict with XDP's extras (netlink/verdict.ts: holder, glob, loopback,
 * hardware address, not a bridge/bond/team port, up; then Ethernet, no master at all). A
 * device that goes down is detached (so another program can take its hook meanwhile) but
 * keeps its record.
 */
export function selectDevice(link: Link, sel: SelectionConfig): DeviceVerdict {
  const v = xdpVerdict(link, sel);
  return { ...v, keepRecord: v.selected || v.reason === DOWN };
}

/**
 * XDP prefers the lower device (netlink's skipStackedUppers): an upper device whose lower
 * device is selected too is turned to not selected, `skipped` saying why.
 */
export function skipStackedUppers(
  verdicts: readonly DeviceVerdict[],
  links: readonly Link[],
): DeviceVerdict[] {
  return skipUppers(verdicts, links, (v, why) => ({
    ...v,
    selected: false,
    keepRecord: false,
    reason: why,
    skipped: why,
  }));
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
