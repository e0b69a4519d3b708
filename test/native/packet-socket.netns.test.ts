// Privileged tests of PacketSocket over a veth pair between two namespaces of its own.
import { spawnSync } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { ETH_P_ALL, PacketSocket, bpfInsn, type FrameInfo } from '../../src/native/index.js';
import { ifindexOf, makeNetns, privileged, sysctl, vethPair, waitFor } from '../helpers/netns.js';

const { skip } = privileged();
const MAC_A = '02:00:00:00:01:0a';
const MAC_B = '02:00:00:00:01:0b';

const opened: { close(): void }[] = [];
function track<T extends { close(): void }>(x: T): T {
  opened.push(x);
  return x;
}
afterEach(() => {
  for (const x of opened.splice(0).reverse()) x.close();
});

function lab() {
  const a = makeNetns('pka');
  const b = makeNetns('pkb');
  for (const ns of [a, b]) sysctl(ns, 'net.ipv6.conf.default.disable_ipv6', 1);
  vethPair(a, 'va', b, 'vb', { macA: MAC_A, macB: MAC_B });
  return { a, b, va: ifindexOf(a, 'va'), vb: ifindexOf(b, 'vb') };
}

const mac = (s: string): Buffer => Buffer.from(s.replaceAll(':', ''), 'hex');
function frame(dst: string, src: string, ethertype: number, payload: string): Buffer {
  const f = Buffer.alloc(60);
  mac(dst).copy(f, 0);
  mac(src).copy(f, 6);
  f.writeUInt16BE(ethertype, 12);
  Buffer.from(payload).copy(f, 14);
  return f;
}
const payloadOf = (f: Buffer): string => f.subarray(14).toString().replace(/\0+$/, '');

interface Got {
  frame: Buffer;
  info: FrameInfo;
}
function listen(sock: PacketSocket): Got[] {
  const got: Got[] = [];
  sock.receive({
    onFrame: (frame, info) => got.push({ frame: Buffer.from(frame), info }),
    onError: (err) => {
      throw err;
    },
  });
  return got;
}

