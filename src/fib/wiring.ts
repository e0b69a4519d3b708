// The XDP forwarder's wiring list: every part, who owns what, who writes the kernel, which
// feed it reads. forwarder.ts is the facade (start, stop, passes, reads); it builds its parts
// here and runs one pass at a time over them.
//
//   Datapath (datapath.ts, datapath-maps.ts; DatapathOps in ops.ts)  owns the pins, the
//       program instances, their links and the shared maps; the only writer of the kernel's
//       BPF state (libbpf, through the addon). Tests give a fake DatapathOps instead.
//   AttachPass (attach-pass.ts, select.ts)  decides which device gets the program (the
//       device feed's links, xdp_features) and attaches, replaces or detaches through ops.
//   MirrorWriter (kwatch.ts, kstate.ts)  writes what the program must know of the kernel
//       (addresses, local and multipath routes, rp_filter, hash policies, the egress
//       reasons) into the maps through ops; reads the sysctls itself.
//   RouteMirror (kroutes.ts)  the route facts, kept from the shared RouteFeed's dumps and
//       events; pure, writes nothing.
//   ForwarderInputs (forwarder-inputs.ts)  reads the DeviceFeed, the RouteFeed (into the
//       RouteMirror), netconf events, the PolicyWatcher (policy-watch.ts: nftables, tc and
//       xfrm events, iptables and tcx by poll), and runs the clock timers; writes nothing.
//   XdpFeatures (xdp-features.ts)  asks genetlink which devices take redirected frames.
//   Tracer, Watch (tracer.ts, watch.ts)  the redirect-error counter and the watch timer
//       programs, loaded by the Datapath.
//   metrics.ts, counters.ts  read the counters per slot; write nothing.
import type { Logger } from '../log/index.js';
import { AttachPass } from './attach-pass.js';
import { Datapath } from './datapath.js';
import { defaultObjectPath } from './instance.js';
import { RouteMirror } from './kroutes.js';
import { MirrorWriter } from './kwatch.js';
import type { DatapathOps } from './ops.js';
import type { XdpForwarderConfig } from './types.js';

/** The parts a forwarder runs its passes over. */
export interface ForwarderParts {
  ops: DatapathOps;
  attach: AttachPass;
  mirror: MirrorWriter;
  routes: RouteMirror;
}

/**
 * The forwarder's parts: `ops` when given (tests), else the Datapath over libbpf. `cfg` is the
 * forwarder's own copy (a reconfigure changes it in place; the attach pass reads it).
 */
export function forwarderParts(p: {
  netns: string | undefined;
  objectPath?: string;
  ops?: DatapathOps;
  cfg: XdpForwarderConfig;
  log: Logger;
}): ForwarderParts {
  const ops =
    p.ops ??
    new Datapath({
      objectPath: p.objectPath ?? defaultObjectPath(),
      netns: p.netns,
      pinDir: p.cfg.pinDir,
      log: p.log,
    });
  return {
    ops,
    attach: new AttachPass(ops, p.cfg, p.log),
    mirror: new MirrorWriter(ops, p.netns, p.log),
    routes: new RouteMirror(),
  };
}
