import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InvalidArgumentError, TimeoutError } from '../errors/index.js';
import { ipArgText, type IpArg } from '../ipaddr/index.js';
import { silentLogger } from '../log/index.js';
import {
  ApiClient,
  ApiServer,
  MAX_BODY_BYTES,
  MAX_BULK_BODY_BYTES,
  type ControlHandlers,
} from './index.js';

let dir: string;
let server: ApiServer | undefined;
const calls: string[] = [];

function handlers(): ControlHandlers {
  const owners = new Map<string, Set<string>>();
  /** The IPs' text (the API hands them over parsed); IPv4 only, as a stand-in for a node rule. */
  const validate = (parsed: IpArg[]): string[] => {
    const ips = parsed.map(ipArgText);
    for (const ip of ips)
      if (!/^\d+\.\d+\.\d+\.\d+$/.test(ip)) throw new InvalidArgumentError(`"${ip}" is not an IP`);
    return ips;
  };
  return {
    async forwardableAdd(owner, parsed) {
      const ips = validate(parsed);
      calls.push(`add ${owner} ${ips.join(',')}`);
      for (const ip of ips) (owners.get(ip) ?? owners.set(ip, new Set()).get(ip))?.add(owner);
    },
    async forwardableDelete(owner, parsed) {
      const ips = validate(parsed);
      calls.push(`del ${owner} ${ips.join(',')}`);
    },
    async forwardableSetOwner(owner, parsed) {
      const ips = validate(parsed);
      calls.push(`set ${owner} ${ips.join(',')}`);
    },
    async forwardableList() {
      return [...owners].map(([ip, o]) => ({ ip, owners: [...o] }));
    },
    async extipAdd(parsed) {
      const ips = validate(parsed);
      calls.push(`extip add ${ips.join(',')}`);
    },
    async extipDelete() {},
    async extipList() {
      return [];
    },
    async status() {
      return { ready: true };
    },
    events() {
      return { initial: [] };
    },
    async xdpMisses(limit) {
      calls.push(`xdp misses ${limit}`);
      return { misses: [] };
    },
    async probe() {
      return { features: [] };
    },
    async xdpDetach() {
      return { detached: [] };
    },
    async clusterStatus() {
      return { node: 'a' };
    },
    async clusterExtipList() {
      return [];
    },
    async clusterExtipAdd(ips, eligible) {
      calls.push(`cluster add ${ips.join(',')} ${JSON.stringify(eligible)}`);
    },
    async clusterExtipDelete(ips) {
      calls.push(`cluster del ${ips.join(',')}`);
      return ips.slice(0, 1);
    },
    async clusterDrain(node) {
      calls.push(`cluster drain ${node}`);
      return true;
    },
    async clusterUncordon(node) {
      calls.push(`cluster uncordon ${node}`);
      return false;
    },
    async bgpStatus() {
      calls.push('bgp status');
      return { peers: [] };
    },
  };
}

function raw(path: string, method: string, body: string | Buffer, type = 'application/json') {
  return new Promise<{ status: number; json: { error?: { code: string; message: string } } }>(
    (resolve, reject) => {
      const req = request(
        {
          agent: false,
          socketPath: join(dir, 'api.sock'),
          path,
          method,
          // A length: Node sends a DELETE body unframed otherwise.
          headers: { 'content-type': type, 'content-length': String(Buffer.byteLength(body)) },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              json: JSON.parse(Buffer.concat(chunks).toString()),
            }),
          );
        },
      );
      req.on('error', reject);
      req.end(body);
    },
  );
}

beforeEach(async () => {
  dir = join(mkdtempSync(join(tmpdir(), 'fk-api-')), 'run');
  calls.length = 0;
  server = new ApiServer({
    socketPath: join(dir, 'api.sock'),
    socketMode: 0o660,
    handlers: handlers(),
    log: silentLogger(),
  });
  await server.start();
});
afterEach(async () => {
  await server?.stop();
  rmSync(join(dir, '..'), { recursive: true, force: true });
});

