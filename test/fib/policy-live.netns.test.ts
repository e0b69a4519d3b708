// A policy added and removed while traffic flows through the router: within the bound the
// README states (POLICY_BOUNDS), the forwarder counts the traffic under the policy's reason;
// from then on no frame is forwarded in XDP (its redirect counter stands still while the
// reason counter moves on by 100 more frames) and none reaches the server past the drop;
// once the policy is gone, XDP forwards again within the same bound. And an agent that stops:
// XDP forwards WATCH_MS longer (a restart is quicker), then every frame goes to the kernel
// until an agent is back. Measured on the forwarder's counters, never by sleeping.
import { performance } from 'node:perf_hooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  POLICY_BOUNDS,
  WATCH_MS,
  XdpForwarder,
  decodeStats,
  pinPaths,
} from '../../src/fib/index.js';
import { BpfMap } from '../../src/native/index.js';
import { silentLogger } from '../../src/log/index.js';
import { cleanupLater, privateBpffs } from '../helpers/cleanup.js';
import { privileged } from '../helpers/netns.js';
import { f4 } from './corpus/case.js';
import { nft, sh, shQuiet } from './corpus/cases-policy.js';
import { makeDiffLab, type DiffLab } from './corpus/lab.js';
import type { Ctrs } from './corpus/report.js';
import { tcDropObject } from './corpus/tcprog.js';

const { skip } = privileged();

const u32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n);
  return b;
};

interface Change {
  name: string;
  add: (lab: DiffLab) => void;
  remove: (lab: DiffLab) => void;
  reason: string;
  boundMs: number;
}

const CHANGES: Change[] = [
  {
    name: 'an nft forward drop',
    add: (lab) =>
      nft(lab, 'table inet live { chain f { type filter hook forward priority 0; policy drop; } }'),
    remove: (lab) => sh(lab, 'nft delete table inet live'),
    reason: 'netfilter',
    boundMs: POLICY_BOUNDS.eventMs,
  },
  {
    name: 'a tc ingress filter that drops',
    add: (lab) =>
      sh(
        lab,
        `tc qdisc add dev r1 clsact; tc filter add dev r1 ingress bpf da obj ${tcDropObject()} sec tc`,
      ),
    remove: (lab) => sh(lab, 'tc qdisc del dev r1 clsact'),
    reason: 'tc',
    boundMs: POLICY_BOUNDS.eventMs,
  },
  {
    name: 'an iptables-legacy FORWARD DROP (polled)',
    add: (lab) => sh(lab, 'iptables-legacy -w -A FORWARD -j DROP'),
    remove: (lab) => sh(lab, 'iptables-legacy -w -D FORWARD -j DROP'),
    reason: 'netfilter',
    boundMs: POLICY_BOUNDS.pollMs,
  },
];

