// The attach pass against a fake datapath: an in-memory kernel (hooks, records, links) with
// an operation history and a "faulty" switch, so each step's decisions are visible.
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../log/index.js';
import { ARPHRD_ETHER, IFF_LOOPBACK, IFF_UP, type Link } from '../netlink/index.js';
import { emptyCounters, type FkConfig } from './layout.js';
import type { DatapathOps, HookQuery, RecordInfo } from './ops.js';
import { AttachPass } from './attach-pass.js';
import type { XdpForwarderConfig } from './types.js';

interface FakeRec {
  slot: number;
  progId: number;
  cfg: string;
  link: { id: number; ifindex: number } | undefined;
}

class FakeDatapath implements DatapathOps {
  readonly history: string[] = [];
  /** ifindex -> attached program ids (ours or foreign) and mode */
  readonly hooks = new Map<number, { progIds: number[]; mode: HookQuery['mode'] }>();
  readonly recs = new Map<string, FakeRec>();
  txPorts: number[] = [];
  /** Operations (by name) that throw. */
  readonly faulty = new Set<string>();
  /** The "object" version: records loaded before a bump are stale. */
  version = 1;
  #ids = 100;

  #op(what: string): void {
    const name = what.split(' ')[0]!;
    if (this.faulty.has(name)) {
      this.history.push(`${what} fail`);
      throw new Error(`${name} failed`);
    }
    this.history.push(what);
  }
  open() {
    return { records: this.records(), mapsReplaced: false };
  }
  records(): RecordInfo[] {
    return [...this.recs].map(([name, r]) => ({
      name,
      slot: r.slot,
      progId: r.progId,
      linkId: r.link?.id,
      linkIfindex: r.link?.ifindex ?? 0,
    }));
  }
  query(ifindex: number): HookQuery {
    const h = this.hooks.get(ifindex);
    return h ? { progIds: [...h.progIds], mode: h.mode } : { progIds: [], mode: 'none' };
  }
  described = 0;
  describeForeign(progId: number) {
    this.described++;
    return {
      progId,
      name: 'other',
      linkId: undefined,
      holders: [],
      owner: `program ${progId} (other)`,
    };
  }
  create(name: string, cfg: FkConfig): RecordInfo {
    this.#op(`create ${name} slot=${cfg.slot}`);
    this.recs.set(name, {
      slot: cfg.slot,
      progId: this.#ids++,
      cfg: this.#key(cfg),
      link: undefined,
    });
    return this.records().find((r) => r.name === name)!;
  }
  #key(cfg: FkConfig): string {
    return `${this.version}:${JSON.stringify(cfg)}`;
  }
  isCurrent(name: string, cfg: FkConfig): boolean {
    return this.recs.get(name)?.cfg === this.#key(cfg);
  }
  upgrade(name: string, cfg: FkConfig): RecordInfo {
    this.#op(`upgrade ${name}`);
    const r = this.recs.get(name)!;
    const progId = this.#ids++;
    if (r.link) {
      const h = this.hooks.get(r.link.ifindex)!;
      h.progIds = h.progIds.map((id) => (id === r.progId ? progId : id));
    }
    r.progId = progId;
    r.cfg = this.#key(cfg);
    return this.records().find((x) => x.name === name)!;
  }
  attach(name: string, ifindex: number, mode: string) {
    this.#op(`attach ${name} ${ifindex} ${mode}`);
    const r = this.recs.get(name)!;
    if (this.query(ifindex).progIds.length > 0) throw new Error('EBUSY');
    r.link = { id: this.#ids++, ifindex };
    const m = mode === 'generic' ? 'generic' : 'native';
    this.hooks.set(ifindex, { progIds: [r.progId], mode: m });
    return { linkId: r.link.id, mode: m as HookQuery['mode'] };
  }
  moveLink(from: string, to: string): void {
    this.#op(`moveLink ${from} ${to}`);
    const a = this.recs.get(from)!;
    const b = this.recs.get(to)!;
    b.link = a.link;
    a.link = undefined;
    this.hooks.set(b.link!.ifindex, { progIds: [b.progId], mode: 'native' });
  }
  unlink(name: string): void {
    const r = this.recs.get(name);
    if (!r?.link) return;
    this.#op(`unlink ${name}`);
    const h = this.hooks.get(r.link.ifindex);
    if (h?.progIds.includes(r.progId)) this.hooks.delete(r.link.ifindex);
    r.link = undefined;
  }
  remove(name: string): void {
    if (!this.recs.has(name)) return;
    this.unlink(name);
    this.#op(`remove ${name}`);
    this.recs.delete(name);
  }
  removeForeign(ifindex: number): void {
    this.#op(`removeForeign ${ifindex}`);
    this.hooks.delete(ifindex);
  }
  setTxPorts(ifindexes: readonly number[]) {
    this.txPorts = [...ifindexes].sort((a, b) => a - b);
    return [];
  }
  readSlot() {
    return emptyCounters();
  }
  zeroSlot(slot: number): void {
    this.history.push(`zero ${slot}`);
  }
  readMisses() {
    return [];
  }
  deleteMiss() {
    return false;
  }
  mirrors = 0;
  writeMirror(): void {
    this.mirrors++;
  }
  writeState(): void {
    this.mirrors++;
  }
  renewWatch(): boolean {
    return false;
  }
  readRedirectErrors() {
    return undefined;
  }
  close(): void {}
  destroy(): string[] {
    return [];
  }
  /** The device vanished: its links go defunct, its hook with it. */
  vanish(ifindex: number): void {
    this.hooks.delete(ifindex);
    for (const r of this.recs.values()) if (r.link?.ifindex === ifindex) r.link.ifindex = 0;
  }
  take(): string[] {
    return this.history.splice(0);
  }
}

