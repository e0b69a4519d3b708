// Privileged tests of BpfObject, BpfProgram and BpfMap against the real kernel, with the
// fixture programs in fixtures/ compiled by clang before the tests.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { InvalidArgumentError, NotFoundError } from '../../src/errors/index.js';
import {
  BPF_NOEXIST,
  BpfMap,
  BpfObject,
  BpfProgram,
  XdpAction,
  isVerifierError,
  possibleCpus,
  type BpfObjectOpenOptions,
} from '../../src/native/index.js';
import { privileged } from '../helpers/netns.js';
import { compileBpf, privateBpffs } from './fixtures.js';
import { track } from '../helpers/cleanup.js';

const { skip } = privileged();

const u32 = (v: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(v);
  return b;
};
const u64 = (v: bigint): Buffer => {
  const b = Buffer.alloc(8);
  b.writeBigUInt64LE(v);
  return b;
};
const packet = (len = 64): Buffer => Buffer.alloc(len, 0xab);

let testObj = '';
let badObj = '';
beforeAll(() => {
  if (skip) return;
  testObj = compileBpf('xdp_test');
  badObj = compileBpf('xdp_bad');
});

function loadTest(
  setup: (o: BpfObject) => void = () => undefined,
  opts: BpfObjectOpenOptions = {},
): BpfObject {
  const obj = track(BpfObject.open(testObj, opts));
  setup(obj);
  obj.load();
  return obj;
}

/** Runs `fn` with this (main) thread pinned to `cpu`, then restores the affinity. */
function onCpu<T>(cpu: number, fn: () => T): T {
  const before = /Cpus_allowed_list:\s*(\S+)/.exec(
    readFileSync('/proc/thread-self/status', 'utf8'),
  )?.[1];
  const set = (list: string) => {
    const r = spawnSync('taskset', ['-p', '-c', list, String(process.pid)]);
    if (r.status !== 0) throw new Error(`taskset: ${r.stderr.toString()}`);
  };
  set(String(cpu));
  try {
    const now = /Cpus_allowed_list:\s*(\S+)/.exec(
      readFileSync('/proc/thread-self/status', 'utf8'),
    )?.[1];
    expect(now).toBe(String(cpu)); // the test code really runs on the pinned thread
    return fn();
  } finally {
    set(before ?? '0');
  }
}

describe.skipIf(skip)('BpfObject', () => {
  it('lists programs, maps and rodata variables', () => {
    const obj = track(BpfObject.open(testObj));
    expect(obj.programNames()).toEqual(['xdp_test']);
    expect(obj.mapNames()).toEqual(expect.arrayContaining(['stats', 'last_ifindex', 'kv']));
    expect(obj.rodataVariables()).toEqual([
      { name: 'verdict', section: '.rodata', offset: 0, size: 4 },
      { name: 'marker', section: '.rodata', offset: 8, size: 8 },
    ]);
    expect(obj.loaded).toBe(false);
    expect(() => obj.program('xdp_test')).toThrow(/not loaded/);
  });

  it('setRodata before load changes what the program does', () => {
    const plain = loadTest();
    const drop = loadTest((o) => {
      o.setRodata('verdict', u32(XdpAction.DROP));
      o.setRodata('marker', u64(0x1234n));
    });
    const p1 = track(plain.program('xdp_test'));
    const p2 = track(drop.program('xdp_test'));
    expect(p1.testRun({ dataIn: packet() }).retval).toBe(XdpAction.PASS);
    expect(p2.testRun({ dataIn: packet() }).retval).toBe(XdpAction.DROP);
    // marker lands in the high half of last_ifindex (low half: ingress ifindex 1 = lo)
    const last = track(drop.map('last_ifindex')).lookup(u32(0));
    expect(last?.readBigUInt64LE(0)).toBe((0x1234n << 32n) | 1n);
    expect(drop.loaded).toBe(true);
    expect(() => drop.setRodata('verdict', u32(1))).toThrow(/already loaded/);
  });

  it('setRodata rejects unknown names and wrong sizes', () => {
    const obj = track(BpfObject.open(testObj));
    expect(() => obj.setRodata('nope', u32(1))).toThrow(NotFoundError);
    expect(() => obj.setRodata('verdict', u64(1n))).toThrow(InvalidArgumentError);
    expect(() => obj.setRodata('marker', u32(1))).toThrow(/marker is 8 bytes, got 4/);
  });

  it('a failed load throws with the verifier log', () => {
    const obj = track(BpfObject.open(badObj));
    let err: unknown;
    try {
      obj.load();
    } catch (e) {
      err = e;
    }
    expect(isVerifierError(err)).toBe(true);
    expect(err).toMatchObject({ code: 'EACCES', errno: 13, syscall: 'bpf_object__load' });
    if (!isVerifierError(err)) return;
    expect(err.verifierLog).toMatch(/invalid access to packet/);
    expect(err.verifierLog).toMatch(/processed \d+ insns/);
    expect(obj.loaded).toBe(false);
  });

  it('setMaxEntries, reuseMap and setMapPinPath before load', () => {
    const bpffs = privateBpffs();
    const first = loadTest((o) => {
      o.setMaxEntries('kv', 32);
      o.setMapPinPath('stats', join(bpffs, 'stats'));
    });
    const kv1 = track(first.map('kv'));
    expect(kv1.maxEntries).toBe(32);
    expect(existsSync(join(bpffs, 'stats'))).toBe(true);
    const stats1 = track(first.map('stats'));

    const second = loadTest((o) => {
      o.reuseMap('kv', kv1);
      o.setMapPinPath('stats', join(bpffs, 'stats')); // pinned already: reused
    });
    expect(track(second.map('kv')).id).toBe(kv1.id);
    expect(track(second.map('stats')).id).toBe(stats1.id);
    const third = loadTest();
    expect(track(third.map('kv')).id).not.toBe(kv1.id);
  });

  it('programs and maps outlive the object they came from', () => {
    const obj = loadTest();
    const prog = track(obj.program('xdp_test'));
    const kv = track(obj.map('kv'));
    obj.close();
    obj.close();
    expect(() => obj.program('xdp_test')).toThrow(/closed/);
    expect(prog.testRun({ dataIn: packet() }).retval).toBe(XdpAction.PASS);
    kv.update(u32(1), u64(2n));
    expect(kv.lookup(u32(1))?.readBigUInt64LE(0)).toBe(2n);
  });
});

