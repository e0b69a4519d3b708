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
});