const link = (index: number, name: string, over: Partial<Link> = {}): Link => ({
  family: 0,
  type: ARPHRD_ETHER,
  index,
  flags: IFF_UP,
  change: 0,
  name,
  address: `02:00:00:00:00:${index.toString(16).padStart(2, '0')}`,
  ...over,
});

function setup(over: Partial<XdpForwarderConfig> = {}) {
  const ops = new FakeDatapath();
  const cfg: XdpForwarderConfig = { ...setupCfg(), ...over };
  return { ops, r: new AttachPass(ops, cfg, silentLogger()) };
}

describe('AttachPass', () => {
  it('attaches to every selected device with its own slot, fills the devmap, and a second pass does nothing', () => {
    const { ops, r } = setup();
    const links = [
      link(1, 'lo', { flags: IFF_LOOPBACK, address: '00:00:00:00:00:00' }),
      link(2, 'eth0'),
      link(3, 'eth1'),
      link(4, 'eth-holder'),
      link(5, 'eth2', { type: 65534, address: undefined }), // tun-like, no MAC
      link(6, 'wlan0'),
    ];
    const st = r.run(links);
    expect(ops.take()).toEqual([
      'zero 1',
      'create eth0 slot=1',
      'attach eth0 2 auto',
      'zero 2',
      'create eth1 slot=2',
      'attach eth1 3 auto',
    ]);
    expect(ops.txPorts).toEqual([2, 3]);
    expect([...st.values()].map((d) => [d.name, d.attached, d.slot, d.mode])).toEqual([
      ['eth0', 'ours', 1, 'native'],
      ['eth1', 'ours', 2, 'native'],
    ]);
    r.run(links);
    expect(ops.take()).toEqual([]);
  });

  it('leaves a foreign program alone (status names it); force removes it first', () => {
    const { ops, r } = setup();
    ops.hooks.set(3, { progIds: [42], mode: 'generic' });
    const st = r.run([link(2, 'eth0'), link(3, 'eth1')]);
    expect(ops.take()).toEqual(['zero 1', 'create eth0 slot=1', 'attach eth0 2 auto']);
    expect(st.get('eth1')).toMatchObject({ attached: 'foreign', progId: 42, mode: 'generic' });
    expect(st.get('eth1')?.error).toMatch(/program 42 \(other\).*left alone/);
    expect(ops.txPorts).toEqual([2, 3]); // still a redirect target
    r.run([link(2, 'eth0'), link(3, 'eth1')]);
    expect(ops.described).toBe(1); // /proc is scanned once per foreign program
    ops.hooks.set(3, { progIds: [43], mode: 'generic' });
    expect(r.run([link(2, 'eth0'), link(3, 'eth1')]).get('eth1')?.progId).toBe(43);
    expect(ops.described).toBe(2);

    const forced = setup({ force: true });
    forced.ops.hooks.set(3, { progIds: [42], mode: 'generic' });
    forced.r.run([link(3, 'eth1')]);
    expect(forced.ops.take()).toEqual([
      'removeForeign 3',
      'zero 1',
      'create eth1 slot=1',
      'attach eth1 3 auto',
    ]);
  });

  it('a vanished device loses its link but keeps its slot; back with a new ifindex it is attached again', () => {
    const { ops, r } = setup();
    r.run([link(2, 'eth0'), link(3, 'eth1')]);
    ops.take();
    ops.vanish(3);
    const st = r.run([link(2, 'eth0')]);
    expect(ops.take()).toEqual(['unlink eth1']);
    expect(st.get('eth1')).toMatchObject({ ifindex: 0, attached: 'none', slot: 2 });
    expect(ops.txPorts).toEqual([2]);
    r.run([link(2, 'eth0'), link(9, 'eth1', { address: '02:00:00:00:00:03' })]);
    expect(ops.take()).toEqual(['attach eth1 9 auto']);
    expect(ops.txPorts).toEqual([2, 9]);
  });

  it('a device that goes down is detached but keeps its record and slot; up again, it is attached again', () => {
    const { ops, r } = setup();
    r.run([link(2, 'eth0'), link(3, 'eth1')]);
    ops.take();
    const st = r.run([link(2, 'eth0'), link(3, 'eth1', { flags: 0 })]);
    expect(ops.take()).toEqual(['unlink eth1']);
    expect(st.get('eth1')).toMatchObject({ attached: 'none', slot: 2 });
    expect(ops.txPorts).toEqual([2]);
    // while it is down, another program may take the hook: fibkeeper reports it, leaves it
    ops.hooks.set(3, { progIds: [77], mode: 'native' });
    const up = r.run([link(2, 'eth0'), link(3, 'eth1')]);
    expect(up.get('eth1')).toMatchObject({ attached: 'foreign', progId: 77 });
    ops.hooks.delete(3);
    r.run([link(2, 'eth0'), link(3, 'eth1')]);
    expect(ops.take()).toEqual(['attach eth1 3 auto']);
    expect(ops.records().find((x) => x.name === 'eth1')?.slot).toBe(2);
  });

  it('a device never seen up is never attached', () => {
    const { ops, r } = setup();
    const st = r.run([link(2, 'eth0', { flags: 0 })]);
    expect(ops.take()).toEqual([]);
    expect(st.size).toBe(0);
  });

  it('auto: a start that finds its program in generic mode tries native again, once', () => {
    const { ops, r } = setup();
    r.run([link(2, 'eth0')]);
    ops.hooks.get(2)!.mode = 'generic'; // what a run in generic mode (or a failed native attach) left
    ops.take();
    const restarted = new AttachPass(ops, setupCfg(), silentLogger());
    restarted.run([link(2, 'eth0')]);
    expect(ops.take()).toEqual(['unlink eth0', 'attach eth0 2 auto']);
    ops.hooks.get(2)!.mode = 'generic'; // the driver has no native mode after all
    restarted.run([link(2, 'eth0')]);
    expect(ops.take()).toEqual([]);
  });

  it("the program knows its device's MAC (destination check); a new MAC swaps the program", () => {
    const { ops, r } = setup();
    r.run([link(2, 'eth0')]);
    expect(ops.recs.get('eth0')?.cfg).toContain('"dmacCheck":true,"devMac":"02:00:00:00:00:02"');
    ops.take();
    r.run([link(2, 'eth0', { address: '02:00:00:00:aa:02' })]);
    expect(ops.take()).toEqual(['upgrade eth0']);
    expect(ops.recs.get('eth0')?.cfg).toContain('"devMac":"02:00:00:00:aa:02"');
  });

  it('a renamed device: its link moves to a record (and slot) of the new name', () => {
    const { ops, r } = setup();
    r.run([link(2, 'eth0'), link(3, 'eth1')]);
    ops.take();
    const st = r.run([link(2, 'eth0'), link(3, 'eth7')]);
    expect(ops.take()).toEqual(['zero 3', 'create eth7 slot=3', 'moveLink eth1 eth7']);
    expect(st.get('eth7')).toMatchObject({ ifindex: 3, attached: 'ours', slot: 3 });
    expect(st.get('eth1')).toMatchObject({ ifindex: 0, slot: 2 });
    // renamed to something not selected: ours, so detached
    r.run([link(2, 'eth0'), link(3, 'xyz')]);
    expect(ops.take()).toEqual(['unlink eth7']);
  });

  it('a present device that is no longer selected loses its record', () => {
    const { ops, r } = setup();
    r.run([link(2, 'eth0')]);
    ops.take();
    const other = new AttachPass(ops, { ...setupCfg(), devices: ['nothing'] }, silentLogger());
    other.run([link(2, 'eth0')]);
    expect(ops.take()).toEqual(['unlink eth0', 'remove eth0']);
    expect(ops.txPorts).toEqual([]);
  });

  it('a stale program (new object or config) is replaced in place, never re-attached', () => {
    const { ops, r } = setup();
    r.run([link(2, 'eth0')]);
    ops.take();
    ops.version = 2;
    r.run([link(2, 'eth0')]);
    expect(ops.take()).toEqual(['upgrade eth0']);
    const v6off = new AttachPass(ops, { ...setupCfg(), ipv6: false }, silentLogger());
    v6off.run([link(2, 'eth0')]);
    expect(ops.take()).toEqual(['upgrade eth0']);
  });

  it('an explicit mode different from the attached one re-attaches; auto tries native once, then accepts either', () => {
    const { ops, r } = setup();
    r.run([link(2, 'eth0')]);
    ops.take();
    new AttachPass(ops, { ...setupCfg(), mode: 'native' }, silentLogger()).run([link(2, 'eth0')]);
    expect(ops.take()).toEqual([]);
    new AttachPass(ops, { ...setupCfg(), mode: 'generic' }, silentLogger()).run([link(2, 'eth0')]);
    expect(ops.take()).toEqual(['unlink eth0', 'attach eth0 2 generic']);
    r.run([link(2, 'eth0')]);
    expect(ops.take()).toEqual(['unlink eth0', 'attach eth0 2 auto']);
    ops.hooks.get(2)!.mode = 'generic';
    r.run([link(2, 'eth0')]);
    expect(ops.take()).toEqual([]);
  });

  it('slots: 63 of their own, then the slot of a vanished device (zeroed), then the shared one', () => {
    const { ops, r } = setup();
    const links = Array.from({ length: 63 }, (_, i) => link(10 + i, `eth${i}`));
    r.run(links);
    expect(new Set(ops.records().map((x) => x.slot)).size).toBe(63);
    ops.take();
    ops.vanish(10);
    r.run([...links.slice(1), link(200, 'ethX')]);
    expect(ops.take()).toEqual([
      'unlink eth0',
      'remove eth0',
      'zero 1',
      'create ethX slot=1',
      'attach ethX 200 auto',
    ]);
    r.run([...links.slice(1), link(200, 'ethX'), link(201, 'ethY')]);
    expect(ops.take()).toEqual(['create ethY slot=0', 'attach ethY 201 auto']);
  });

  it('one failing device does not stop the others; it is retried on the next pass', () => {
    const { ops, r } = setup();
    ops.faulty.add('attach');
    const st = r.run([link(2, 'eth0'), link(3, 'eth1')]);
    expect(st.get('eth0')?.error).toBe('attach failed');
    expect(st.get('eth1')?.error).toBe('attach failed');
    ops.faulty.clear();
    ops.take();
    const ok = r.run([link(2, 'eth0'), link(3, 'eth1')]);
    expect(ops.take()).toEqual(['attach eth0 2 auto', 'attach eth1 3 auto']);
    expect([...ok.values()].every((d) => d.error === undefined && d.attached === 'ours')).toBe(
      true,
    );
  });
});

function setupCfg(): XdpForwarderConfig {
  return {
    devices: ['eth*'],
    holderName: 'eth-holder',
    mode: 'auto',
    pinDir: '/unused',
    keepOnStop: true,
    force: false,
    ipv6: true,
  };
}
