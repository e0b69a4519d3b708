import { describe, expect, it } from 'vitest';
import { parseProtocols, type BirdReply } from './control.js';

// `birdc show protocols all fk_peer0` of BIRD 2.0.12 peered with FRR 8.4 (graceful restart
// on both sides), as test/bgp/graceful printed it: the 1002 row, then the 1006 details.
const DETAILS = `  BGP state:          Established
    Neighbor address: 10.77.1.1
    Neighbor AS:      65000
    Local AS:         65001
    Neighbor ID:      10.77.0.1
    Local capabilities
      Multiprotocol
        AF announced: ipv4
      Route refresh
      Graceful restart
        Restart time: 30
        Restart recovery
        AF supported: ipv4
        AF preserved: ipv4
      4-octet AS numbers
      Enhanced refresh
      Long-lived graceful restart
    Neighbor capabilities
      Multiprotocol
        AF announced: ipv4
      Route refresh
      Extended message
      Graceful restart
      4-octet AS numbers
    Session:          external AS4
    Source address:   10.77.1.2
    Hold timer:       7.880/9
  Channel ipv4
    State:          UP
    Routes:         0 imported, 1 exported, 0 preferred`;

function reply(details: string): BirdReply {
  return {
    lines: [
      { code: 2002, text: 'Name       Proto      Table      State  Since         Info' },
      { code: 1002, text: 'fk_peer0   BGP        ---        up     13:48:20.585  Established   ' },
      ...details.split('\n').map((text) => ({ code: 1006, text })),
    ],
  };
}

describe('parseProtocols', () => {
  it("reads the session, the routes exported and the peer's graceful restart capability", () => {
    expect(parseProtocols(reply(DETAILS))).toEqual([
      {
        name: 'fk_peer0',
        state: 'up',
        since: '13:48:20.585',
        info: 'Established',
        exported: 1,
        lastError: '',
        peerGracefulRestart: true,
      },
    ]);
  });

  it('a peer without the capability: only our own (local) graceful restart is listed', () => {
    const noPeer = DETAILS.replace(/(Extended message\n)\s+Graceful restart\n/, '$1');
    expect(noPeer).not.toBe(DETAILS);
    expect(parseProtocols(reply(noPeer))[0]?.peerGracefulRestart).toBe(false);
  });
});
