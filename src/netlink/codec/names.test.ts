import { describe, expect, it } from 'vitest';
import * as C from './constants.js';
import {
  linkFlagNames,
  neighFlagNames,
  nudStateNames,
  operstateName,
  protocolName,
  routeTypeName,
  scopeName,
  tableName,
} from './names.js';

describe('names as ip prints them', () => {
  it('link flags, with NO-CARRIER for up-without-running', () => {
    expect(linkFlagNames(C.IFF_UP | C.IFF_BROADCAST | C.IFF_MULTICAST)).toEqual([
      'NO-CARRIER',
      'BROADCAST',
      'MULTICAST',
      'UP',
    ]);
    expect(linkFlagNames(C.IFF_UP | C.IFF_RUNNING | C.IFF_LOOPBACK | C.IFF_LOWER_UP)).toEqual([
      'LOOPBACK',
      'UP',
      'LOWER_UP',
    ]);
  });

  it('neighbor states and flags', () => {
    expect(nudStateNames(0)).toEqual(['NONE']);
    expect(nudStateNames(C.NUD_REACHABLE)).toEqual(['REACHABLE']);
    expect(nudStateNames(C.NUD_STALE | C.NUD_PROBE)).toEqual(['STALE', 'PROBE']);
    expect(neighFlagNames(C.NTF_EXT_LEARNED | C.NTF_ROUTER, C.NTF_EXT_MANAGED)).toEqual([
      'managed',
      'router',
      'extern_learn',
    ]);
  });

  it('enums, numbers for unnamed values', () => {
    expect(operstateName(C.IF_OPER_LOWERLAYERDOWN)).toBe('LOWERLAYERDOWN');
    expect(operstateName(42)).toBe('42');
    expect(protocolName(C.RTPROT_ZEBRA)).toBe('zebra');
    expect(protocolName(153)).toBe('153');
    expect(routeTypeName(C.RTN_BROADCAST)).toBe('broadcast');
    expect(scopeName(C.RT_SCOPE_LINK)).toBe('link');
    expect(tableName(C.RT_TABLE_MAIN)).toBe('main');
    expect(tableName(1000)).toBe('1000');
  });
});
