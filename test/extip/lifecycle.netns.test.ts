// Assign/unassign idempotence, repair after others change the holder, restart with
// adoption, IPv6 DAD on the holder, bad input, and the holder kinds, against the real
// kernel as `ip -j` shows it.
import { spawnSync } from 'node:child_process';
import { describe, expect, it, onTestFinished } from 'vitest';
import { ExternalIpSubsystem, decodeFrame } from '../../src/extip/index.js';
import { silentLogger } from '../../src/log/index.js';
import { NetlinkHandle, type SubscriptionEvent } from '../../src/netlink/index.js';
import { ip, ipJson, privileged, sysctl, waitFor } from '../helpers/netns.js';
import {
  NODE_V4,
  NODE_V6,
  capture,
  framesMatching,
  holderAddrs,
  makeLab,
  metric,
  startExtip,
  testConfig,
} from './lab.js';

const { skip } = privileged();

const isNa = (target: string) => (f: Buffer) => {
  const d = decodeFrame(f);
  return d.kind === 'na' && d.target === target;
};

describe.skipIf(skip)('assign and unassign', () => {
  it('unassign removes; repeated assign/unassign are idempotent', async () => {
    const lab = await makeLab('xlu');
    const { extip, registry } = await startExtip(lab.node);
    await extip.assign(['10.20.0.101', '2001:db8:20::101']);
    await extip.assign(['10.20.0.101', '2001:db8:20::101']);
    expect(holderAddrs(lab.node)).toEqual(['10.20.0.101/32', '2001:db8:20::101/128 nodad']);
    await extip.unassign(['10.20.0.101']);
    await extip.unassign(['10.20.0.101', '10.20.0.199']); // absent: success
    expect(holderAddrs(lab.node)).toEqual(['2001:db8:20::101/128 nodad']);
    expect(extip.list().map((s) => s.ip)).toEqual(['2001:db8:20::101']);
    // an address put there by hand first: EEXIST is success
    ip(lab.node, 'addr', 'add', '10.20.0.102/32', 'dev', 'fkx0');
    await extip.assign(['10.20.0.102']);
    expect(extip.list().find((s) => s.ip === '10.20.0.102')?.state).toBe('assigned');
    expect(await metric(registry, 'fibkeeper_extip_errors_total', { op: 'assign' })).toBe(0);
    expect(await metric(registry, 'fibkeeper_extip_assigned', { family: 'ipv4' })).toBe(1);
    expect(await metric(registry, 'fibkeeper_extip_assigned', { family: 'ipv6' })).toBe(1);
  });

  it('concurrent assign/unassign calls end in the state of their call order', async () => {
    const lab = await makeLab('xlc');
    const { extip } = await startExtip(lab.node, testConfig({ announceCount: 1 }));
    const pool = Array.from({ length: 8 }, (_, i) => `10.20.0.${110 + i}`);
    const serial = new Set<string>();
    const calls: Promise<void>[] = [];
    let seed = 7;
    const rnd = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    for (let k = 0; k < 60; k++) {
      const ips = pool.filter(() => rnd(3) === 0);
      if (ips.length === 0) continue;
      const want = rnd(2) === 0;
      calls.push(want ? extip.assign(ips) : extip.unassign(ips));
      for (const x of ips) want ? serial.add(x) : serial.delete(x);
      if (rnd(4) === 0) await new Promise((r) => setImmediate(r));
    }
    await Promise.all(calls);
    const want = [...serial].sort().map((x) => `${x}/32`);
    expect(holderAddrs(lab.node)).toEqual(want);
    expect(extip.list().map((s) => `${s.ip}/32`)).toEqual([...want].sort());
  });
});