async function until(what: string, ok: () => boolean, ms: number): Promise<number> {
  const t0 = performance.now();
  while (!ok()) {
    if (performance.now() - t0 > ms) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
  return performance.now() - t0;
}

describe.skipIf(skip)('a policy change while traffic flows', () => {
  let lab: DiffLab;
  let x: XdpForwarder;
  let timer: NodeJS.Timeout | undefined;

  let pinDir: string;
  const forwarder = () =>
    new XdpForwarder({
      netns: lab.router,
      config: {
        ...{ devices: ['r1', 'r2', 'r3', 'r4'], holderName: 'fk-holder', mode: 'auto' as const },
        ...{ pinDir, keepOnStop: true, force: false, ipv6: true },
      },
      log: silentLogger(),
      resyncIntervalMs: 0,
    });

  beforeAll(async () => {
    lab = makeDiffLab('live');
    pinDir = privateBpffs();
    tcDropObject();
    x = forwarder();
    await x.start();
    // about one frame a millisecond, client to server, for as long as the file runs
    const frame = f4();
    timer = setInterval(() => {
      for (let i = 0; i < 2; i++) lab.transmit(frame);
    }, 2);
  });

  afterAll(async () => {
    clearInterval(timer);
    await x?.detach();
  });

  const r1 = () => x.counters().find((d) => d.device === 'r1') as Ctrs;
  const redirected = () => r1().actions.redirect?.packets ?? 0;
  const passed = (reason: string) => r1().reasons[reason]?.packets ?? 0;

  for (const ch of CHANGES) {
    it(`${ch.name}: applied within ${ch.boundMs} ms, no frame bypasses it, XDP resumes when it goes`, async () => {
      const r0 = redirected();
      await until('XDP forwards the traffic', () => redirected() > r0 + 20, 5000);
      const p0 = passed(ch.reason);
      const tAdd = performance.now();
      ch.add(lab);
      const done = performance.now();
      const applied = await until(
        `frames counted under ${ch.reason}`,
        () => passed(ch.reason) > p0,
        ch.boundMs + 1000,
      );
      const bypassed = redirected();
      const atServer = lab.received('s0');
      console.log(
        `${ch.name}: command took ${(done - tAdd).toFixed(1)} ms, applied ${applied.toFixed(1)} ms after it (bound ${ch.boundMs} ms)`,
      );
      expect(applied).toBeLessThan(ch.boundMs);
      // from now on: 100 more frames, every one to the kernel, none forwarded, none delivered
      const p1 = passed(ch.reason);
      await until('100 more frames counted', () => passed(ch.reason) >= p1 + 100, 5000);
      expect(redirected()).toBe(bypassed);
      expect(lab.received('s0')).toBe(atServer);
      // the policy goes: XDP forwards again
      ch.remove(lab);
      const resumed = await until(
        'XDP forwards again',
        () => redirected() > bypassed,
        ch.boundMs + 1000,
      );
      console.log(`${ch.name}: removed, XDP forwarding again ${resumed.toFixed(1)} ms later`);
      expect(resumed).toBeLessThan(ch.boundMs);
      await until('the server receives again', () => lab.received('s0') > atServer, 2000);
    });
  }

  it('leaves no policy behind', () => {
    shQuiet(lab, 'nft delete table inet live; tc qdisc del dev r1 clsact');
    expect(x.health()).toEqual({ ok: true, reasons: [] });
  });

  it(`an agent that stops watching: XDP forwards for ${WATCH_MS} ms more, then the kernel, until an agent is back`, async () => {
    // the pinned counters, read without an agent
    const stats = BpfMap.fromPinned(`${pinPaths(pinDir, lab.router).maps}/fk_stats`);
    cleanupLater(() => stats.close());
    const slot = x.status().find((d) => d.name === 'r1')?.slot ?? 0;
    const pinned = () => decodeStats(stats.lookupPerCpu(u32(slot)) ?? []);
    await x.stop(); // keepOnStop: the programs stay
    const stopped = performance.now();
    const r0 = pinned().actions.redirect.packets;
    await until(
      'XDP goes on forwarding without the agent',
      () => pinned().actions.redirect.packets > r0 + 100,
      3000,
    );
    const unwatched = await until(
      'frames counted unwatched',
      () => pinned().reasons.unwatched.packets > 0,
      WATCH_MS + 3000,
    );
    const after = performance.now() - stopped;
    console.log(
      `agent stopped: XDP forwarded on for ${after.toFixed(0)} ms (watch ${WATCH_MS} ms)`,
    );
    expect(after).toBeGreaterThan(WATCH_MS - 1000);
    // the deadline was last moved at most WATCH_RENEW_MS before the stop; one tick (500 ms) after it
    expect(after).toBeLessThan(WATCH_MS + 500 + 1000);
    expect(unwatched).toBeGreaterThan(0);
    // the kernel forwards it meanwhile: the server still receives, XDP redirects no more
    const red = pinned().actions.redirect.packets;
    const rx = lab.received('s0');
    await until('the kernel forwards', () => lab.received('s0') > rx + 100, 3000);
    expect(pinned().actions.redirect.packets).toBe(red);
    // an agent is back: it reads the kernel, then XDP forwards again
    x = forwarder();
    await x.start();
    await until('XDP forwards again', () => pinned().actions.redirect.packets > red, 3000);
  });
});
