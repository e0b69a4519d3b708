import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseIp, parseMac } from '../ipaddr/index.js';
import { silentLogger } from '../log/index.js';
import type { PacketReceiver, PacketSocketOptions } from '../native/index.js';
import {
  buildArp,
  buildArpProbe,
  buildArpReply,
  buildGratuitousArp,
  buildNeighborAdvert,
  buildUnsolicitedNa,
  decodeFrame,
  icmpv6Checksum,
  type ArpFrame,
  type NeighborAdvertFrame,
} from './frames.js';
import { LinkIo, type Conflict, type FrameSocket } from './linkio.js';
import { buildDadSolicit, decodeNeighborSolicit } from './ndp.js';
import { recordingMetrics } from './testing.js';

const MAC = '02:00:00:0e:00:01';
const OTHER = '02:00:00:0e:00:02';

class FakeSocket implements FrameSocket {
  readonly sent: Buffer[] = [];
  receiver: PacketReceiver | undefined;
  closed = false;
  filter: Buffer | undefined;
  /** Group MAC (hex) → joins minus leaves. */
  readonly groups = new Map<string, number>();
  constructor(readonly opts: PacketSocketOptions) {}
  membership(mac: Buffer, join: boolean): void {
    const k = mac.toString('hex');
    this.groups.set(k, (this.groups.get(k) ?? 0) + (join ? 1 : -1));
    if (this.groups.get(k) === 0) this.groups.delete(k);
  }
  attachFilter(program: Buffer): void {
    this.filter = program;
  }
  send(frame: Buffer): number {
    this.sent.push(Buffer.from(frame)); // the caller may reuse its buffer
    return frame.length;
  }
  receive(r: PacketReceiver): void {
    this.receiver = r;
  }
  unref(): void {}
  close(): void {
    this.closed = true;
  }
  deliver(frame: Buffer): void {
    this.receiver?.onFrame(frame, { ifindex: 2, protocol: 0, pktType: 'broadcast' });
  }
}

function setup(
  owned: string[],
  opts: {
    respondArp?: boolean;
    router?: boolean;
    forceTllao?: boolean;
    probing?: string[];
    onReopen?: (cause: string, err?: unknown) => void;
    refuse?: () => boolean;
  } = {},
) {
  const sockets: FakeSocket[] = [];
  const conflicts: Conflict[] = [];
  const claims: { ip: string; mac: string; what: string; nonce?: Uint8Array }[] = [];
  const { metrics, counts } = recordingMetrics();
  const probing = new Set(opts.probing ?? []);
  const io = new LinkIo({
    netns: undefined,
    ext: { ifindex: 2, name: 'ext0', mac: MAC, macBytes: parseMac(MAC), up: true },
    respondArp: opts.respondArp ?? false,
    ipv6: true,
    ndp: { router: opts.router ?? false, forceTllao: opts.forceTllao ?? false },
    log: silentLogger(),
    metrics,
    owns: (ip) => owned.includes(ip),
    onConflict: (c) => conflicts.push(c),
    dad: {
      probing: (ip) => probing.has(ip),
      claim: (ip, mac, what, nonce) => {
        if (!probing.has(ip)) return false;
        claims.push(nonce === undefined ? { ip, mac, what } : { ip, mac, what, nonce });
        return true;
      },
    },
    openSocket: (o) => {
      if (opts.refuse?.()) throw Object.assign(new Error('socket: ENODEV'), { code: 'ENODEV' });
      const s = new FakeSocket(o);
      sockets.push(s);
      return s;
    },
    ...(opts.onReopen ? { onReopen: opts.onReopen } : {}),
  });
  io.open();
  const [tx, arp, v6] = sockets as [FakeSocket, FakeSocket, FakeSocket];
  return { io, tx, arp, v6, conflicts, claims, counts, sockets };
}