describe.skipIf(skip)('repair', () => {
  it('an address deleted with ip addr del comes back at once; counted', async () => {
    const lab = await makeLab('xra');
    const { extip, registry } = await startExtip(lab.node);
    await extip.assign(['10.20.0.120', '2001:db8:20::120']);
    ip(lab.node, 'addr', 'del', '10.20.0.120/32', 'dev', 'fkx0');
    ip(lab.node, 'addr', 'del', '2001:db8:20::120/128', 'dev', 'fkx0');
    await waitFor(() => holderAddrs(lab.node).length === 2, { what: 'the addresses back' });
    expect(holderAddrs(lab.node)).toEqual(['10.20.0.120/32', '2001:db8:20::120/128 nodad']);
    await waitFor(
      async () =>
        (await metric(registry, 'fibkeeper_extip_repairs_total', { kind: 'address' })) === 2,
    );
  });

  it('the holder deleted is recreated with all its IPs; counted once', async () => {
    const lab = await makeLab('xrh');
    const { extip, registry } = await startExtip(lab.node);
    await extip.assign(['10.20.0.121', '10.20.0.122', '2001:db8:20::121']);
    const before = ipJson<{ ifindex: number }[]>(lab.node, 'link', 'show', 'dev', 'fkx0')[0]!
      .ifindex;
    ip(lab.node, 'link', 'del', 'fkx0');
    await waitFor(() => holderAddrs(lab.node).length === 3, { what: 'the holder refilled' });
    const link = ipJson<{ ifindex: number; flags: string[]; linkinfo?: { info_kind: string } }[]>(
      lab.node,
      '-d',
      'link',
      'show',
      'dev',
      'fkx0',
    )[0]!;
    expect(link.ifindex).not.toBe(before);
    expect(link.flags).toContain('UP');
    expect(link.linkinfo?.info_kind).toBe('bridge');
    expect(holderAddrs(lab.node)).toEqual([
      '10.20.0.121/32',
      '10.20.0.122/32',
      '2001:db8:20::121/128 nodad',
    ]);
    expect(await metric(registry, 'fibkeeper_extip_repairs_total', { kind: 'holder' })).toBe(1);
    expect(extip.holder.ifindex).toBe(link.ifindex);
    await waitFor(() => extip.list().every((s) => s.state === 'assigned'));
  });

  it('the holder set down is set up again (counted); the periodic check runs and finds all in place', async () => {
    const lab = await makeLab('xrd');
    const { extip, registry } = await startExtip(lab.node, testConfig({ checkInterval: 300 }));
    await extip.assign(['10.20.0.123']);
    ip(lab.node, 'link', 'set', 'fkx0', 'down');
    await waitFor(() =>
      ipJson<{ flags: string[] }[]>(lab.node, 'link', 'show', 'dev', 'fkx0')[0]!.flags.includes(
        'UP',
      ),
    );
    // Counted once the set-up request is answered, which can be just after `ip` sees it up.
    await waitFor(
      async () =>
        (await metric(registry, 'fibkeeper_extip_repairs_total', { kind: 'holder-up' })) >= 1,
    );
    expect(await metric(registry, 'fibkeeper_extip_repairs_total', { kind: 'holder-up' })).toBe(1);
    await waitFor(
      async () =>
        (await metric(registry, 'fibkeeper_extip_resyncs_total', { reason: 'periodic' })) >= 1,
    );
    expect(holderAddrs(lab.node)).toEqual(['10.20.0.123/32']);
  });

  it('one holder set down is one repair, however many link events say it is down', async () => {
    const lab = await makeLab('xrm');
    const { extip, registry } = await startExtip(lab.node, testConfig({ checkInterval: 300 }));
    await extip.assign(['10.20.0.124']);
    // Two events with the holder down, read in one batch (as a feed's replay after a dump
    // can also bring an older one): one set-up is needed, and one is counted.
    spawnSync('ip', ['-n', lab.node, '-batch', '-'], {
      input: 'link set fkx0 down\nlink set fkx0 mtu 1400\nlink set fkx0 mtu 1300\n',
    });
    await waitFor(
      async () =>
        (await metric(registry, 'fibkeeper_extip_repairs_total', { kind: 'holder-up' })) >= 1,
    );
    // Two periodic checks later (each compares against a fresh dump), still one.
    const checks = await metric(registry, 'fibkeeper_extip_resyncs_total', { reason: 'periodic' });
    await waitFor(
      async () =>
        (await metric(registry, 'fibkeeper_extip_resyncs_total', { reason: 'periodic' })) >=
        checks + 2,
    );
    expect(
      ipJson<{ flags: string[] }[]>(lab.node, 'link', 'show', 'dev', 'fkx0')[0]!.flags,
    ).toContain('UP');
    expect(await metric(registry, 'fibkeeper_extip_repairs_total', { kind: 'holder-up' })).toBe(1);
  });
});

describe.skipIf(skip)('the holder does no DAD of its own', () => {
  it('IPv6 external IPs are added nodad even where accept_dad is on; probed on ext0 instead', async () => {
    const lab = await makeLab('xdd');
    sysctl(lab.node, 'net.ipv6.conf.default.accept_dad', 1); // for the holder created next
    const cap = capture(lab.peer, 'peer0');
    const { extip } = await startExtip(lab.node);
    await extip.assign(['2001:db8:20::180']);
    expect(holderAddrs(lab.node)).toEqual(['2001:db8:20::180/128 nodad']);
    expect(extip.list()[0]?.state).toBe('assigned');
    await framesMatching(cap, isNa('2001:db8:20::180'), 1);
  });
});

