import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../errors/index.js';
import { parseIpLines } from '../config/index.js';
import { parseIp } from '../ipaddr/index.js';
import { ForwardableIPs, validateOwner } from './forwardable.js';
import { messageOf } from '../../test/helpers/errors.js';

function table(node: Record<string, string> = {}) {
  const f = new ForwardableIPs({ nodeAddresses: () => new Map(Object.entries(node)) });
  const heard: { added: string[]; removed: string[] }[] = [];
  f.setListener({
    changed: (added, removed) => heard.push({ added: [...added], removed: [...removed] }),
  });
  return { f, heard };
}

describe('ForwardableIPs', () => {
  it('takes IPs parsed at the edge, with the errors their text gets', () => {
    const { f } = table({ '10.0.0.1': 'eth0' });
    f.upsert('a', [parseIp('192.0.2.1'), '192.0.2.2']);
    expect(f.list().map((r) => r.ip)).toEqual(['192.0.2.1', '192.0.2.2']);
    const bad = ['10.0.0.1', '127.0.0.1', '192.0.2.3'];
    const fromText = messageOf(() => f.check(bad));
    expect(fromText).toMatch(/"10\.0\.0\.1": .*address of this node/);
    expect(messageOf(() => f.check(bad.map((t) => parseIp(t))))).toBe(fromText);
    f.delete('a', [parseIp('192.0.2.1')]);
    expect(f.list().map((r) => r.ip)).toEqual(['192.0.2.2']);
  });

  it('takes a bulk list checked at the edge as it is, refusing only node addresses', () => {
    const { f } = table({ '10.0.0.1': 'eth0' });
    const bulk = parseIpLines(['192.0.2.1', '10.0.0.1', '192.0.2.2', '192.0.2.1'], 'body', 'add');
    expect(messageOf(() => f.check(bulk))).toMatch(
      /^forwardable IP rejected: "10\.0\.0\.1": .*address of this node/,
    );
    expect(() => f.setOwner('a', bulk)).toThrow(/address of this node/);
    expect(f.size).toBe(0);
    const ok = parseIpLines(['192.0.2.1', '192.0.2.2', '192.0.2.1'], 'body', 'add');
    expect(f.check(ok)).toEqual(['192.0.2.1', '192.0.2.2']);
    f.setOwner('a', ok);
    expect(f.list().map((r) => r.ip)).toEqual(['192.0.2.1', '192.0.2.2']);
  });

  it('keys rows by canonical address: two spellings are one row', () => {
    const { f, heard } = table();
    f.upsert('a', ['2001:DB8::0:1', '192.0.2.1']);
    f.upsert('b', ['2001:db8:0:0::1']);
    expect(f.list().sort((x, y) => x.ip.localeCompare(y.ip))).toEqual([
      { ip: '192.0.2.1', family: 4, owners: ['a'] },
      { ip: '2001:db8::1', family: 6, owners: ['a', 'b'] },
    ]);
    expect(heard).toEqual([{ added: ['2001:db8::1', '192.0.2.1'], removed: [] }]);
  });

  it('keeps a row while it has an owner and drops it with the last one', () => {
    const { f, heard } = table();
    f.upsert('a', ['192.0.2.1']);
    f.upsert('b', ['192.0.2.1']);
    f.delete('a', ['192.0.2.1']);
    expect(f.get('192.0.2.1')?.owners).toEqual(['b']);
    f.delete('a', ['192.0.2.1']); // idempotent
    f.delete('b', ['192.0.2.1']);
    expect(f.size).toBe(0);
    expect(heard.at(-1)).toEqual({ added: [], removed: ['192.0.2.1'] });
    expect(f.index.size).toBe(0);
  });

  it('says what a call changed for its owner, not how many IPs it was given', () => {
    const { f } = table();
    expect(f.upsert('a', ['192.0.2.1', '192.0.2.2'])).toEqual({ added: 2, removed: 0 });
    expect(f.upsert('a', ['192.0.2.2', '192.0.2.3'])).toEqual({ added: 1, removed: 0 });
    expect(f.upsert('b', ['192.0.2.1'])).toEqual({ added: 1, removed: 0 }); // a row of a's
    expect(f.delete('c', ['192.0.2.1', '192.0.2.9'])).toEqual({ added: 0, removed: 0 });
    expect(f.delete('a', ['192.0.2.1', '192.0.2.9'])).toEqual({ added: 0, removed: 1 });
    expect(f.setOwner('a', ['192.0.2.3', '192.0.2.4'])).toEqual({ added: 1, removed: 1 });
  });

  it("setOwner replaces one owner's set atomically and leaves other owners alone", () => {
    const { f } = table();
    f.upsert('a', ['192.0.2.1', '192.0.2.2']);
    f.upsert('b', ['192.0.2.2']);
    f.setOwner('a', ['192.0.2.3', '192.0.2.2']);
    expect(f.ipsOf('a').sort()).toEqual(['192.0.2.2', '192.0.2.3']);
    expect(f.get('192.0.2.1')).toBeUndefined();
    f.setOwner('a', []);
    expect(f.list()).toEqual([{ ip: '192.0.2.2', family: 4, owners: ['b'] }]);
  });

  it('rejects the whole call when one IP is bad, naming each bad IP and why', () => {
    const { f } = table({ '10.0.0.1': 'eth0' });
    f.upsert('a', ['192.0.2.1']);
    const bad = [
      '192.0.2.9',
      '10.0.0.1',
      '127.0.0.1',
      'fe80::1',
      'x',
      '::ffff:1.2.3.4',
      'fe80::1%eth0',
    ];
    let err: unknown;
    try {
      f.setOwner('a', bad);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(InvalidArgumentError);
    const msg = (err as Error).message;
    expect(msg).toMatch(
      /^forwardable IPs rejected: "10\.0\.0\.1": .*address of this node \(on eth0\)/,
    );
    expect(msg).toContain('"127.0.0.1": 127.0.0.1 is a loopback address');
    expect(msg).toContain('"fe80::1":');
    expect(msg).toContain('and 3 more rejected');
    expect(f.list()).toEqual([{ ip: '192.0.2.1', family: 4, owners: ['a'] }]);
    expect(() => f.upsert('a', ['224.0.0.1'])).toThrow(/multicast/);
    expect(() => f.upsert('a', ['255.255.255.255'])).toThrow(/limited broadcast/);
    expect(() => f.upsert('a', ['0.0.0.0'])).toThrow(/unspecified/);
    expect(() => f.upsert('a', ['::'])).toThrow(/unspecified/);
  });

  it('lets an owner release an IP that has since become a node address', () => {
    const node = new Map<string, string>();
    const f = new ForwardableIPs({ nodeAddresses: () => node });
    f.upsert('a', ['10.0.0.5']);
    node.set('10.0.0.5', 'eth1');
    expect(() => f.upsert('b', ['10.0.0.5'])).toThrow(/address of this node/);
    f.delete('a', ['10.0.0.5']);
    expect(f.size).toBe(0);
  });

  it('validates owner names', () => {
    expect(validateOwner('xdp-miss')).toBe('xdp-miss');
    expect(() => validateOwner('')).toThrow(InvalidArgumentError);
    expect(() => validateOwner('a b')).toThrow(/not a valid owner/);
    const { f } = table();
    expect(() => f.upsert('-x', ['192.0.2.1'])).toThrow(/owner/);
  });

  it('answers which forwardable IPs a prefix covers', () => {
    const { f } = table();
    f.upsert('a', ['10.1.0.5', '10.1.0.6', '10.2.0.1', '2001:db8::5']);
    expect(f.index.covered('10.1.0.0/24')).toEqual(['10.1.0.5', '10.1.0.6']);
    expect(f.index.covered('2001:db8::/64')).toEqual(['2001:db8::5']);
  });

  it('indexes a bulk load in slices; a delete meanwhile indexes nothing; a query the rest', () => {
    const { f } = table();
    const ips = Array.from({ length: 1000 }, (_, i) => `10.1.${i >> 8}.${i & 255}`);
    f.setOwner('a', ips);
    expect(f.unindexed).toBe(1000);
    f.delete('a', ['10.1.0.5']); // not this.index: the 999 others stay waiting
    expect(f.unindexed).toBe(1000);
    expect(f.indexSome(300)).toBe(true);
    expect(f.unindexed).toBe(700);
    f.delete('a', ['10.1.0.7', '10.1.3.200']); // one indexed, one waiting
    f.upsert('a', ['10.1.0.5']); // back, behind the others
    expect(f.index.covered('10.1.0.0/29')).toEqual([
      '10.1.0.0',
      '10.1.0.1',
      '10.1.0.2',
      '10.1.0.3',
      '10.1.0.4',
      '10.1.0.5',
      '10.1.0.6',
    ]);
    expect(f.unindexed).toBe(0);
    expect(f.index.covered('10.1.3.192/28')).toHaveLength(15); // .200 gone
    expect(f.indexSome(100)).toBe(false);
  });
});