describe.skipIf(skip)('BpfProgram', () => {
  it('info, fromId and a raw XDP program', () => {
    const obj = loadTest();
    const prog = track(obj.program('xdp_test'));
    expect(prog.name).toBe('xdp_test');
    expect(prog.type).toBe('xdp');
    expect(prog.tag).toMatch(/^[0-9a-f]{16}$/);
    expect(prog.info()).toMatchObject({ id: prog.id, name: 'xdp_test', type: 6, typeName: 'xdp' });
    const again = track(BpfProgram.fromId(prog.id));
    expect(again.id).toBe(prog.id);
    expect(again.fd).not.toBe(prog.fd);

    const drop = track(BpfProgram.loadXdpAction(XdpAction.DROP));
    expect(drop.testRun({ dataIn: packet() }).retval).toBe(XdpAction.DROP);
    const pass = track(BpfProgram.loadXdpPass());
    expect(pass.testRun({ dataIn: packet() }).retval).toBe(XdpAction.PASS);

    let err: unknown;
    try {
      BpfProgram.loadRaw({ type: 'xdp', insns: Buffer.from([0x95, 0, 0, 0, 0, 0, 0, 0]) });
    } catch (e) {
      err = e;
    }
    expect(isVerifierError(err) && err.verifierLog).toMatch(/R0 !read_ok/);
  });

  it('testRun returns the packet, the context and the duration', () => {
    const prog = track(loadTest().program('xdp_test'));
    const data = packet(100);
    const r = prog.testRun({ dataIn: data, repeat: 1000, xdpCtx: { ingressIfindex: 1 } });
    expect(r.retval).toBe(XdpAction.PASS);
    expect(r.dataOut).toEqual(data);
    expect(r.ctxOut?.length).toBe(24);
    expect(r.durationNs).toBeGreaterThan(0);
    expect(r.durationNs).toBeLessThan(1_000_000);
    expect(() => prog.testRun({ dataIn: data, dataSizeOut: 10 })).toThrow(
      expect.objectContaining({ code: 'ENOSPC' }),
    );
    prog.close();
    expect(prog.fd).toBe(-1);
    expect(() => prog.testRun({ dataIn: data })).toThrow(/closed/);
  });

  it('pins and reopens programs and maps on a bpffs', () => {
    const bpffs = privateBpffs();
    const obj = loadTest();
    const prog = track(obj.program('xdp_test'));
    const kv = track(obj.map('kv'));
    prog.pin(join(bpffs, 'prog'));
    kv.pin(join(bpffs, 'kv'));
    kv.update(u32(7), u64(70n));
    obj.close();
    prog.close();
    kv.close();
    const prog2 = track(BpfProgram.fromPinned(join(bpffs, 'prog')));
    const kv2 = track(BpfMap.fromPinned(join(bpffs, 'kv')));
    expect(prog2.name).toBe('xdp_test');
    expect(kv2.lookup(u32(7))?.readBigUInt64LE(0)).toBe(70n);
    expect(() => BpfProgram.fromPinned(join(bpffs, 'kv'))).toThrow(
      expect.objectContaining({
        code: 'EINVAL',
        message: expect.stringMatching(/not a BPF program/),
      }),
    );
    expect(() => BpfMap.fromPinned(join(bpffs, 'nothing'))).toThrow(
      expect.objectContaining({ code: 'ENOENT' }),
    );
    expect(() => prog2.pin(join(bpffs, 'prog'))).toThrow(
      expect.objectContaining({ code: 'EEXIST' }),
    );
  });
});

