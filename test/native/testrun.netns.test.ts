// Privileged tests of BpfProgram.testRun with an ingress device in a namespace, and with
// live frames that really enter that namespace's stack.
import { execFileSync } from 'node:child_process';
import { beforeAll, describe, expect, it } from 'vitest';
import { BpfObject, PacketSocket, XdpAction, runInNetns } from '../../src/native/index.js';
import { ip, makeNetns, privileged, sysctl, waitFor } from '../helpers/netns.js';
import { compileBpf } from './fixtures.js';
import { track } from '../helpers/cleanup.js';

const { skip } = privileged();

let testObj = '';
beforeAll(() => {
  if (!skip) testObj = compileBpf('xdp_test');
});

/** A namespace with veth va (ifindex unused in this namespace) and its peer vb. */
function lab() {
  // Read-only look at this (the test's own) namespace: pick an ifindex nothing here has.
  const here = JSON.parse(execFileSync('ip', ['-j', 'link'], { encoding: 'utf8' })) as {
    ifindex: number;
  }[];
  const hostIndexes = new Set(here.map((l) => l.ifindex));
  let index = 4000 + Math.floor(Math.random() * 1000);
  while (hostIndexes.has(index)) index++;
  const ns = makeNetns('tr');
  sysctl(ns, 'net.ipv6.conf.default.disable_ipv6', 1);
  ip(ns, 'link', 'add', 'va', 'index', String(index), 'type', 'veth', 'peer', 'name', 'vb');
  ip(ns, 'link', 'set', 'va', 'up');
  ip(ns, 'link', 'set', 'vb', 'up');
  return { ns, va: index };
}

function passProgram() {
  const obj = track(BpfObject.open(testObj));
  const verdict = Buffer.alloc(4);
  verdict.writeUInt32LE(XdpAction.PASS);
  obj.setRodata('verdict', verdict);
  obj.load();
  const lastIfindex = track(obj.map('last_ifindex'));
  return {
    prog: track(obj.program('xdp_test')),
    lastIfindex: () =>
      Number((lastIfindex.lookup(Buffer.alloc(4))?.readBigUInt64LE(0) ?? 0n) & 0xffffffffn),
  };
}

function broadcastFrame(tag: string): Buffer {
  const f = Buffer.alloc(60);
  f.fill(0xff, 0, 6);
  Buffer.from([0x02, 0, 0, 0, 0x02, 0x0c]).copy(f, 6);
  f.writeUInt16BE(0x88b5, 12);
  Buffer.from(tag).copy(f, 14);
  return f;
}

describe.skipIf(skip)('testRun in a namespace', () => {
  it('resolves the ingress ifindex in the calling thread namespace', () => {
    const { ns, va } = lab();
    const { prog, lastIfindex } = passProgram();
    const data = broadcastFrame('ctx');
    // Outside the namespace the index names no device.
    expect(() => prog.testRun({ dataIn: data, xdpCtx: { ingressIfindex: va } })).toThrow(
      expect.objectContaining({ code: 'ENODEV' }),
    );
    const r = runInNetns(ns, () => prog.testRun({ dataIn: data, xdpCtx: { ingressIfindex: va } }));
    expect(r.retval).toBe(XdpAction.PASS);
    expect(lastIfindex()).toBe(va);
    expect(r.ctxOut?.readUInt32LE(12)).toBe(va); // xdp_md.ingress_ifindex
  });

  it('live frames: XDP_PASS frames enter the stack of the ingress device', async () => {
    const { ns, va } = lab();
    const { prog } = passProgram();
    const tap = track(PacketSocket.open({ ifindex: va, netns: ns, protocol: 0x88b5 }));
    const got: { tag: string; pktType: string; ifindex: number }[] = [];
    tap.receive({
      onFrame: (f, info) =>
        got.push({
          tag: f.subarray(14, 18).toString(),
          pktType: info.pktType,
          ifindex: info.ifindex,
        }),
      onError: (err) => {
        throw err;
      },
    });
    // A plain test run only runs the program: nothing reaches the stack.
    runInNetns(ns, () =>
      prog.testRun({ dataIn: broadcastFrame('dry0'), xdpCtx: { ingressIfindex: va } }),
    );
    // Three runs of one frame (a repeated run that a notification interrupts runs again).
    for (let i = 0; i < 3; i++) {
      const r = runInNetns(ns, () =>
        prog.testRun({
          dataIn: broadcastFrame('live'),
          xdpCtx: { ingressIfindex: va },
          liveFrames: true,
        }),
      );
      expect(r.dataOut).toBeUndefined();
    }
    await waitFor(() => got.length >= 3, { what: '3 live frames' });
    await new Promise((res) => setTimeout(res, 50));
    expect(got).toEqual(
      Array.from({ length: 3 }, () => ({ tag: 'live', pktType: 'broadcast', ifindex: va })),
    );
  });
});
