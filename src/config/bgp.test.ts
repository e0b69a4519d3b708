// The bgp.* checks: every bad value refused with the option named, before anything starts.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildConfig, checkRunnable, parseBgpIpAttributes, parseBgpPeer } from './index.js';

const base = {
  extip: { enabled: true, interface: 'eth0' },
  bgp: { enabled: true, asn: 65001, peers: ['10.0.0.1 as 65000'] },
};
const check = (bgp: Record<string, unknown>, extip: Record<string, unknown> = base.extip) =>
  checkRunnable(buildConfig(JSON.stringify({ ...base, extip, bgp: { ...base.bgp, ...bgp } })));

describe('bgp options', () => {
  it('parses a peer entry with every word', () => {
    expect(
      parseBgpPeer(
        'fd00::1 as 4200000000 port 1179 source fd00::2 multihop password-file /x bfd off',
      ),
    ).toEqual({
      address: 'fd00::1',
      family: 6,
      asn: 4200000000,
      port: 1179,
      source: 'fd00::2',
      multihop: 64,
      passwordFile: '/x',
      bfd: false,
    });
  });

  it('parses per-IP attributes and refuses bad ones, naming the option', () => {
    expect(
      parseBgpIpAttributes('2001:DB8::0010 community 1:2 community 3:4 local-preference 5'),
    ).toEqual({
      ip: '2001:db8::10',
      communities: ['1:2', '3:4'],
      largeCommunities: [],
      localPreference: 5,
    });
    for (const [ipAttributes, msg] of [
      [['192.0.2.1'], /name at least one attribute/],
      [['192.0.2.1 community 70000:1'], /not a community/],
      [['192.0.2.1 local-preference x'], /local-preference must be a whole number/],
      [['192.0.2.1 colour red'], /unknown word "colour"/],
      [['nope community 1:1'], /not an IP address/],
      [['192.0.2.1 community 1:1', '192.0.2.1 community 1:2'], /192.0.2.1 is listed twice/],
    ] as const) {
      expect(() => check({ ipAttributes }), ipAttributes.join()).toThrow(msg);
      expect(() => check({ ipAttributes }), ipAttributes.join()).toThrow(/bgp.ipAttributes/);
    }
  });

  it('accepts a minimal configuration', () => {
    expect(() => check({})).not.toThrow();
  });

  it.each([
    [{ asn: 0 }, /bgp\.asn: set the node's AS number/],
    [{ peers: [] }, /bgp\.peers: list at least one peer/],
    [
      { peers: ['10.0.0.1'] },
      /bgp\.peers: "10\.0\.0\.1": the peer address must be followed by "as ASN" \(syntax: /,
    ],
    [{ peers: ['10.0.0.300 as 1'] }, /bgp\.peers: .*is not an IP address/],
    [{ peers: ['10.0.0.1 as 0'] }, /the AS number must be a whole number from 1 to 4294967295/],
    [{ peers: ['10.0.0.1 as 1 source fd00::1'] }, /source fd00::1 is not IPv4/],
    [{ peers: ['10.0.0.1 as 1 bfd maybe'] }, /bfd must be on or off, not "maybe"/],
    [{ peers: ['10.0.0.1 as 1 hold 3'] }, /unknown word "hold"/],
    [{ peers: ['10.0.0.1 as 1', '10.0.0.1 as 2'] }, /10\.0\.0\.1 is listed twice/],
    [
      { peers: ['10.0.0.1 as 1 password-file /nonexistent/pw'] },
      /password file \/nonexistent\/pw: ENOENT/,
    ],
    [
      { communities: ['65000:70000'] },
      /bgp\.communities: "65000:70000" is not a community \(ASN:VALUE, each 0-65535\)/,
    ],
    [{ communities: ['abc'] }, /bgp\.communities: "abc" is not a community/],
    [{ largeCommunities: ['1:2'] }, /bgp\.largeCommunities: "1:2" is not a large community/],
    [{ routerId: 'fd00::1' }, /bgp\.routerId: "fd00::1" is not an IPv4 address/],
    [{ holdTime: '3500ms' }, /bgp\.holdTime: must be whole seconds/],
  ])('refuses %j', (bgp, msg) => {
    expect(() => check(bgp)).toThrow(msg);
    try {
      check(bgp);
    } catch (err) {
      expect((err as { code: string }).code).toBe('FIBKEEPER_ERR_CONFIG');
    }
  });

  it('needs external IPs', () => {
    expect(() => check({}, { enabled: false })).toThrow(/bgp\.enabled: .*set extip\.enabled: true/);
  });

  it('reads the secret of a password file, and refuses an empty one', () => {
    const dir = mkdtempSync(join(tmpdir(), 'fk-bgp-pw-'));
    try {
      writeFileSync(join(dir, 'ok'), 's3cret\n');
      writeFileSync(join(dir, 'empty'), '\n');
      expect(() => check({ peers: [`10.0.0.1 as 1 password-file ${dir}/ok`] })).not.toThrow();
      expect(() => check({ peers: [`10.0.0.1 as 1 password-file ${dir}/empty`] })).toThrow(
        /the first line must hold the secret/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
