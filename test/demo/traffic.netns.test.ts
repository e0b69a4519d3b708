// The demo's traffic helper tells a loss on the way from datagrams that arrived but found a
// held-back receiver's socket full (the receiving namespace's UDP RcvbufErrors): the demo
// must not fail on a busy machine for a slow receiver, and must fail for a real loss.
import { describe, expect, it } from 'vitest';
import { arrived, udpFlow } from '../../src/demo/index.js';
import { ip, makeNetns, privileged, vethPair } from '../helpers/netns.js';

const { skip } = privileged();

function pair(): { a: string; b: string } {
  const a = makeNetns('flow-a');
  const b = makeNetns('flow-b');
  vethPair(a, 'va', b, 'vb');
  ip(a, 'addr', 'add', '10.91.0.1/24', 'dev', 'va');
  ip(b, 'addr', 'add', '10.91.0.2/24', 'dev', 'vb');
  ip(a, 'addr', 'add', 'fd91::1/64', 'dev', 'va', 'nodad');
  ip(b, 'addr', 'add', 'fd91::2/64', 'dev', 'vb', 'nodad');
  return { a, b };
}

describe.skipIf(skip)('demo traffic', () => {
  it('counts every datagram read, none dropped, over IPv4 and IPv6', async () => {
    const { a, b } = pair();
    for (const to of ['10.91.0.2', 'fd91::2']) {
      const f = await udpFlow(a, b, to, 300);
      expect(f, to).toEqual({ sent: 300, received: 300, droppedAtReceiver: 0 });
    }
  });

  it('counts what a stalled receiver could not take as arrived, apart from what it read', async () => {
    const { a, b } = pair();
    for (const to of ['10.91.0.2', 'fd91::2']) {
      // A small socket buffer, and the receiver stopped while everything is sent: most
      // datagrams arrive and are dropped at its socket, none is lost on the veth.
      const f = await udpFlow(a, b, to, 500, {
        rcvbuf: 32 * 1024,
        hooks: { listening: (rx) => rx.kill('SIGSTOP'), sent: (rx) => rx.kill('SIGCONT') },
      });
      expect(f.droppedAtReceiver, to).toBeGreaterThan(0);
      expect(f.received, to).toBeLessThan(500);
      expect(arrived(f), to).toBe(500);
    }
  });

  it('a loss on the way is not counted as arrived', async () => {
    const { a, b } = pair();
    // The receiving side is down: every datagram is lost on the way, none reaches a socket.
    ip(b, 'link', 'set', 'vb', 'down');
    const f = await udpFlow(a, b, '10.91.0.2', 200);
    expect(f).toEqual({ sent: 200, received: 0, droppedAtReceiver: 0 });
    expect(arrived(f)).toBe(0);
  });
});
