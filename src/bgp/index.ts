// BGP announcement of external IPs: the agent drives a BIRD 2 daemon (Debian's bird2) that
// it starts as its child in the managed namespace and that the kernel sends SIGTERM when the
// agent dies (setpriv --pdeathsig TERM: BIRD closes with a Cease notification); the IPs the node holds become static /32 and /128 routes
// exported to every peer, with BFD towards each peer that asks for it. docs/decisions.md
// says why BIRD and how the routes are tied to the agent's life. This file is the
// subsystem's whole public surface.
//
//   const s = new BgpSpeaker({ config: cfg.bgp, peers, held: () => ips, clock, log });
//   await s.start();        // daemon up, the IPs held now announced
//   await s.sync();         // after the held set changed: configure, applied
//   await s.status();       // sessions per peer, announced IPs, last error
//   await s.stop();         // SIGTERM: the peers withdraw at once
export {
  BgpSpeaker,
  type BgpSpeakerParams,
  type BgpStatus,
  type BgpPeerStatus,
  type SpeakerDaemon,
} from './speaker.js';
export { BirdDaemon, type BirdDaemonParams } from './daemon.js';
export { birdConf, peerProtocol, type BirdConfInput } from './bird-conf.js';
export {
  BirdControl,
  BirdControlError,
  parseProtocols,
  type BirdProtocolState,
} from './control.js';
export { registerBgpMetrics, type BgpMetrics } from './metrics.js';
