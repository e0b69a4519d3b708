import { describe, expect, it } from 'vitest';
import { parseFaultSpec } from './faults.js';

describe('FIBKEEPER_TEST_FAULTS', () => {
  it('parses classes, rate, sockets, lengths, phase and the health timings', () => {
    expect(
      parseFaultSpec(
        'classes=EINVAL+timeout,rate=0.01,sockets=netlink,seed=3,deafMs=500,delayMs=10,phase=ready,probeMs=100,silentMs=300,liveMs=900',
      ),
    ).toEqual({
      classes: ['EINVAL', 'timeout'],
      rate: 0.01,
      sockets: ['netlink'],
      seed: 3,
      stormMs: 50,
      deafMs: 500,
      hangMs: 2000,
      delayMs: 10,
      phase: 'ready',
      health: { intervalMs: 100, deafMs: 300, livenessMs: 900 },
    });
  });

  it('names what is wrong', () => {
    expect(() => parseFaultSpec('classes=EPERM')).toThrow(/unknown class EPERM \(one of EINVAL/);
    expect(() => parseFaultSpec('sockets=tcp')).toThrow(/sockets are netlink, packet/);
    expect(() => parseFaultSpec('rate=2')).toThrow(/bad "rate=2"/);
    expect(() => parseFaultSpec('phase=later')).toThrow(/bad "phase=later"/);
  });
});