/** A neighbor solicitation, built from an NA by changing its type (and checksum). */
function solicit(
  target: string,
  src: string,
  opts: { sourceMac?: string | null; unicast?: boolean } = {},
): Buffer {
  const f = buildNeighborAdvert({
    ethSrc: OTHER,
    ethDst: opts.unicast ? MAC : '33:33:ff:00:00:01',
    srcIp: src,
    dstIp: opts.unicast ? target : 'ff02::1:ff00:1',
    target,
    targetMac: opts.sourceMac === null ? null : OTHER,
  });
  const icmp = f.subarray(54);
  icmp[0] = 135;
  if (icmp.length > 24) icmp[24] = 1; // source link-layer address option
  icmp.writeUInt16BE(0, 2);
  icmp.writeUInt16BE(icmpv6Checksum(f.subarray(22, 38), f.subarray(38, 54), icmp), 2);
  return f;
}

describe('LinkIo', () => {
  it('opens a send-only socket and two listeners that ignore outgoing frames', () => {
    const { tx, arp, v6 } = setup([]);
    expect(tx.opts).toMatchObject({ ifindex: 2, protocol: 0 });
    expect(arp.opts).toMatchObject({ protocol: 0x0806, ignoreOutgoing: true });
    expect(v6.opts).toMatchObject({ protocol: 0x86dd, ignoreOutgoing: true });
    expect(v6.filter).toHaveLength(9 * 8); // neighbor discovery only (tested with tcpdump -dd)
  });

  it('joins the solicited-node group of each IPv6 IP listened for, once per group, across reopen', () => {
    const { io, v6, arp, sockets } = setup([]);
    const a = parseIp('2001:db8::1:abcd');
    const b = parseIp('2001:db8:1::1:abcd'); // same group
    io.listenFor(a, 'dad', true);
    io.listenFor(a, 'owned', true);
    io.listenFor(b, 'owned', true);
    io.listenFor(parseIp('192.0.2.1'), 'owned', true); // ARP: nothing to join
    expect([...v6.groups]).toEqual([['3333ff01abcd', 1]]);
    expect(arp.groups.size).toBe(0);
    io.listenFor(a, 'dad', false);
    io.listenFor(b, 'owned', false);
    expect([...v6.groups]).toEqual([['3333ff01abcd', 1]]); // a is still owned
    io.close();
    io.open(); // a new listener joins again
    expect([...sockets.at(-1)!.groups]).toEqual([['3333ff01abcd', 1]]);
    io.listenFor(a, 'owned', false);
    expect(sockets.at(-1)!.groups.size).toBe(0);
  });

  it('stamps each IPv4 into the templates: exactly what buildGratuitousArp builds', () => {
    const { io, tx } = setup([]);
    const unicastV4 = fc
      .tuple(fc.integer({ min: 1, max: 223 }), fc.nat(255), fc.nat(255), fc.nat(255))
      .filter(([a, b]) => a !== 127 && !(a === 169 && b === 254))
      .map((o) => o.join('.'));
    fc.assert(
      fc.property(unicastV4, (text) => {
        const ip = parseIp(text);
        tx.sent.length = 0;
        io.announce(ip);
        expect(tx.sent).toEqual([
          buildGratuitousArp({ ip: ip.address, mac: MAC, form: 'request' }),
          buildGratuitousArp({ ip: ip.address, mac: MAC, form: 'reply' }),
        ]);
      }),
    );
  });

  it('sends an unsolicited NA (router flag as configured), rebuilt after a MAC change', () => {
    const { io, tx, counts } = setup([], { router: true });
    io.announce(parseIp('2001:db8::5'));
    expect(tx.sent).toEqual([buildUnsolicitedNa({ ip: '2001:db8::5', mac: MAC, router: true })]);
    const mac2 = '02:00:00:0e:00:77';
    io.configure({
      ext: { ifindex: 2, name: 'ext0', mac: mac2, macBytes: parseMac(mac2), up: true },
    });
    io.announce(parseIp('2001:db8::5'));
    io.announce(parseIp('192.0.2.9'));
    const na = decodeFrame(tx.sent[1]!) as NeighborAdvertFrame;
    expect([na.eth.src, na.targetMac, na.checksumValid]).toEqual([mac2, mac2, true]);
    expect((decodeFrame(tx.sent[2]!) as ArpFrame).senderMac).toBe(mac2);
    expect(counts.get('frames ipv6')).toBe(2);
    expect(counts.get('frames ipv4')).toBe(2);
  });

  it('a change of the forwarding setting rebuilds the NA with the new router flag', () => {
    const { io, tx } = setup([]);
    io.announce(parseIp('2001:db8::5'));
    io.configure({ ndp: { router: true, forceTllao: false } });
    io.announce(parseIp('2001:db8::5'));
    expect(tx.sent.map((f) => (decodeFrame(f) as NeighborAdvertFrame).router)).toEqual([
      false,
      true,
    ]);
  });

  it('sends the probes of duplicate address detection', () => {
    const { io, tx, counts } = setup([]);
    const nonce = Buffer.from('010203040506', 'hex');
    io.sendProbe(parseIp('192.0.2.9'), nonce);
    io.sendProbe(parseIp('2001:db8::9'), nonce);
    expect(tx.sent).toEqual([
      buildArpProbe({ ip: '192.0.2.9', mac: MAC }),
      buildDadSolicit({ ip: parseIp('2001:db8::9'), mac: parseMac(MAC), nonce }),
    ]);
    expect([counts.get('frames ipv4'), counts.get('frames ipv6')]).toEqual([1, 1]);
  });

  it('tells duplicate address detection what claims an IP being probed', () => {
    const probing = ['192.0.2.9', '2001:db8::9'];
    const { arp, v6, claims, conflicts, tx } = setup([], { probing });
    const reply = (sip: string, mac = OTHER) =>
      buildArpReply({ senderMac: mac, senderIp: sip, targetMac: MAC, targetIp: '0.0.0.0' });
    arp.deliver(reply('192.0.2.9'));
    arp.deliver(reply('192.0.2.9', MAC)); // from ourselves: nothing
    arp.deliver(reply('192.0.2.8')); // not probed
    const probe = buildArpProbe({ ip: '192.0.2.9', mac: OTHER });
    arp.deliver(probe);
    v6.deliver(buildNeighborAdvert({ ethSrc: OTHER, srcIp: '2001:db8::9', target: '2001:db8::9' }));
    const nonce = Buffer.from('0a0b0c0d0e0f', 'hex');
    v6.deliver(buildDadSolicit({ ip: parseIp('2001:db8::9'), mac: parseMac(OTHER), nonce }));
    v6.deliver(solicit('2001:db8::9', '2001:db8::2')); // address resolution: not a claim
    expect(claims).toEqual([
      { ip: '192.0.2.9', mac: OTHER, what: 'ARP reply' },
      { ip: '192.0.2.9', mac: OTHER, what: 'ARP probe' },
      { ip: '2001:db8::9', mac: OTHER, what: 'neighbor advertisement' },
      {
        ip: '2001:db8::9',
        mac: OTHER,
        what: 'neighbor solicitation from :: (duplicate address detection)',
        nonce,
      },
    ]);
    expect(conflicts).toEqual([]);
    expect(tx.sent).toEqual([]); // nothing answered for an IP that is not ours yet
  });

  it('reports ARP packets that claim our IPs from another MAC, and ignores the rest', () => {
    const { arp, conflicts } = setup(['192.0.2.10']);
    const claim = buildArpReply({
      senderMac: OTHER,
      senderIp: '192.0.2.10',
      targetMac: MAC,
      targetIp: '192.0.2.1',
    });
    arp.deliver(claim);
    arp.deliver(buildGratuitousArp({ ip: '192.0.2.10', mac: OTHER, form: 'request' }));
    arp.deliver(buildGratuitousArp({ ip: '192.0.2.10', mac: MAC, form: 'request' })); // ours
    arp.deliver(
      buildArpReply({
        senderMac: OTHER,
        senderIp: '192.0.2.11',
        targetMac: MAC,
        targetIp: '192.0.2.1',
      }),
    );
    expect(conflicts).toEqual([
      { ip: '192.0.2.10', family: 4, mac: OTHER, what: 'ARP reply' },
      { ip: '192.0.2.10', family: 4, mac: OTHER, what: 'ARP request' },
    ]);
  });

  it('answers ARP requests for our IPs only when told to (arp_ignore)', () => {
    const ask = (tip: string, sip = '192.0.2.1') =>
      buildArp({
        op: 1,
        ethDst: 'ff:ff:ff:ff:ff:ff',
        senderMac: OTHER,
        senderIp: sip,
        targetMac: '00:00:00:00:00:00',
        targetIp: tip,
      });
    const quiet = setup(['192.0.2.10']);
    quiet.arp.deliver(ask('192.0.2.10'));
    expect(quiet.tx.sent).toEqual([]);
    const { arp, tx, counts } = setup(['192.0.2.10'], { respondArp: true });
    arp.deliver(ask('192.0.2.10'));
    arp.deliver(ask('192.0.2.99')); // not ours
    arp.deliver(ask('192.0.2.10', '0.0.0.0')); // a probe (RFC 5227): answered too
    expect(tx.sent).toEqual([
      buildArpReply({
        senderMac: MAC,
        senderIp: '192.0.2.10',
        targetMac: OTHER,
        targetIp: '192.0.2.1',
      }),
      buildArpReply({
        senderMac: MAC,
        senderIp: '192.0.2.10',
        targetMac: OTHER,
        targetIp: '0.0.0.0',
      }),
    ]);
    expect(counts.get('responded ipv4')).toBe(2);
  });

  it('answers neighbor solicitations for our IPv6 (solicited NA; to all nodes for DAD)', () => {
    const { v6, tx, counts } = setup(['2001:db8::10'], { router: true });
    v6.deliver(solicit('2001:db8::10', '2001:db8::2'));
    v6.deliver(solicit('2001:db8::11', '2001:db8::2')); // not ours
    v6.deliver(solicit('2001:db8::10', '::', { sourceMac: null })); // DAD probe
    v6.deliver(solicit('2001:db8::10', '2001:db8::2', { unicast: true })); // reachability
    expect(tx.sent).toHaveLength(3);
    const [reply, dad, nud] = tx.sent.map((f) => decodeFrame(f) as NeighborAdvertFrame);
    // as the kernel (ndisc_recv_ns): a unicast NS gets no override and no target option
    expect(nud).toMatchObject({
      eth: { dst: OTHER },
      dstIp: '2001:db8::2',
      router: true,
      solicited: true,
      override: false,
      targetMac: undefined,
      checksumValid: true,
    });
    expect(reply).toMatchObject({
      eth: { dst: OTHER, src: MAC },
      srcIp: '2001:db8::10',
      dstIp: '2001:db8::2',
      hopLimit: 255,
      router: true,
      solicited: true,
      override: true,
      target: '2001:db8::10',
      targetMac: MAC,
      checksumValid: true,
    });
    expect(dad).toMatchObject({
      eth: { dst: '33:33:00:00:00:01' },
      dstIp: 'ff02::1',
      solicited: false,
      override: true,
      targetMac: MAC,
    });
    expect(counts.get('responded ipv6')).toBe(3);
  });

  it('reports neighbor advertisements for our IPv6 from another MAC', () => {
    const { v6, conflicts } = setup(['2001:db8::10']);
    v6.deliver(
      buildNeighborAdvert({
        ethSrc: OTHER,
        srcIp: 'fe80::2',
        target: '2001:db8::10',
        override: true,
      }),
    );
    v6.deliver(
      buildNeighborAdvert({
        ethSrc: OTHER,
        srcIp: 'fe80::2',
        target: '2001:db8::10',
        hopLimit: 64,
      }),
    ); // invalid
    expect(conflicts).toEqual([
      { ip: '2001:db8::10', family: 6, mac: OTHER, what: 'neighbor advertisement' },
    ]);
  });

  it('close() closes every socket; announcing afterwards fails', () => {
    const { io, tx, arp, v6 } = setup([]);
    io.close();
    expect([tx.closed, arp.closed, v6.closed]).toEqual([true, true, true]);
    expect(() => io.announce(parseIp('192.0.2.1'))).toThrow(/not available/);
  });
});

