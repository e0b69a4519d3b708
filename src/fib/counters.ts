// The forwarder's counters as `fibkeeper status` and the metrics show them: per device slot
// (and ":other"), summed over CPUs, with the redirect errors the tracer counted.
import { zeroRedirectErrors } from './layout-state.js';
import { FK_SLOT_OTHER } from './layout.js';
import type { DatapathOps } from './ops.js';
import { OTHER_DEVICE, type XdpDeviceCounters } from './types.js';

/** Reads every slot now; `ifindexOf` names the device a slot's record belongs to (0: gone). */
export function readCounters(
  ops: DatapathOps,
  ifindexOf: (name: string) => number,
): XdpDeviceCounters[] {
  const out: XdpDeviceCounters[] = [];
  const rerr = ops.readRedirectErrors();
  const errorsOf = (ifindex: number) => ({
    ...zeroRedirectErrors(),
    ...(ifindex > 0 ? rerr?.get(ifindex) : undefined),
  });
  for (const r of ops.records()) {
    if (r.slot === FK_SLOT_OTHER) continue;
    const ifindex = ifindexOf(r.name);
    out.push({
      device: r.name,
      ifindex,
      slot: r.slot,
      ...ops.readSlot(r.slot),
      redirectErrors: errorsOf(ifindex),
    });
  }
  out.push({
    device: OTHER_DEVICE,
    ifindex: 0,
    slot: FK_SLOT_OTHER,
    ...ops.readSlot(FK_SLOT_OTHER),
    redirectErrors: zeroRedirectErrors(),
  });
  return out;
}
