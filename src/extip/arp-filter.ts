// Which ARP frames the ARP listener (linkio.ts) has to decode. On a busy segment most ARP is
// about other hosts: when the node's kernel resolves or re-probes 100,000 neighbors, as many
// replies come back through the listener, and decoding each (an object, two MACs and two IPs
// as text) was a peak of its own in the agent's memory (docs/neighbor.md, "The fifth pass").
// A frame is looked at through its two IPs first; only what may concern us is decoded:
//   - any frame whose sender IP we hold or are probing for (a conflict, a defended address);
//   - a request whose target IP we are probing for (RFC 5227: another host's probe), or that
//     asks for an IP we hold while we answer ARP.
// Anything but plain Ethernet + IPv4 ARP (VLAN tags, another hardware type, truncated) is
// decoded as before, so the listener still sees and judges it.
import { formatV4Number } from '../ipaddr/index.js';
import { u16be, u32be } from '../util/index.js';
import { ARPOP_REQUEST } from './frames.js';

export interface ArpInterest {
  /** An external IP we hold. */
  owns(ip: string): boolean;
  /** An IP under duplicate address detection. */
  probing(ip: string): boolean;
  /** We answer ARP requests for what we hold. */
  respondArp: boolean;
}

const ETH_P_ARP = 0x0806;
/** Ethernet header (14) + the fixed ARP header (8) + two 6-byte MACs and two IPv4 addresses. */
const ARP_FRAME = 42;

/** False when the frame is plain IPv4 ARP about neither our IPs nor our probes. */
export function arpMayConcern(f: Uint8Array, who: ArpInterest): boolean {
  if (f.length < ARP_FRAME || u16be(f, 12) !== ETH_P_ARP) return true;
  // hardware Ethernet (1), protocol IPv4 (0x0800), address lengths 6 and 4
  if (u16be(f, 14) !== 1 || u16be(f, 16) !== 0x0800 || f[18] !== 6 || f[19] !== 4) return true;
  const sender = formatV4Number(u32be(f, 28));
  if (who.owns(sender) || who.probing(sender)) return true;
  if (u16be(f, 20) !== ARPOP_REQUEST) return false;
  const target = formatV4Number(u32be(f, 38));
  return who.probing(target) || (who.respondArp && who.owns(target));
}
