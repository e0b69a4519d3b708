import { spawnSync } from 'node:child_process';
import { Counter } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../log/index.js';
import { MetricsServer, createRegistry, parseHostPort } from './index.js';

let server: MetricsServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

describe('metrics endpoint', () => {
  it('serves a valid exposition, health and readiness', async () => {
    const registry = createRegistry('1.2.3');
    const c = new Counter({
      name: 'fibkeeper_test_events_total',
      help: 'Test events.',
      labelNames: ['kind'],
      registers: [registry],
    });
    c.inc({ kind: 'a' }, 3);
    let healthy = true;
    server = new MetricsServer({
      address: '127.0.0.1:0',
      registry,
      live: () => ({ ok: true, reasons: [] }),
      health: () => ({ ok: healthy, reasons: healthy ? [] : ['neighbor reconciler: 2 errors'] }),
      ready: () => ({ ok: false, reasons: ['initial neighbor dump not done'] }),
      log: silentLogger(),
    });
    await server.start();
    const base = `http://127.0.0.1:${server.port}`;
    const res = await fetch(`${base}/metrics`);
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toContain('fibkeeper_test_events_total{kind="a"} 3');
    expect(text).toMatch(/fibkeeper_build_info\{version="1.2.3",node="v[\d.]+"\} 1/);
    expect(text).toContain('process_cpu_user_seconds_total');
    const check = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
    expect(check.stderr + check.stdout).toBe('');
    expect(check.status).toBe(0);

    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    healthy = false;
    const h = await fetch(`${base}/healthz`);
    expect(h.status).toBe(503);
    expect(await h.text()).toContain('neighbor reconciler: 2 errors');
    const r = await fetch(`${base}/readyz`);
    expect(r.status).toBe(503);
    expect((await fetch(`${base}/nope`)).status).toBe(404);
    expect((await fetch(`${base}/metrics`, { method: 'POST' })).status).toBe(405);
  });

  it('parses host:port and refuses anything else', () => {
    expect(parseHostPort('127.0.0.1:9470')).toMatchObject({ host: '127.0.0.1', port: 9470 });
    expect(parseHostPort('[::1]:1')).toMatchObject({ host: '::1', port: 1 });
    expect(() => parseHostPort('9470')).toThrow(/host:port/);
    expect(() => parseHostPort('1.2.3.4:70000')).toThrow(/port/);
  });
  it('answers /livez from the liveness check alone: unhealthy and not ready are still alive', async () => {
    let alive = true;
    server = new MetricsServer({
      address: '127.0.0.1:0',
      registry: createRegistry('1.2.3'),
      live: () => ({ ok: alive, reasons: alive ? [] : ['netlink: request socket closed'] }),
      health: () => ({ ok: false, reasons: ['xdp: r-client: a foreign XDP program'] }),
      ready: () => ({ ok: false, reasons: ['extip: external interface missing'] }),
      log: silentLogger(),
    });
    await server.start();
    const base = `http://127.0.0.1:${server.port}`;
    const l = await fetch(`${base}/livez`);
    expect([l.status, await l.text()]).toEqual([200, 'ok\n']);
    expect((await fetch(`${base}/healthz`)).status).toBe(503);
    expect((await fetch(`${base}/readyz`)).status).toBe(503);
    alive = false;
    const d = await fetch(`${base}/livez`);
    expect([d.status, await d.text()]).toEqual([503, 'netlink: request socket closed\n']);
    expect(await (await fetch(`${base}/nope`)).text()).toMatch(/\/livez/);
  });

  it('names the address and the reason when it cannot listen', async () => {
    const s = new MetricsServer({
      address: '[fd00::5:9470]:9470',
      registry: createRegistry('1.2.3'),
      live: () => ({ ok: true, reasons: [] }),
      health: () => ({ ok: true, reasons: [] }),
      ready: () => ({ ok: true, reasons: [] }),
      log: silentLogger(),
    });
    await expect(s.start()).rejects.toThrow(
      'metrics.address [fd00::5:9470]:9470: cannot listen (EADDRNOTAVAIL): not an address of this node',
    );
  });
});