describe.skipIf(skip)('restart', () => {
  it('adopts what is on the holder, removes nothing during start-up, prunes after setDesired', async () => {
    const lab = await makeLab('xrs');
    const first = await startExtip(lab.node);
    await first.extip.assign(['10.20.0.130', '10.20.0.131', '2001:db8:20::130']);
    await first.extip.stop();
    expect(holderAddrs(lab.node)).toHaveLength(3); // stop leaves them

    const nl = NetlinkHandle.open({ netns: lab.node });
    onTestFinished(() => nl.close());
    const events: SubscriptionEvent[] = [];
    const sub = nl.subscribe(['address', 'link'], { onEvent: (ev) => events.push(ev) });
    onTestFinished(() => sub.close());
    const second = await startExtip(lab.node);
    expect(second.extip.list().map((s) => [s.ip, s.state, s.adopted])).toEqual([
      ['10.20.0.130', 'assigned', true],
      ['10.20.0.131', 'assigned', true],
      ['2001:db8:20::130', 'assigned', true],
    ]);
    // a full check after start-up (its dump is answered after every request the start made),
    // then a marker address: once its event is here, every event before it is too
    await second.extip.check();
    ip(lab.node, 'addr', 'add', '10.20.0.98/32', 'dev', 'ext0');
    await waitFor(() =>
      events.some(
        (e) => e.kind === 'new' && e.object === 'address' && e.msg.local === '10.20.0.98',
      ),
    );
    expect(events.filter((e) => e.kind === 'del')).toEqual([]);
    expect(holderAddrs(lab.node)).toHaveLength(3);
    await second.extip.setDesired(['10.20.0.131', '10.20.0.132']);
    expect(holderAddrs(lab.node)).toEqual(['10.20.0.131/32', '10.20.0.132/32']);
    expect(second.extip.list().map((s) => [s.ip, s.adopted])).toEqual([
      ['10.20.0.131', false],
      ['10.20.0.132', false],
    ]);
  });
});

describe.skipIf(skip)('bad input', () => {
  it('rejects with a clear error naming the IP and changes nothing', async () => {
    const lab = await makeLab('xbi');
    const { extip } = await startExtip(lab.node);
    await extip.assign(['10.20.0.140']);
    const cases: [string, RegExp][] = [
      ['not-an-ip', /"not-an-ip".*not an IP address/i],
      ['10.20.0.300', /10\.20\.0\.300/],
      ['127.0.0.5', /loopback/],
      ['::1', /loopback/],
      ['224.0.0.7', /multicast/],
      ['ff02::7', /multicast/],
      ['0.0.0.0', /unspecified/],
      ['255.255.255.255', /broadcast/],
      ['fe80::7', /link-local/],
      ['fe80::7%ext0', /zone/i],
      ['::ffff:10.20.0.141', /IPv4-mapped.*use the IPv4 address 10\.20\.0\.141/],
      [NODE_V4, /address of this node \(on ext0\)/],
      [NODE_V6, /address of this node \(on ext0\)/],
      ['10.20.0.141/32', /prefix/i],
    ];
    for (const [bad, why] of cases) {
      const err = await extip.assign(['10.20.0.150', bad]).catch((e: unknown) => e);
      expect(err, bad).toMatchObject({ code: 'FIBKEEPER_ERR_INVALID_ARGUMENT' });
      expect((err as Error).message, bad).toMatch(why);
      expect((err as Error).message, bad).toContain('assign: external IP');
    }
    await expect(extip.unassign(['10.20.0.140', 'garbage'])).rejects.toThrow(/garbage/);
    expect(holderAddrs(lab.node)).toEqual(['10.20.0.140/32']); // nothing applied
  });

  it('rejects IPv6 (out of family) when IPv6 is disabled on the external interface', async () => {
    const lab = await makeLab('xbf');
    ip(lab.node, 'link', 'set', 'ext0', 'down'); // the sysctl is per interface
    const { nsExec } = await import('../helpers/netns.js');
    nsExec(lab.node, 'sysctl', '-qw', 'net.ipv6.conf.ext0.disable_ipv6=1');
    ip(lab.node, 'link', 'set', 'ext0', 'up');
    const { extip } = await startExtip(lab.node);
    await expect(extip.assign(['2001:db8:20::150'])).rejects.toThrow(
      /is IPv6, but IPv6 is disabled on the external interface ext0/,
    );
    await extip.assign(['10.20.0.150']);
    expect(holderAddrs(lab.node)).toEqual(['10.20.0.150/32']);
  });
});