describe('sockets that fail', () => {
  const err = (code: string) =>
    Object.assign(new Error(`recvmsg: ${code}`), { code, errno: 1, syscall: 'recvmsg' });
  const turn = () => new Promise((r) => setImmediate(r));

  it('reopen every socket after a receive error, groups and filter included; not after ENETDOWN', async () => {
    const reopens: string[] = [];
    const { io, arp, v6, sockets } = setup(['2001:db8::10'], { onReopen: (c) => reopens.push(c) });
    io.listenFor(parseIp('2001:db8::10'), 'owned', true);
    arp.receiver!.onError(err('ENETDOWN')); // the interface went down: the socket works on
    await turn();
    expect(sockets).toHaveLength(3);
    v6.receiver!.onError(err('EINVAL'));
    arp.receiver!.onError(err('EBUSY')); // the same turn: one reopen
    await turn();
    expect(reopens).toEqual(['EINVAL']);
    expect(sockets.slice(0, 3).every((s) => s.closed)).toBe(true);
    expect(sockets).toHaveLength(6);
    const [tx2, arp2, v62] = sockets.slice(3) as [FakeSocket, FakeSocket, FakeSocket];
    expect(arp2.receiver).toBeDefined();
    expect(v62.filter).toBeDefined();
    expect([...v62.groups.keys()]).toEqual(['3333ff000010']);
    io.announce(parseIp('192.0.2.1'));
    expect(tx2.sent).toHaveLength(2); // the announcement goes out of the new socket
    expect(io.lastError).toBeUndefined();
  });

  it('reopen after a send error that says the socket is broken; a failed reopen is kept and retried', async () => {
    const reopens: string[] = [];
    let refuse = false;
    const { io, tx, sockets } = setup([], {
      onReopen: (c, e) => reopens.push(`${c}${e ? ' failed' : ''}`),
      refuse: () => refuse,
    });
    tx.send = () => {
      throw Object.assign(new Error('send: ENOBUFS'), { code: 'ENOBUFS' });
    };
    expect(() => io.announce(parseIp('192.0.2.1'))).toThrow(/ENOBUFS/);
    await turn();
    expect(reopens).toEqual([]); // a moment's shortage: the socket works on
    tx.send = () => {
      throw Object.assign(new Error('send: EBADF'), { code: 'EBADF' });
    };
    refuse = true;
    expect(() => io.announce(parseIp('192.0.2.1'))).toThrow(/EBADF/);
    await turn();
    expect(reopens).toEqual(['EBADF failed']);
    expect(io.reopenError).toMatch(/could not be reopened after EBADF/);
    refuse = false;
    io.retryReopen();
    await turn();
    expect(reopens).toEqual(['EBADF failed', 'retry']);
    expect(io.reopenError).toBeUndefined();
    expect(sockets.filter((s) => !s.closed)).toHaveLength(3);
  });
});

describe('decodeNeighborSolicit', () => {
  it('decodes a valid NS and rejects bad hop limit, bad checksum, multicast target', () => {
    const ns = solicit('2001:db8::10', '2001:db8::2');
    expect(decodeNeighborSolicit(ns)).toEqual({
      ethSrc: OTHER,
      srcIp: '2001:db8::2',
      dstIp: 'ff02::1:ff00:1',
      target: '2001:db8::10',
      sourceMac: OTHER,
      nonce: undefined,
    });
    const hop = Buffer.from(ns);
    hop[21] = 64;
    expect(decodeNeighborSolicit(hop)).toBeUndefined();
    const sum = Buffer.from(ns);
    sum[56] = sum[56]! ^ 0xff;
    expect(decodeNeighborSolicit(sum)).toBeUndefined();
    expect(decodeNeighborSolicit(solicit('ff02::1', '2001:db8::2'))).toBeUndefined();
    expect(decodeNeighborSolicit(ns.subarray(0, 60))).toBeUndefined();
    // from "::" a source link-layer option is not allowed (RFC 4861 §7.1.1)
    expect(decodeNeighborSolicit(solicit('2001:db8::10', '::'))).toBeUndefined();
  });
});
