// Signals at the edges of the agent's life (issue 24): a SIGHUP that comes while `run` is
// still starting does not end it, and SIGTERM ends it within the stated bound (STOP_BOUND_MS)
// whatever the kernel is doing — here, every netlink socket deaf and the send thread stuck in
// sendmsg (fault injection at the native boundary, FIBKEEPER_TEST_FAULTS).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { AGENT_NODE_FLAGS } from '../../src/cli/node-flags.js';
import { STOP_BOUND_MS } from '../../src/cli/run.js';
import { privileged, waitFor } from '../helpers/netns.js';
import { baseConfig, call, makeWorld, startAgent, stopAgent, writeConfig } from './harness.js';

const { skip } = privileged();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The signals `pid` catches (SigCgt of /proc/PID/status), as a bit mask; 0 once gone. */
function caught(pid: number): bigint {
  try {
    const m = /^SigCgt:\s*([0-9a-f]+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? BigInt(`0x${m[1]}`) : 0n;
  } catch {
    return 0n;
  }
}
const SIGHUP_BIT = 1n << 0n;

describe.skipIf(skip)('signals', () => {
  it('a SIGHUP storm from the first line of bin/fibkeeper.js through the first 300 ms does not end `run`', async () => {
    const w = makeWorld('hup');
    writeConfig(w, baseConfig(w, { forwardableStatic: ['10.88.9.1'] }));
    // As the shipped unit starts it: the V8 flag on the command line, so no re-exec.
    const a = await startAgent(w, { ready: false, nodeArgs: [...AGENT_NODE_FLAGS] });
    await waitFor(() => (caught(a.pid) & SIGHUP_BIT) !== 0n || a.child.exitCode !== null, {
      timeoutMs: 10_000,
      intervalMs: 1,
      what: 'the first line (a SIGHUP handler)',
    });
    const until = Date.now() + 300;
    let sent = 0;
    while (Date.now() < until && a.child.exitCode === null && a.child.signalCode === null) {
      a.child.kill('SIGHUP');
      sent++;
      await sleep(5);
    }
    expect(sent).toBeGreaterThan(20);
    expect(a.child.signalCode, a.log()).toBeNull();
    expect(a.child.exitCode, a.log()).toBeNull();
    // It starts anyway, and reloads once the start has ended.
    await waitFor(
      async () =>
        (await call(w.sock, 'GET', '/v1/status', undefined, { timeoutMs: 2000 })).body.ready ===
        true,
      { timeoutMs: 30_000, what: 'ready' },
    );
    await waitFor(() => /reloaded|reload/.test(a.log()), {
      what: 'the reload of the early SIGHUP',
    });
    await stopAgent(a);
    expect(await a.exited).toBe(0);
  }, 60_000);

  it(`SIGTERM ends a start that waits for a deaf kernel within ${STOP_BOUND_MS} ms (exit code 1)`, async () => {
    const w = makeWorld('term0');
    writeConfig(w, baseConfig(w, { forwardableStatic: ['10.88.9.1'] }));
    // From the start on, every netlink request goes nowhere (and a receive would begin a
    // 10-minute deaf period): the start never ends, and a SIGTERM waits for the start.
    const faults = 'classes=timeout,rate=1,sockets=netlink,deafMs=600000';
    const a = await startAgent(w, { ready: false, env: { FIBKEEPER_TEST_FAULTS: faults } });
    await waitFor(() => /"timeout netlink (recv|send)":[1-9]/.test(a.log()), {
      timeoutMs: 20_000,
      what: 'faults injected',
    });
    expect(a.child.exitCode).toBeNull();
    const t0 = Date.now();
    a.child.kill('SIGTERM');
    const code = await a.exited;
    const took = Date.now() - t0;
    expect(took, a.log().slice(-2000)).toBeGreaterThanOrEqual(STOP_BOUND_MS - 100);
    expect(took, a.log().slice(-2000)).toBeLessThan(STOP_BOUND_MS + 1500);
    expect(code).toBe(1);
    expect(a.log()).toMatch(/the stop did not end within 5000 ms; exiting now/);
  }, 60_000);

  it(`SIGTERM ends the agent within ${STOP_BOUND_MS} ms while every netlink socket is deaf and the send thread hangs`, async () => {
    const w = makeWorld('term');
    writeConfig(w, baseConfig(w, { forwardableStatic: ['10.88.9.1'] }));
    // From 4 s on: every netlink receive starts a 10-minute deaf period, every sendmsg of
    // the send thread hangs for 10 minutes.
    const faults =
      'classes=timeout+hang,rate=1,sockets=netlink,deafMs=600000,hangMs=600000,delayMs=4000';
    const a = await startAgent(w, { env: { FIBKEEPER_TEST_FAULTS: faults } });
    await waitFor(() => /"timeout netlink recv":[1-9]/.test(a.log()), {
      timeoutMs: 20_000,
      what: 'faults injected',
    });
    // Work that waits for the kernel: neighbor writes (send thread) and their replies.
    void call(
      w.sock,
      'POST',
      '/v1/forwardable',
      { ips: ['10.88.7.1', '10.88.7.2'], owner: 't' },
      {
        timeoutMs: 30_000,
      },
    ).catch(() => undefined);
    await sleep(500);
    const t0 = Date.now();
    a.child.kill('SIGTERM');
    const code = await a.exited;
    const took = Date.now() - t0;
    // The bound, plus what a busy machine adds to a signal's delivery and a process's exit.
    expect(took, a.log().slice(-2000)).toBeLessThan(STOP_BOUND_MS + 1500);
    expect([0, 1]).toContain(code);
    if (code === 1) expect(a.log()).toMatch(/the stop did not end within 5000 ms; exiting now/);
  }, 60_000);
});
