import { describe, expect, it } from 'vitest';
import { parseIp, parseMac } from '../ipaddr/index.js';
import { buildArpProbe } from './frames.js';
import { DAD_NS_FRAME_LEN, buildDadSolicit, decodeNeighborSolicit, solicitedNode } from './ndp.js';

const MAC = '02:00:5e:00:53:01';
const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex');

function messageOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('expected an error, got none');
}

describe('duplicate address detection probes', () => {
  it('ARP probe (RFC 5227 2.1.1): hand-computed bytes', () => {
    expect(buildArpProbe({ ip: '192.0.2.10', mac: MAC })).toEqual(
      hex(`ffffffffffff 02005e005301 0806
           0001 0800 06 04 0001
           02005e005301 00000000
           000000000000 c000020a`),
    );
    expect(messageOf(() => buildArpProbe({ ip: '2001:db8::1', mac: MAC }))).toMatch(/IPv6/);
  });

  it('NS from :: (RFC 4862 5.4.2) with a nonce (RFC 7527): hand-computed bytes, decoded back', () => {
    const nonce = Buffer.from('0102030405a6', 'hex');
    const f = buildDadSolicit({ ip: parseIp('2001:db8::1:abcd'), mac: parseMac(MAC), nonce });
    expect(f).toHaveLength(DAD_NS_FRAME_LEN);
    // The checksum 0xdd9c was computed separately (Python, struct over the pseudo-header).
    expect(f).toEqual(
      hex(`3333ff01abcd 02005e005301 86dd
           60000000 0020 3a ff
           00000000000000000000000000000000
           ff0200000000000000000001ff01abcd
           87 00 dd9c 00000000
           20010db8000000000000000000 01abcd
           0e 01 0102030405a6`),
    );
    expect(decodeNeighborSolicit(f)).toEqual({
      ethSrc: MAC,
      srcIp: '::',
      dstIp: 'ff02::1:ff01:abcd',
      target: '2001:db8::1:abcd',
      sourceMac: undefined,
      nonce,
    });
    expect(solicitedNode(parseIp('2001:db8::1:abcd').bytes).toString('hex')).toBe(
      'ff0200000000000000000001ff01abcd',
    );
  });
});
