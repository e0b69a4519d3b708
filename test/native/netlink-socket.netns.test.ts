// Privileged tests of the addon's NetlinkSocket, each in namespaces of its own.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { NetlinkSocket, type SystemError } from '../../src/native/index.js';
import { ip, ipJson, makeNetns, privileged, waitFor } from '../helpers/netns.js';
import * as nl from './nlmsg.js';

const { skip } = privileged();
const ADDON = fileURLToPath(new URL('../../native/build/Release/fibkeeper.node', import.meta.url));
const CHILD = fileURLToPath(new URL('./fixtures/throw-in-ondata.mjs', import.meta.url));
const SENDER_CHILD = fileURLToPath(new URL('./fixtures/exit-while-sending.mjs', import.meta.url));

/** Collects every message and error a socket receives. */
function collect(sock: NetlinkSocket): { msgs: nl.NlMsg[]; errors: SystemError[]; chunks: number } {
  const state = { msgs: [] as nl.NlMsg[], errors: [] as SystemError[], chunks: 0 };
  sock.receive({
    onData: (chunk) => {
      state.chunks++;
      state.msgs.push(...nl.parseMessages(chunk));
    },
    onError: (err) => state.errors.push(err),
  });
  return state;
}

/** Sends a link dump and waits for its NLMSG_DONE; returns the links it listed. */
async function dumpLinks(sock: NetlinkSocket, seq: number, state: { msgs: nl.NlMsg[] }) {
  sock.send(nl.getLinkDump(seq));
  await waitFor(() => state.msgs.some((m) => m.seq === seq && m.type === nl.NLMSG_DONE), {
    what: `dump ${seq} done`,
  });
  return state.msgs
    .filter((m) => m.seq === seq && m.type === nl.RTM_NEWLINK)
    .map((m) => nl.linkOf(m));
}

const open: NetlinkSocket[] = [];
function openSocket(opts: Parameters<typeof NetlinkSocket.open>[0]): NetlinkSocket {
  const s = NetlinkSocket.open(opts);
  open.push(s);
  return s;
}
afterEach(() => {
  for (const s of open.splice(0)) s.close();
});

