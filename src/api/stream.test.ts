// GET /v1/events over a real unix socket: the kept events as JSON lines, followers that get
// each new one, and a follower that does not read cut off once MAX_UNREAD_BYTES wait for it
// (the agent holds no more for it, and stops calling it).
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { EventLog, typeMatches } from '../events/index.js';
import { silentLogger } from '../log/index.js';
import {
  ApiClient,
  ApiServer,
  MAX_UNREAD_BYTES,
  parseSince,
  type ControlHandlers,
} from './index.js';

let dir: string;
let server: ApiServer;
let log: EventLog;
let cuts = 0;

/** Resolves once `cond` holds: real socket I/O, polled (every 5 ms, for up to 5 s). */
async function waitUntil(cond: () => boolean): Promise<void> {
  await vi.waitFor(() => expect(cond()).toBe(true), { timeout: 5000, interval: 5 });
}

const unused = async () => {
  throw new Error('not used here');
};

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'fk-stream-'));
  log = new EventLog({ capacity: 3 });
  cuts = 0;
  const handlers = new Proxy({} as ControlHandlers, {
    get: (_, name) =>
      name === 'events'
        ? (q: Parameters<ControlHandlers['events']>[0]) => ({
            initial: log.read(q),
            ...(q.follow
              ? {
                  follow: (push: (e: { seq: number; type: string }) => void) =>
                    log.follow((e) => typeMatches(e.type, q.types) && push(e)),
                  onCut: () => cuts++,
                }
              : {}),
          })
        : unused,
  });
  server = new ApiServer({
    socketPath: join(dir, 'api.sock'),
    socketMode: 0o600,
    handlers,
    log: silentLogger(),
  });
  await server.start();
});
afterEach(async () => {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('GET /v1/events', () => {
  it('answers the kept events (the ring keeps the last 3) as JSON lines, filtered by type', async () => {
    for (let i = 1; i <= 5; i++) log.emit(i % 2 ? 'extip.assigned' : 'neighbor.repaired', `e${i}`);
    const c = new ApiClient(join(dir, 'api.sock'));
    const all: unknown[] = [];
    await c.stream('/v1/events', (e) => all.push(e));
    expect(all.map((e) => (e as { summary: string }).summary)).toEqual(['e3', 'e4', 'e5']);
    const some: unknown[] = [];
    await c.stream('/v1/events?type=neighbor', (e) => some.push(e));
    expect(some).toMatchObject([{ seq: 4, type: 'neighbor.repaired', summary: 'e4' }]);
    await expect(c.stream('/v1/events?since=yesterday', () => undefined)).rejects.toMatchObject({
      status: 400,
      message: expect.stringMatching(/since=yesterday: give a duration/),
    });
  });

  it('answers server-sent events to a client that asks for text/event-stream', async () => {
    log.emit('extip.assigned', 'a', { ip: '192.0.2.1' });
    const { type, text } = await new Promise<{ type: string; text: string }>((resolve, reject) => {
      const req = request(
        {
          socketPath: join(dir, 'api.sock'),
          path: '/v1/events',
          headers: { accept: 'text/event-stream' },
        },
        (res) => {
          let t = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (t += c));
          res.on('end', () => resolve({ type: String(res.headers['content-type']), text: t }));
        },
      );
      req.on('error', reject).end();
    });
    expect(type).toBe('text/event-stream');
    expect(text).toBe(`id: 1\nevent: extip.assigned\ndata: ${JSON.stringify(log.read()[0])}\n\n`);
  });

  it('follows: each new event reaches the client; hanging up stops the following', async () => {
    log.emit('agent.started', 'up');
    const c = new ApiClient(join(dir, 'api.sock'));
    const got: string[] = [];
    const ac = new AbortController();
    const done = c.stream(
      '/v1/events?follow=1&type=extip',
      (e) => got.push((e as { summary: string }).summary),
      ac.signal,
    );
    await waitUntil(() => log.followers === 1);
    log.emit('extip.conflict', 'claimed');
    log.emit('neighbor.written', 'not asked for');
    log.emit('extip.defended' as 'extip.conflict', 'second');
    await waitUntil(() => got.length === 2);
    expect(got).toEqual(['claimed', 'second']);
    ac.abort();
    await done;
    await waitUntil(() => log.followers === 0);
  });

  it('cuts off a follower that does not read once MAX_UNREAD_BYTES wait for it', async () => {
    // A raw client that sends its request and then reads nothing.
    const sock = connect(join(dir, 'api.sock'));
    sock.pause();
    sock.write('GET /v1/events?follow=1 HTTP/1.1\r\nhost: x\r\n\r\n');
    await waitUntil(() => log.followers === 1);
    const big = 'x'.repeat(64 << 10);
    let emitted = 0;
    // Twice the limit in events: the agent must stop queueing for this client before that.
    while (log.followers === 1 && emitted < (2 * MAX_UNREAD_BYTES) / big.length) {
      log.emit('config.reloaded', big);
      emitted++;
    }
    expect(log.followers).toBe(0);
    expect(emitted).toBeLessThan((2 * MAX_UNREAD_BYTES) / big.length);
    expect(cuts).toBe(1); // counted (fibkeeper_events_followers_cut_total)
    // What it reads at last ends with the line that says why.
    let text = '';
    sock.setEncoding('latin1');
    sock.on('data', (c: string) => (text += c.slice(-4096)));
    sock.resume();
    await waitUntil(() => text.includes('"type":"stream.cut"'));
    sock.destroy();
    expect(text).toMatch(
      /"type":"stream.cut","summary":"the client read too slowly"}\n\r\n0\r\n\r\n$/,
    );
  });
});

describe('?since=', () => {
  it('takes a duration back from now or an ISO 8601 time, and nothing else', () => {
    const now = Date.parse('2026-01-01T12:00:00Z');
    expect(parseSince('90s', now)).toBe(now - 90_000);
    expect(parseSince('1h30m', now)).toBe(now - 5_400_000);
    expect(parseSince('2026-01-01T11:00:00Z', now)).toBe(now - 3_600_000);
    for (const bad of ['', '5', 'yesterday', '5x', '1h 30m']) {
      expect(() => parseSince(bad, now), bad).toThrow(/give a duration back from now/);
    }
  });
});