describe.skipIf(skip)('PacketSocket', () => {
  it('a frame sent on one veth end arrives on the other with its info', async () => {
    const { a, b, va, vb } = lab();
    const rx = track(PacketSocket.open({ ifindex: vb, netns: b, protocol: 0x88b5 }));
    const got = listen(rx);
    const tx = track(PacketSocket.open({ ifindex: va, netns: a, protocol: 0x88b5 }));
    expect(tx.fd).toBeGreaterThan(2);
    const sent = frame(MAC_B, MAC_A, 0x88b5, 'hello-unicast');
    expect(tx.send(sent)).toBe(60);
    tx.send(frame('ff:ff:ff:ff:ff:ff', MAC_A, 0x88b5, 'hello-broadcast'));
    tx.send(frame('02:00:00:00:99:99', MAC_A, 0x88b5, 'hello-other'));
    await waitFor(() => got.length === 3, { what: '3 frames' });
    expect(got[0]?.frame).toEqual(sent);
    expect(got.map((g) => [payloadOf(g.frame), g.info])).toEqual([
      ['hello-unicast', { ifindex: vb, protocol: 0x88b5, pktType: 'host' }],
      ['hello-broadcast', { ifindex: vb, protocol: 0x88b5, pktType: 'broadcast' }],
      ['hello-other', { ifindex: vb, protocol: 0x88b5, pktType: 'otherhost' }],
    ]);
  });

  it('the ethertype filter passes only its own type; ETH_P_ALL sees outgoing frames', async () => {
    const { a, b, va, vb } = lab();
    const only5 = listen(track(PacketSocket.open({ ifindex: vb, netns: b, protocol: 0x88b5 })));
    const only6 = listen(track(PacketSocket.open({ ifindex: vb, netns: b, protocol: 0x88b6 })));
    const all = listen(track(PacketSocket.open({ ifindex: va, netns: a, protocol: ETH_P_ALL })));
    const allIn = listen(track(PacketSocket.open({ ifindex: va, netns: a, ignoreOutgoing: true })));
    const tx = track(PacketSocket.open({ ifindex: va, netns: a, protocol: 0x88b5 }));
    tx.send(frame(MAC_B, MAC_A, 0x88b5, 'five'));
    tx.send(frame(MAC_B, MAC_A, 0x88b6, 'six'));
    await waitFor(() => only5.length >= 1 && only6.length >= 1, { what: 'one frame each' });
    await new Promise((r) => setTimeout(r, 50));
    expect(only5.map((g) => payloadOf(g.frame))).toEqual(['five']);
    expect(only6.map((g) => payloadOf(g.frame))).toEqual(['six']);
    const outgoing = all.filter((g) => g.info.protocol === 0x88b5 || g.info.protocol === 0x88b6);
    expect(outgoing.map((g) => [payloadOf(g.frame), g.info.pktType])).toEqual([
      ['five', 'outgoing'],
      ['six', 'outgoing'],
    ]);
    expect(allIn.filter((g) => g.info.pktType === 'outgoing')).toEqual([]);
  });

  it('joins and leaves link-layer multicast groups, as ip maddr shows; closing leaves them', () => {
    const { b, vb } = lab();
    const groups = () =>
      (
        JSON.parse(
          spawnSync('ip', ['-n', b, '-j', 'maddr', 'show', 'dev', 'vb'], { encoding: 'utf8' })
            .stdout,
        ) as { maddr?: { link?: string }[] }[]
      )[0]?.maddr?.flatMap((m) => (m.link === undefined ? [] : [m.link])) ?? [];
    const before = groups();
    const s = track(PacketSocket.open({ ifindex: vb, netns: b, protocol: 0x86dd }));
    s.membership(mac('33:33:ff:00:00:05'), true);
    s.membership(mac('33:33:ff:00:00:06'), true);
    expect(groups()).toEqual([...before, '33:33:ff:00:00:05', '33:33:ff:00:00:06']);
    s.membership(mac('33:33:ff:00:00:05'), false);
    expect(groups()).toEqual([...before, '33:33:ff:00:00:06']);
    expect(() => s.membership(mac(MAC_A), true)).toThrow(/not a multicast MAC/);
    s.close();
    expect(groups()).toEqual(before);
  });

  it('a classic BPF filter (as tcpdump -dd prints it) narrows what is received', async () => {
    const { a, b, va, vb } = lab();
    // tcpdump's own compilation of the filter, as the reference
    const dd = spawnSync('tcpdump', ['-dd', 'ether[14] = 0x66'], { encoding: 'utf8' });
    expect(dd.status, dd.stderr).toBe(0);
    const program = Buffer.concat(
      [...dd.stdout.matchAll(/\{\s*(0x[0-9a-f]+),\s*(\d+),\s*(\d+),\s*(0x[0-9a-f]+)\s*\}/g)].map(
        (m) => bpfInsn(Number(m[1]), Number(m[2]), Number(m[3]), Number(m[4])),
      ),
    );
    expect(program.length).toBeGreaterThanOrEqual(16);
    const rx = track(PacketSocket.open({ ifindex: vb, netns: b, protocol: 0x88b5 }));
    rx.attachFilter(program);
    const got = listen(rx);
    const tx = track(PacketSocket.open({ ifindex: va, netns: a, protocol: 0x88b5 }));
    for (const word of ['sixty', 'five', 'seven', 'fifty'])
      tx.send(frame(MAC_B, MAC_A, 0x88b5, word));
    // one socket, in order: once the last frame sent is in, every frame before it was read
    await waitFor(() => got.some((g) => payloadOf(g.frame) === 'fifty'), {
      what: 'the last frame',
    });
    expect(got.map((g) => payloadOf(g.frame))).toEqual(['five', 'fifty']);
    expect(() => rx.attachFilter(Buffer.alloc(7))).toThrow(/8 bytes/);
  });

  it('frames that arrived before the filter was attached are not received either', async () => {
    const { a, b, va, vb } = lab();
    const rx = track(PacketSocket.open({ ifindex: vb, netns: b, protocol: 0x88b5 }));
    const tx = track(PacketSocket.open({ ifindex: va, netns: a, protocol: 0x88b5 }));
    tx.send(frame(MAC_B, MAC_A, 0x88b5, 'early')); // queued on rx, which has no filter yet
    await new Promise((r) => setTimeout(r, 50));
    // accept only frames whose payload starts with 'l' (0x6c)
    rx.attachFilter(
      Buffer.concat([
        bpfInsn(0x30, 0, 0, 14), // ldb [14]
        bpfInsn(0x15, 0, 1, 0x6c), // jeq #'l', accept, drop
        bpfInsn(0x06, 0, 0, 0x40000),
        bpfInsn(0x06, 0, 0, 0),
      ]),
    );
    const got = listen(rx);
    for (const word of ['late', 'early', 'last']) tx.send(frame(MAC_B, MAC_A, 0x88b5, word));
    await waitFor(() => got.some((g) => payloadOf(g.frame) === 'last'), {
      what: 'the last frame',
    });
    expect(got.map((g) => payloadOf(g.frame))).toEqual(['late', 'last']);
  });

  it('rejects a missing device and bad options; close is idempotent', () => {
    const { a, va } = lab();
    expect(() => PacketSocket.open({ ifindex: 9999, netns: a })).toThrow(
      expect.objectContaining({ code: 'ENODEV', syscall: 'bind' }),
    );
    expect(() => PacketSocket.open({ ifindex: 0 })).toThrow(/ifindex/);
    expect(() => PacketSocket.open({ ifindex: va, protocol: 0x10000 })).toThrow(/protocol/);
    const s = PacketSocket.open({ ifindex: va, netns: a });
    s.close();
    s.close();
    expect(s.fd).toBe(-1);
    expect(() => s.send(Buffer.alloc(60))).toThrow(/closed/);
  });

  it("a process may exit with an unref'd socket that still has frames queued (no abort)", () => {
    const ns = makeNetns('pexit');
    const script = `
      import { PacketSocket, NetlinkSocket, ETH_P_ALL } from '${new URL('../../dist/native/index.js', import.meta.url).pathname}';
      import { spawnSync } from 'node:child_process';
      const p = PacketSocket.open({ ifindex: 1, protocol: ETH_P_ALL, netns: '${ns}' });
      p.receive({ onFrame() {}, onError() {} });
      p.unref();
      const n = NetlinkSocket.open({ netns: '${ns}', groups: [5] });
      n.receive({ onData() {}, onError() {} });
      n.unref();
      spawnSync('ip', ['netns', 'exec', '${ns}', 'ping', '-c', '3', '-i', '0.01', '127.0.0.1']);
      spawnSync('ip', ['-n', '${ns}', 'addr', 'add', '10.9.9.9/32', 'dev', 'lo']);
    `;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      encoding: 'utf8',
    });
    expect(r.stderr).not.toMatch(/terminate called|Aborted/);
    expect(r.status).toBe(0);
  });
});
