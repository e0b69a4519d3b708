// The namespace and the devices every subsystem manages. Rows of the one option table (src/config/schema.ts).

import type { OptionSpec } from '../spec.js';

export const NODE_OPTIONS = [
  {
    path: 'netns',
    type: 'string',
    default: '',
    doc: 'Network namespace to manage: a name under /run/netns or a path to a netns file. Empty: the namespace the agent runs in.',
  },
  {
    path: 'devices',
    type: 'list',
    default: ['eth*', 'en*'],
    doc: 'L2 devices to manage (names or globs with * and ?). One rule for every subsystem: a device is selected when its name matches, it is not the external-IP holder (extip.holderName), not loopback, has a non-zero hardware address, is not the port of a bridge, bond or team, and is up. Neighbor entries also need carrier and ARP/ND (not NOARP). XDP also needs an Ethernet device that is no port at all (a VRF port neither), and of a stacked pair (macvlan, ipvlan, vlan, macsec on a selected lower device) takes only the lower device; a device that goes down loses its program but keeps its counters.',
  },
] as const satisfies readonly OptionSpec[];