describe('control API', () => {
  it('creates the socket 0660 in a directory closed to others', () => {
    expect(statSync(join(dir, 'api.sock')).mode & 0o777).toBe(0o660);
    expect(statSync(dir).mode & 0o007).toBe(0);
  });

  it('adds, lists and replaces through the client', async () => {
    const c = new ApiClient(join(dir, 'api.sock'));
    await c.call('POST', '/v1/forwardable', { owner: 'ops', ips: ['10.0.0.1', '10.0.0.2'] });
    const list = await c.call<{ forwardable: { ip: string; owners: string[] }[] }>(
      'GET',
      '/v1/forwardable',
    );
    expect(list.forwardable).toEqual([
      { ip: '10.0.0.1', owners: ['ops'] },
      { ip: '10.0.0.2', owners: ['ops'] },
    ]);
    await c.call('PUT', '/v1/owners/ops/forwardable', { ips: [] });
    expect(calls).toEqual(['add ops 10.0.0.1,10.0.0.2', 'set ops ']);
  });

  it('answers bad requests with a 4xx JSON error and applies nothing', async () => {
    const c = new ApiClient(join(dir, 'api.sock'));
    await expect(
      c.call('POST', '/v1/forwardable', { owner: 'ops', ips: ['10.0.0.1', 'nope'] }),
    ).rejects.toMatchObject({
      status: 400,
      code: 'FIBKEEPER_ERR_INVALID_ARGUMENT',
      message: expect.stringMatching(/^"ips": "nope": /),
    });
    await expect(c.call('POST', '/v1/forwardable', { ips: ['10.0.0.1'] })).rejects.toThrow(
      /owner undefined is not a valid owner name/,
    );
    await expect(
      c.call('POST', '/v1/forwardable', { owner: 'config', ips: ['10.0.0.1'] }),
    ).rejects.toThrow(/managed by the agent itself/);
    await expect(c.call('POST', '/v1/extip', { ips: ['224.0.0.1'] })).rejects.toThrow(/multicast/);
    const escape = await raw('/v1/owners/%ZZ/forwardable', 'PUT', '{"ips": []}');
    expect(escape.status).toBe(400);
    expect(escape.json.error?.message).toMatch(/not valid percent-encoding/);
    await expect(
      c.call('POST', '/v1/forwardable', { owner: 'o', ips: '10.0.0.1' }),
    ).rejects.toThrow(/"ips" must be a list/);
    await expect(c.call('POST', '/v1/extip', [])).rejects.toThrow(/must be a JSON object/);
    expect(calls).toEqual([]);

    const bad = await raw('/v1/forwardable', 'POST', '{"owner": ');
    expect(bad.status).toBe(400);
    expect(bad.json.error?.message).toMatch(/not valid JSON/);
    expect((await raw('/v1/forwardable', 'POST', 'owner=x', 'text/csv')).status).toBe(415);
    expect((await raw('/v1/nothing', 'GET', '')).status).toBe(404);
    expect((await raw('/v1/status', 'DELETE', '')).status).toBe(405);
    const big = await raw('/v1/extip', 'POST', Buffer.alloc(MAX_BODY_BYTES + 10, 0x20));
    expect(big.status).toBe(413);
  });

  it('passes GET /v1/xdp/misses its limit (20 unless given), and refuses one out of 1-4096', async () => {
    const c = new ApiClient(join(dir, 'api.sock'));
    await c.call('GET', '/v1/xdp/misses');
    await c.call('GET', '/v1/xdp/misses?limit=4096');
    for (const bad of ['0', '4097', 'x']) {
      await expect(c.call('GET', `/v1/xdp/misses?limit=${bad}`)).rejects.toMatchObject({
        status: 400,
        message: expect.stringMatching(/\?limit= must be a whole number from 1 to 4096/),
      });
    }
    expect(calls).toEqual(['xdp misses 20', 'xdp misses 4096']);
  });

  it('takes a bulk body (text/plain, one IP a line) larger than the JSON limit in one request', async () => {
    const ipOf = (i: number) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;
    const n = 200_000;
    const lines = Array.from({ length: n }, (_, i) => ipOf(i + 1));
    const body = `# a comment\r\n${lines.join('\n')}\n\n  10.250.0.1  \n`;
    expect(body.length).toBeGreaterThan(MAX_BODY_BYTES);
    const ok = await raw('/v1/owners/lb/forwardable', 'PUT', body, 'text/plain');
    expect(ok.status, JSON.stringify(ok.json)).toBe(200);
    expect(calls).toHaveLength(1);
    const got = calls[0]!.split(' ')[2]!.split(',');
    expect(calls[0]!.startsWith('set lb ')).toBe(true);
    expect(got).toEqual([...lines, '10.250.0.1']);
    calls.length = 0;
    const add = await raw('/v1/forwardable?owner=ops', 'POST', '10.0.0.1\n10.0.0.2', 'text/plain');
    expect(add.status).toBe(200);
    const del = await raw('/v1/forwardable?owner=ops', 'DELETE', '10.0.0.2\n', 'text/plain');
    expect(del.status).toBe(200);
    expect(calls).toEqual(['add ops 10.0.0.1,10.0.0.2', 'del ops 10.0.0.2']);
  });

  it('refuses a bulk body with a bad line, without an owner, or over its limit: nothing applied', async () => {
    const good = Array.from({ length: 1000 }, (_, i) => `10.1.${i >> 8}.${(i % 250) + 1}`);
    const badLines = [...good.slice(0, 500), '10.0.0.300', ...good.slice(500), '127.0.0.1', 'x'];
    const bad = await raw('/v1/forwardable?owner=ops', 'POST', badLines.join('\n'), 'text/plain');
    expect(bad.status).toBe(400);
    expect(bad.json.error?.message).toMatch(
      /line 501 "10\.0\.0\.300".*line 1002 "127\.0\.0\.1".*loopback.*line 1003 "x".*nothing was changed/,
    );
    const noOwner = await raw('/v1/forwardable', 'POST', good.join('\n'), 'text/plain');
    expect(noOwner.status).toBe(400);
    expect(noOwner.json.error?.message).toMatch(/owner undefined is not a valid owner name/);
    const reserved = await raw('/v1/owners/config/forwardable', 'PUT', '10.0.0.1', 'text/plain');
    expect(reserved.status).toBe(400);
    const empty = await raw('/v1/forwardable?owner=ops', 'POST', '# none\n', 'text/plain');
    expect(empty.json.error?.message).toMatch(/holds no IP/);
    const huge = await raw(
      '/v1/forwardable?owner=ops',
      'POST',
      Buffer.alloc(MAX_BULK_BODY_BYTES + 10, '10.0.0.1\n'),
      'text/plain',
    );
    expect(huge.status).toBe(413);
    expect(huge.json.error?.message).toMatch(/over 67108864 bytes.*nothing was changed/);
    const json = await raw('/v1/extip', 'POST', '192.0.2.1', 'text/plain');
    expect(json.status).toBe(400);
    expect(json.json.error?.message).toMatch(/takes a JSON object/);
    expect(calls).toEqual([]);
  });

  it('checks cluster IPs and their eligibility before the handler sees them', async () => {
    const c = new ApiClient(join(dir, 'api.sock'));
    await expect(
      c.call('POST', '/v1/cluster/extip', { ips: ['192.0.2.1', '192.0.2.256'] }),
    ).rejects.toMatchObject({ status: 400, message: expect.stringMatching(/192\.0\.2\.256/) });
    await expect(
      c.call('POST', '/v1/cluster/extip', { ips: ['192.0.2.1'], nodes: ['-x'] }),
    ).rejects.toThrow(/eligible node "-x" is not valid/);
    await expect(
      c.call('POST', '/v1/cluster/extip', { ips: ['192.0.2.1'], labels: { zone: 'a b' } }),
    ).rejects.toThrow(/label zone/);
    await expect(
      c.call('POST', '/v1/cluster/extip', { ips: ['192.0.2.1'], labels: ['zone=a'] }),
    ).rejects.toThrow(/"labels" must be an object/);
    await expect(
      c.call('POST', '/v1/cluster/extip', { ips: ['192.0.2.1'], mode: 'anycast' }),
    ).rejects.toMatchObject({
      status: 400,
      message: expect.stringMatching(/"mode" "anycast" is not one of single, active-active/),
    });
    expect(calls).toEqual([]);
    expect(
      await c.call('POST', '/v1/cluster/extip', {
        ips: ['2001:DB8::1', '192.0.2.1'],
        nodes: ['b', 'a', 'b'],
        labels: { zone: 'a' },
      }),
    ).toEqual({ ok: true, ips: ['2001:db8::1', '192.0.2.1'] });
    await c.call('POST', '/v1/cluster/extip', { ips: ['192.0.2.9'], mode: 'active-active' });
    expect(
      await c.call('DELETE', '/v1/cluster/extip', { ips: ['192.0.2.1', '192.0.2.2'] }),
    ).toEqual({ ok: true, deleted: ['192.0.2.1'] });
    expect(calls).toEqual([
      'cluster add 2001:db8::1,192.0.2.1 {"nodes":["b","a"],"labels":{"zone":"a"}}',
      'cluster add 192.0.2.9 {"nodes":[],"labels":{},"mode":"active-active"}',
      'cluster del 192.0.2.1,192.0.2.2',
    ]);
    expect(await c.call('GET', '/v1/cluster/status')).toEqual({ node: 'a' });
  });

  it('refuses to start when another agent serves the socket, and replaces a stale one', async () => {
    const second = new ApiServer({
      socketPath: join(dir, 'api.sock'),
      socketMode: 0o600,
      handlers: handlers(),
      log: silentLogger(),
    });
    await expect(second.start()).rejects.toThrow(/another fibkeeper agent is serving/);
    expect(
      () =>
        new ApiServer({
          socketPath: 'x',
          socketMode: 0o666,
          handlers: handlers(),
          log: silentLogger(),
        }),
    ).toThrow(/must not give access to others/);
  });

  it('answers 503 with the reason at the deadline instead of hanging', async () => {
    await server?.stop();
    const h = handlers();
    h.extipAdd = (_ips, signal) =>
      new Promise((_resolve, reject) => {
        signal?.addEventListener('abort', () =>
          reject(new TimeoutError('saved, but not yet applied: the holder device is gone')),
        );
      });
    h.extipDelete = () => new Promise(() => undefined); // ignores its deadline
    server = new ApiServer({
      socketPath: join(dir, 'api.sock'),
      socketMode: 0o660,
      requestTimeoutMs: 200,
      handlers: h,
      log: silentLogger(),
    });
    await server.start();
    const c = new ApiClient(join(dir, 'api.sock'));
    await expect(c.call('POST', '/v1/extip', { ips: ['192.0.2.1'] })).rejects.toMatchObject({
      status: 503,
      message: 'saved, but not yet applied: the holder device is gone',
    });
    await expect(c.call('DELETE', '/v1/extip', { ips: ['192.0.2.1'] })).rejects.toMatchObject({
      status: 503,
      message: expect.stringMatching(/no answer within 200 ms \(api\.requestTimeout\)/),
    });
  });

  it('asks TCP clients for the token (constant-time compare); unix clients need none', async () => {
    await server?.stop();
    const token = Buffer.from('0123456789abcdef-secret');
    server = new ApiServer({
      socketPath: join(dir, 'api.sock'),
      socketMode: 0o660,
      tcp: '127.0.0.1:0',
      token,
      handlers: handlers(),
      log: silentLogger(),
    });
    await server.start();
    const port = server.tcpPort ?? 0;
    const get = (auth?: string) =>
      fetch(`http://127.0.0.1:${port}/v1/status`, auth ? { headers: { authorization: auth } } : {});
    const none = await get();
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer');
    expect((await get('Bearer 0123456789abcdef-secreT')).status).toBe(401);
    expect((await get('Bearer 0123456789abcdef')).status).toBe(401);
    expect((await get('Basic 0123456789abcdef-secret')).status).toBe(401);
    expect((await get('Bearer 0123456789abcdef-secret')).status).toBe(200);
    expect(await new ApiClient(join(dir, 'api.sock')).call('GET', '/v1/status')).toEqual({
      ready: true,
    });
  });

  it('tells the CLI user when no agent is running', async () => {
    await server?.stop();
    server = undefined;
    await expect(new ApiClient(join(dir, 'api.sock')).call('GET', '/v1/status')).rejects.toThrow(
      /is `fibkeeper run` running\?/,
    );
  });
});