describe.skipIf(skip)('NetlinkSocket', () => {
  it('dumps the links of the namespace it was opened in', async () => {
    const ns = makeNetns('nl');
    ip(ns, 'link', 'add', 'fka', 'type', 'veth', 'peer', 'name', 'fkb');
    const sock = openSocket({ netns: ns });
    expect(sock.portId).toBeGreaterThan(0);
    expect(sock.fd).toBeGreaterThan(2);
    const state = collect(sock);
    const links = await dumpLinks(sock, 1, state);
    const expected = ipJson<{ ifindex: number; ifname: string }[]>(ns, 'link', 'show');
    const byIndex = (a: { ifindex: number }, b: { ifindex: number }) => a.ifindex - b.ifindex;
    expect(links.sort(byIndex)).toEqual(
      expected.map((l) => ({ ifindex: l.ifindex, name: l.ifname })).sort(byIndex),
    );
    expect(links.map((l) => l.name).sort()).toEqual(['fka', 'fkb', 'lo']);
    // Every reply came from the kernel to our port.
    expect(state.msgs.every((m) => m.pid === sock.portId)).toBe(true);
    expect(state.errors).toEqual([]);
  });

  it('delivers RTNLGRP_LINK events after joining the group', async () => {
    const ns = makeNetns('nlgrp');
    const sock = openSocket({ netns: ns, groups: [nl.RTNLGRP_LINK] });
    const state = collect(sock);
    ip(ns, 'link', 'add', 'fkev0', 'type', 'veth', 'peer', 'name', 'fkev1');
    await waitFor(
      () => state.msgs.some((m) => m.type === nl.RTM_NEWLINK && nl.linkOf(m).name === 'fkev0'),
      { what: 'RTM_NEWLINK fkev0' },
    );
    // Leaving the group stops the events.
    sock.dropMembership(nl.RTNLGRP_LINK);
    const before = state.msgs.length;
    ip(ns, 'link', 'add', 'fkev2', 'type', 'veth', 'peer', 'name', 'fkev3');
    await dumpLinks(sock, 7, state); // a round trip: anything queued before it has arrived
    const events = state.msgs.slice(before).filter((m) => m.seq === 0);
    expect(events).toEqual([]);
  });

  it('reports ENOBUFS on overflow and keeps working', async () => {
    const ns = makeNetns('nlnobuf');
    const sock = openSocket({ netns: ns, groups: [nl.RTNLGRP_LINK], rcvbuf: 1024 });
    expect(sock.setReceiveBuffer(1024)).toBeLessThanOrEqual(8192);
    const state = collect(sock);
    // The event loop is blocked while `ip -batch` runs, so the events pile up in the kernel.
    const cmds = Array.from(
      { length: 40 },
      (_, i) => `link add fkf${i} type veth peer name fkg${i}`,
    );
    const r = spawnSync('ip', ['-n', ns, '-batch', '-'], { input: cmds.join('\n') + '\n' });
    expect(r.status).toBe(0);
    await waitFor(() => state.errors.length > 0, { what: 'ENOBUFS' });
    expect(state.errors[0]).toMatchObject({ code: 'ENOBUFS', errno: 105, syscall: 'recvmsg' });
    expect(state.errors[0]).toBeInstanceOf(Error);
    // The socket still answers requests afterwards.
    sock.setReceiveBuffer(1 << 20);
    const links = await dumpLinks(sock, 42, state);
    expect(links.length).toBe(81);
  });

  it('an exception in onData is an ordinary uncaught exception', () => {
    const ns = makeNetns('nlthrow');
    const handled = spawnSync(process.execPath, [CHILD, ADDON, ns, 'handle'], {
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(handled.signal).toBeNull();
    expect(handled.stdout).toContain('uncaught: boom-from-ondata');
    expect(handled.stdout).toContain('second batch received');
    expect(handled.status).toBe(0);

    const unhandled = spawnSync(process.execPath, [CHILD, ADDON, ns, 'nohandle'], {
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(unhandled.signal).toBeNull(); // not SIGABRT
    expect(unhandled.status).toBe(1);
    expect(unhandled.stderr).toContain('boom-from-ondata');
  });

  it('returns the kernel extended-ack text for a bad request', async () => {
    const ns = makeNetns('nlack');
    const sock = openSocket({ netns: ns });
    const state = collect(sock);
    sock.send(nl.newLink(9, 'fkbad', 'fkt-no-such-kind'));
    const reply = await waitFor(() =>
      state.msgs.find((m) => m.seq === 9 && m.type === nl.NLMSG_ERROR),
    );
    const { error, extMsg } = nl.errorOf(reply);
    expect(error).toBeLessThan(0);
    expect(reply.flags & nl.NLM_F_CAPPED).toBeTruthy();
    expect(extMsg).toBe('Unknown device type');
  });

  it('send takes several buffers as one datagram; pause stops delivery', async () => {
    const ns = makeNetns('nlsend');
    const sock = openSocket({ netns: ns });
    const req = nl.getLinkDump(3);
    expect(sock.send([req.subarray(0, 10), req.subarray(10)])).toBe(req.length);
    const state = collect(sock);
    await waitFor(() => state.msgs.some((m) => m.seq === 3 && m.type === nl.NLMSG_DONE));
    sock.pause();
    sock.send(nl.getLinkDump(4));
    // the reply is in the socket's queue, and the paused socket has not read it
    await waitFor(() => (sock.queuedBytes() ?? 0) > 0, { what: 'the reply queued' });
    expect(state.msgs.some((m) => m.seq === 4)).toBe(false);
    collect(sock); // resume with a new receiver: the queued reply arrives there
    sock.close();
    sock.close();
    expect(sock.fd).toBe(-1);
    expect(() => sock.send(req)).toThrow(/closed/);
  });

  it('queuedBytes is what the kernel holds against the receive buffer, as /proc/net/netlink shows it', async () => {
    const ns = makeNetns('nlq');
    const sock = openSocket({ netns: ns });
    /** The socket's Rmem column in its namespace's /proc/net/netlink (by port id). */
    const rmem = (): number => {
      const r = spawnSync('ip', ['netns', 'exec', ns, 'cat', '/proc/net/netlink'], {
        encoding: 'utf8',
      });
      const row = r.stdout
        .split('\n')
        .map((l) => l.trim().split(/\s+/))
        .find((f) => f[2] === String(sock.portId));
      if (row === undefined) throw new Error(`port ${sock.portId} not in /proc/net/netlink`);
      return Number(row[4]);
    };
    collect(sock);
    sock.pause();
    expect(sock.queuedBytes()).toBe(0);
    for (let seq = 1; seq <= 3; seq++) sock.send(nl.getLinkDump(seq));
    await waitFor(() => (sock.queuedBytes() ?? 0) > 0 && sock.queuedBytes() === rmem(), {
      what: 'the replies queued',
    });
    const queued = sock.queuedBytes() ?? 0;
    // Three dumps: at least a reply and a DONE each, every skb at least its length.
    expect(queued).toBeGreaterThan(0);
    expect(queued).toBe(rmem());
    sock.send(nl.getLinkDump(4));
    await waitFor(() => (sock.queuedBytes() ?? 0) > queued, { what: 'the fourth reply queued' });
    expect(sock.queuedBytes()).toBe(rmem());
    collect(sock);
    await waitFor(() => sock.queuedBytes() === 0, { what: 'queue read' });
    expect(rmem()).toBe(0);
    sock.close();
    expect(() => sock.queuedBytes()).toThrow(/closed/);
  });

  it('submit keeps the order of queued and direct sends; a failed queued send is reported with its sequence numbers', async () => {
    const ns = makeNetns('nlsq');
    // The kernel makes the send buffer 8 KiB: a larger datagram fails with EMSGSIZE.
    const sock = openSocket({ netns: ns, sndbuf: 4096, rcvbuf: 8 << 20 });
    const state = collect(sock);
    expect(() => sock.submit(nl.noops(1), true)).toThrow(/startSender/);
    const failures: { code: string | undefined; first: number; last: number }[] = [];
    sock.startSender((err, first, last) => failures.push({ code: err.code, first, last }));
    // 600 sends, two in three queued, the others direct unless sends are queued: the kernel
    // answers them in exactly the order submitted.
    let direct = 0;
    for (let seq = 1; seq <= 600; seq++) if (sock.submit(nl.noops(seq), seq % 3 === 0)) direct++;
    const acked = () => state.msgs.filter((m) => m.type === nl.NLMSG_ERROR).map((m) => m.seq);
    await waitFor(() => acked().length >= 600, { what: '600 acks' });
    expect(acked()).toEqual(Array.from({ length: 600 }, (_, i) => i + 1));
    expect(direct).toBeLessThan(600);
    // The thread is named (top -H; bench/neighbor/cpu.mjs reads its CPU time by that name).
    const comms = readdirSync('/proc/self/task').map((t) => {
      try {
        return readFileSync(`/proc/self/task/${t}/comm`, 'utf8').trim();
      } catch {
        return '';
      }
    });
    expect(comms).toContain('fk-netlink-send');
    // Queued, a datagram of 2,000 messages (32 KiB) fails on the send thread: reported with
    // its first and last sequence numbers, and the send queued behind it still goes.
    sock.submit(nl.noops(1000, 2000), true);
    sock.submit(nl.noops(5000), true);
    await waitFor(() => failures.length > 0 && acked().includes(5000), { what: 'failure, ack' });
    expect(failures).toEqual([{ code: 'EMSGSIZE', first: 1000, last: 2999 }]);
    expect(acked().filter((s) => s >= 1000 && s < 3000)).toEqual([]);
    expect(state.errors).toEqual([]);
    // Sent directly (nothing queued on a fresh socket), the same failure throws at once.
    const idle = openSocket({ netns: ns, sndbuf: 4096 });
    idle.startSender(() => undefined);
    expect(() => idle.submit(nl.noops(1000, 2000), false)).toThrow(/EMSGSIZE/);
    // Closing with sends queued stops the thread before the descriptor goes.
    for (let i = 0; i < 200; i++) sock.submit(nl.noops(10_000 + i * 100, 100), true);
    sock.close();
    expect(sock.fd).toBe(-1);
    expect(() => sock.submit(nl.noops(1), true)).toThrow(/closed/);
  });

  it('a process ends normally with its send thread busy, the socket never closed', () => {
    const ns = makeNetns('nlsqexit');
    const r = spawnSync(process.execPath, [SENDER_CHILD, ADDON, ns], {
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(r.signal).toBeNull(); // not SIGABRT, not SIGSEGV
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('queued\n');
    expect(r.status).toBe(0);
  });

  it('rejects bad options and unknown namespaces', () => {
    expect(() => NetlinkSocket.open({ groups: [0] })).toThrow(/groups\[0\]/);
    expect(() => NetlinkSocket.open({ netns: '../etc' })).toThrow(/netns/);
    let err: unknown;
    try {
      NetlinkSocket.open({ netns: 'fkt-does-not-exist' });
    } catch (e) {
      err = e;
    }
    expect(err).toMatchObject({ code: 'ENOENT', errno: 2, syscall: 'open' });
  });
});