describe.skipIf(skip)('BpfMap', () => {
  it('hash map: update, lookup, delete, keys', () => {
    const kv = track(loadTest().map('kv'));
    expect(kv.info()).toMatchObject({
      name: 'kv',
      typeName: 'hash',
      keySize: 4,
      valueSize: 8,
      maxEntries: 8,
    });
    expect(kv.isPerCpu).toBe(false);
    expect(kv.lookup(u32(1))).toBeUndefined();
    kv.update(u32(1), u64(10n));
    kv.update(u32(2), u64(20n));
    expect(() => kv.update(u32(2), u64(21n), BPF_NOEXIST)).toThrow(
      expect.objectContaining({ code: 'EEXIST' }),
    );
    expect(kv.lookup(u32(2))?.readBigUInt64LE(0)).toBe(20n);
    expect(
      kv
        .keys()
        .map((k) => k.readUInt32LE(0))
        .sort(),
    ).toEqual([1, 2]);
    expect(kv.delete(u32(1))).toBe(true);
    expect(kv.delete(u32(1))).toBe(false);
    expect(kv.keys().map((k) => k.readUInt32LE(0))).toEqual([2]);
    expect(() => kv.lookup(Buffer.alloc(3))).toThrow(/key must be 4 bytes/);
    expect(() => kv.update(u32(3), u32(3))).toThrow(/value must be 8 bytes/);
    expect(() => kv.lookupPerCpu(u32(2))).toThrow(/not per-CPU/);
  });

  it('per-CPU array: one value per possible CPU, written by test runs on each CPU', () => {
    const cpus = possibleCpus();
    const possible = readFileSync('/sys/devices/system/cpu/possible', 'utf8').trim();
    const last = Number(possible.split('-').pop());
    expect(cpus).toBe(last + 1);
    const obj = loadTest();
    const prog = track(obj.program('xdp_test'));
    const stats = track(obj.map('stats'));
    expect(stats.isPerCpu).toBe(true);
    expect(stats.valueSize).toBe(12); // slots are 16 bytes apart
    expect(() => stats.lookup(u32(0))).toThrow(/per-CPU/);

    const online = readFileSync('/sys/devices/system/cpu/online', 'utf8').trim();
    expect(online).toBe(possible); // every possible CPU can run a test
    const runs = Array.from({ length: cpus }, (_, cpu) => 3 + 2 * cpu);
    // One run per call: a repeated run that a notification interrupts is run again and
    // counts twice (see TestRunOptions.repeat).
    runs.forEach((n, cpu) =>
      onCpu(cpu, () => {
        for (let i = 0; i < n; i++) prog.testRun({ dataIn: packet(60 + cpu) });
      }),
    );

    const values = stats.lookupPerCpu(u32(0));
    expect(values?.length).toBe(cpus);
    values?.forEach((v, cpu) => {
      expect(v.length).toBe(12);
      expect(v.readUInt32LE(0)).toBe(runs[cpu]); // packets
      expect(v.readUInt32LE(4)).toBe((runs[cpu] ?? 0) * (60 + cpu)); // bytes
      expect(v.readUInt32LE(8)).toBe(60 + cpu); // last_len
    });
    // key 1 was never touched: zero on every CPU
    expect(stats.lookupPerCpu(u32(1))?.every((v) => v.equals(Buffer.alloc(12)))).toBe(true);

    // write distinct values per CPU and read them back in CPU order
    const mine = Array.from({ length: cpus }, (_, cpu) => Buffer.alloc(12, cpu + 1));
    stats.update(u32(1), mine);
    expect(stats.lookupPerCpu(u32(1))).toEqual(mine);
    stats.update(u32(1), Buffer.alloc(12, 9)); // one Buffer: every CPU gets it
    expect(stats.lookupPerCpu(u32(1))).toEqual(
      Array.from({ length: cpus }, () => Buffer.alloc(12, 9)),
    );
    expect(() => stats.update(u32(1), [Buffer.alloc(12)])).toThrow(InvalidArgumentError);
    expect(stats.lookupPerCpu(u32(5))).toBeUndefined(); // beyond max_entries: ENOENT
  });
});