describe.skipIf(skip)('holder kinds', () => {
  it('dummy (missing on this kernel) gives the error that names extip.holderKind', async () => {
    const lab = await makeLab('xhd');
    const probe = (() => {
      try {
        ip(lab.node, 'link', 'add', 'fkprobe0', 'type', 'dummy');
        ip(lab.node, 'link', 'del', 'fkprobe0');
        return true;
      } catch {
        return false;
      }
    })();
    const extip = new ExternalIpSubsystem({
      netns: lab.node,
      config: testConfig({ holderKind: 'dummy' }),
      log: silentLogger(),
    });
    onTestFinished(() => extip.stop());
    if (probe) {
      await extip.start(); // a kernel with dummy: it just works
      expect(ipJson(lab.node, '-d', 'link', 'show', 'dev', 'fkx0')).toMatchObject([
        { linkinfo: { info_kind: 'dummy' } },
      ]);
      return;
    }
    const err = await extip.start().catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'FIBKEEPER_ERR_NOT_SUPPORTED' });
    expect((err as Error).message).toBe(
      'cannot create the holder device fkx0: this kernel has no "dummy" link type (not built, or its module cannot be loaded); set extip.holderKind to "bridge" (a bridge with no ports) or "ifb"',
    );
    expect(ipJson(lab.node, 'link', 'show')).not.toContainEqual(
      expect.objectContaining({ ifname: 'fkx0' }),
    );
    expect(extip.ready().ok).toBe(false);
  });

  it('bridge and ifb work; an existing holder is adopted, not recreated', async () => {
    const lab = await makeLab('xhk');
    for (const kind of ['bridge', 'ifb'] as const) {
      const name = `fk${kind}0`;
      const { extip } = await startExtip(
        lab.node,
        testConfig({ holderKind: kind, holderName: name }),
      );
      await extip.assign(['10.20.0.160']);
      expect(holderAddrs(lab.node, name)).toEqual(['10.20.0.160/32']);
      const index = ipJson<{ ifindex: number }[]>(lab.node, 'link', 'show', 'dev', name)[0]!
        .ifindex;
      await extip.stop();
      const again = await startExtip(lab.node, testConfig({ holderKind: kind, holderName: name }));
      expect(ipJson<{ ifindex: number }[]>(lab.node, 'link', 'show', 'dev', name)[0]!.ifindex).toBe(
        index,
      );
      expect(again.extip.list().map((s) => s.ip)).toEqual(['10.20.0.160']);
      await again.extip.setDesired([]);
      expect(holderAddrs(lab.node, name)).toEqual([]);
    }
  });

  it('refuses a device of that name it cannot own (a veth, a bridge with ports)', async () => {
    // (The holder named like the external interface is refused when the config is read:
    // src/config/sections.test.ts.)
    const lab = await makeLab('xho');
    ip(lab.node, 'link', 'add', 'br9', 'type', 'bridge');
    ip(lab.node, 'link', 'add', 'p9', 'master', 'br9', 'type', 'veth', 'peer', 'name', 'p9b');
    const x = new ExternalIpSubsystem({
      netns: lab.node,
      config: testConfig({ holderName: 'br9' }),
      log: silentLogger(),
    });
    onTestFinished(() => x.stop());
    await expect(x.start()).rejects.toThrow(/the bridge br9 has ports \(p9\)/);
    const y = new ExternalIpSubsystem({
      netns: lab.node,
      config: testConfig({ holderName: 'p9b' }),
      log: silentLogger(),
    });
    onTestFinished(() => y.stop());
    await expect(y.start()).rejects.toThrow(/p9b exists and is of type veth/);
  });

  it('finds the external interface from the node IP (IPv4 or IPv6)', async () => {
    const lab = await makeLab('xhn');
    for (const nodeIP of [NODE_V4, NODE_V6]) {
      const { extip } = await startExtip(lab.node, testConfig({ interface: '', nodeIP }));
      expect(extip.externalInterface?.name).toBe('ext0');
      await extip.stop();
    }
    const x = new ExternalIpSubsystem({
      netns: lab.node,
      config: testConfig({ interface: '', nodeIP: '10.99.0.1' }),
      log: silentLogger(),
    });
    onTestFinished(() => x.stop());
    await expect(x.start()).rejects.toThrow(
      /extip.nodeIP: no device of this node carries 10\.99\.0\.1/,
    );
  });
});
