// The heartbeat's listener on an address this host does not have: refused at start with an
// error that names the options to fix (the kernel's EADDRNOTAVAIL alone would not).
import { describe, expect, it } from 'vitest';
import { UdpPeerTransport } from './peer-udp.js';

describe('UdpPeerTransport', () => {
  it('names cluster.nodeIPs and cluster.heartbeatPort when it cannot listen', async () => {
    const t = new UdpPeerTransport({ local: { ip: '192.0.2.77', port: 7947 } });
    await expect(
      t.open({ onMessage: () => undefined, onRefused: () => undefined }),
    ).rejects.toThrow(
      /cannot listen on 192\.0\.2\.77 port 7947 \(the first of cluster\.nodeIPs, cluster\.heartbeatPort\).*EADDRNOTAVAIL/,
    );
    t.close();
  });
});
