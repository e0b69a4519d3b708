// fibkeeper run under systemd (src/cli/notify.ts): what reaches NOTIFY_SOCKET and when.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SystemdNotifier } from '../../src/cli/notify.js';
import { silentLogger } from '../../src/log/index.js';
import { FakeClock } from '../../src/sched/testing.js';
import { notifyReceiver } from '../helpers/notify.js';

const dir = mkdtempSync(join(tmpdir(), 'fkt-notifier-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const report = (reasons: string[]) => ({ ok: reasons.length === 0, reasons });

describe('SystemdNotifier', () => {
  it('sends READY=1 once the agent is ready, with its STATUS', async () => {
    const r = await notifyReceiver(join(dir, 'a.sock'));
    const env: NodeJS.ProcessEnv = { NOTIFY_SOCKET: r.socket };
    const n = new SystemdNotifier(silentLogger(), env);
    expect(env.NOTIFY_SOCKET).toBeUndefined(); // not inherited by what the agent starts
    let ready = false;
    const agent = {
      ready: () =>
        report(ready ? [] : ['neighbor: initial dumps or first reconciliation not done']),
      health: () => report(['xdp: eth1: a foreign XDP program']),
    };
    const done = n.started(agent, new AbortController().signal);
    await r.next((m) => m.startsWith('STATUS=starting, not ready: neighbor'));
    expect(r.messages.some((m) => /READY=1/.test(m))).toBe(false);
    ready = true;
    await done;
    expect(await r.next((m) => m.startsWith('READY=1'))).toBe(
      'READY=1\nSTATUS=ready, needs attention: xdp: eth1: a foreign XDP program',
    );
    n.stopping();
    expect(await r.next((m) => m.startsWith('STOPPING=1'))).toBe('STOPPING=1\nSTATUS=stopping');
  });

  it('sends READY=1 anyway after the wait, naming what is not ready (no TimeoutStartSec loop)', async () => {
    const r = await notifyReceiver(join(dir, 'b.sock'));
    const clock = new FakeClock();
    const n = new SystemdNotifier(silentLogger(), { NOTIFY_SOCKET: r.socket }, clock);
    let asked = 0;
    const agent = {
      ready: () => (asked++, report(['extip: external interface missing'])),
      health: () => report([]),
    };
    let done = false;
    const started = n.started(agent, new AbortController().signal, 300).then(() => (done = true));
    await clock.advanceAsync(299);
    expect(done).toBe(false); // still waiting, asking every 100 ms
    expect(asked).toBe(6); // at 0, 100 and 200 ms: the check, then the STATUS line
    await clock.advanceAsync(1);
    await started;
    expect(await r.next((m) => m.startsWith('READY=1'))).toBe(
      'READY=1\nSTATUS=running, not ready: extip: external interface missing',
    );
  });

  it('does nothing without NOTIFY_SOCKET, and survives a socket nobody listens on', async () => {
    const agent = { ready: () => report([]), health: () => report([]) };
    const off = new SystemdNotifier(silentLogger(), {});
    expect(off.enabled).toBe(false);
    await off.started(agent, new AbortController().signal);
    const gone = new SystemdNotifier(silentLogger(), { NOTIFY_SOCKET: join(dir, 'none.sock') });
    await gone.started(agent, new AbortController().signal);
    gone.reloading();
    gone.stopping();
  });

  it('pings the watchdog every WATCHDOG_USEC/4 only while the agent is alive', async () => {
    const r = await notifyReceiver(join(dir, 'w.sock'));
    const env: NodeJS.ProcessEnv = {
      NOTIFY_SOCKET: r.socket,
      WATCHDOG_USEC: '800000',
      WATCHDOG_PID: String(process.pid),
    };
    const clock = new FakeClock();
    const n = new SystemdNotifier(silentLogger(), env, clock);
    expect(n.watchdogMs).toBe(800);
    expect(env.WATCHDOG_USEC).toBeUndefined(); // not inherited either
    let reasons: string[] = [];
    let asked = 0; // the rounds that ran: each asks the agent once
    const stop = new AbortController();
    n.watchdog({ live: () => (asked++, report(reasons)) }, stop.signal);
    const pings = () => r.messages.filter((m) => m === 'WATCHDOG=1').length;
    /** Everything sent so far has arrived (one socket, datagrams in order). */
    let marks = 0;
    const arrived = async () => {
      const mark = `STATUS=mark ${++marks}`;
      n.send({ STATUS: `mark ${marks}` });
      await r.next((m) => m === mark);
    };
    clock.advance(600); // the first ping at once, then three periods of 200 ms
    expect(asked).toBe(4);
    await arrived();
    expect(pings()).toBe(4);
    reasons = ['netlink: the request socket has not answered for 21 s'];
    clock.advance(600);
    expect(asked).toBe(7); // three rounds ran, and sent nothing
    await arrived();
    expect(pings()).toBe(4);
    reasons = [];
    clock.advance(200);
    await arrived();
    expect(pings()).toBe(5);
    stop.abort();
    n.stopping();
    clock.advance(1000);
    expect(asked).toBe(8);
  });

  it('sends no WATCHDOG=1 without WatchdogSec, or when WATCHDOG_PID names another process', () => {
    const r = join(dir, 'x.sock');
    expect(new SystemdNotifier(silentLogger(), { NOTIFY_SOCKET: r }).watchdogMs).toBeUndefined();
    const other = { NOTIFY_SOCKET: r, WATCHDOG_USEC: '1000000', WATCHDOG_PID: '1' };
    expect(new SystemdNotifier(silentLogger(), other).watchdogMs).toBeUndefined();
  });
});
