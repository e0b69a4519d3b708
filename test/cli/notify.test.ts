// fibkeeper run under systemd (src/cli/notify.ts): what reaches NOTIFY_SOCKET and when.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SystemdNotifier } from '../../src/cli/notify.js';
import { silentLogger } from '../../src/log/index.js';
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
    const n = new SystemdNotifier(silentLogger(), { NOTIFY_SOCKET: r.socket });
    const agent = {
      ready: () => report(['extip: external interface missing']),
      health: () => report([]),
    };
    await n.started(agent, new AbortController().signal, 300);
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
    const n = new SystemdNotifier(silentLogger(), env);
    expect(n.watchdogMs).toBe(800);
    expect(env.WATCHDOG_USEC).toBeUndefined(); // not inherited either
    let reasons: string[] = [];
    const stop = new AbortController();
    n.watchdog({ live: () => report(reasons) }, stop.signal);
    const pings = () => r.messages.filter((m) => m === 'WATCHDOG=1').length;
    await r.next((m) => m === 'WATCHDOG=1');
    await new Promise((res) => setTimeout(res, 650)); // three more periods of 200 ms
    expect(pings()).toBeGreaterThanOrEqual(3);
    reasons = ['netlink: the request socket has not answered for 21 s'];
    await new Promise((res) => setTimeout(res, 250)); // a ping already due may still go
    const held = pings();
    await new Promise((res) => setTimeout(res, 700));
    expect(pings()).toBe(held);
    reasons = [];
    const from = r.messages.length;
    await r.next((m) => m === 'WATCHDOG=1', { from });
    stop.abort();
    n.stopping();
  });

  it('sends no WATCHDOG=1 without WatchdogSec, or when WATCHDOG_PID names another process', () => {
    const r = join(dir, 'x.sock');
    expect(new SystemdNotifier(silentLogger(), { NOTIFY_SOCKET: r }).watchdogMs).toBeUndefined();
    const other = { NOTIFY_SOCKET: r, WATCHDOG_USEC: '1000000', WATCHDOG_PID: '1' };
    expect(new SystemdNotifier(silentLogger(), other).watchdogMs).toBeUndefined();
  });
});
