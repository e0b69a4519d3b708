import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { InvalidArgumentError, StorageError } from '../errors/index.js';
import { ipArgText, parseIp, type IpArg, type ParsedIp } from '../ipaddr/index.js';
import { silentLogger } from '../log/index.js';
import { turns } from '../sched/testing.js';
import { ControlPlane, type ExtipTarget, type ForwardableTarget } from './control.js';
import { StateStore } from './state.js';

const dirs: string[] = [];
/** IPs as the API hands them to the control plane: parsed once. */
const parsed = (...ips: string[]) => ips.map((ip) => parseIp(ip));
const text = (ips: readonly IpArg[]) => ips.map(ipArgText);
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A store whose saves can be made to fail, with a history of what was saved. */
class FakeStore extends StateStore {
  failing = false;
  saves: string[][] = [];
  override async persist(): Promise<void> {
    await turns(2); // a save takes a while: requests arriving meanwhile queue
    if (this.failing) throw new StorageError('ENOSPC: no space left');
    this.saves.push([...this.draft.extip].sort());
    await super.persist();
  }
}

function world(opts: { nodeAddresses?: string[]; path?: string } = {}) {
  const log: string[] = [];
  const owners = new Map<string, Set<string>>(); // ip -> owners
  const node = new Set(opts.nodeAddresses ?? []);
  const seen: IpArg[] = []; // every IP a target was handed
  const check = (args: readonly IpArg[]) => {
    seen.push(...args);
    const ips = text(args);
    for (const ip of ips)
      if (node.has(ip)) throw new InvalidArgumentError(`${ip} is an address of this node`);
    return [...new Set(ips)];
  };
  const forwardable: ForwardableTarget = {
    check,
    upsert(o, args) {
      const ips = text(args);
      check(args); // as the neighbor table does: all or nothing
      log.push(`upsert ${o} ${ips.join(',')}`);
      for (const ip of ips) (owners.get(ip) ?? owners.set(ip, new Set()).get(ip))?.add(o);
    },
    delete(o, args) {
      const ips = text(args);
      log.push(`delete ${o} ${ips.join(',')}`);
      for (const ip of ips) owners.get(ip)?.delete(o);
    },
    setOwner(o, args) {
      const ips = text(args);
      check(ips);
      log.push(`set ${o} ${ips.join(',')}`);
      for (const s of owners.values()) s.delete(o);
      for (const ip of ips) (owners.get(ip) ?? owners.set(ip, new Set()).get(ip))?.add(o);
    },
    owners: (ip) => [...(owners.get(ip) ?? [])],
  };
  const assigned = new Set<string>();
  let stuck = false;
  const extip: ExtipTarget = {
    check,
    async assign(args) {
      seen.push(...args);
      const ips = text(args);
      log.push(`assign ${ips.join(',')}`);
      for (const ip of ips) assigned.add(ip);
      if (stuck) await new Promise(() => undefined);
    },
    async unassign(args) {
      const ips = text(args);
      log.push(`unassign ${ips.join(',')}`);
      for (const ip of ips) assigned.delete(ip);
    },
    problems: () => (stuck ? ['the holder device fibkeeper0 cannot be used'] : []),
  };
  const path = opts.path ?? join(mkdtempSync(join(tmpdir(), 'fk-control-')), 'state.json');
  dirs.push(join(path, '..'));
  const store = new FakeStore(path);
  const statics = { forwardable: new Set<string>(['10.9.9.9']), extip: new Set<string>() };
  const cluster = new Set<string>();
  const cp = new ControlPlane({
    store,
    forwardable: () => forwardable,
    extip: () => extip,
    statics: () => statics,
    clusterIps: () => cluster,
    log: silentLogger(),
  });
  return {
    cp,
    seen,
    store,
    log,
    assigned,
    node,
    path,
    cluster,
    stick: (v: boolean) => (stuck = v),
  };
}

describe('the control plane write queue', () => {
  it('keeps every acknowledged change of concurrent requests, in one write per batch', async () => {
    const w = world();
    const ips = Array.from({ length: 200 }, (_, i) => `192.0.2.${i}`);
    await Promise.all(ips.map((ip) => w.cp.submit({ op: 'extip.add', ips: parsed(ip) })));
    expect([...w.store.state.extip].sort()).toEqual([...ips].sort());
    expect(JSON.parse(readFileSync(w.path, 'utf8')).extip).toHaveLength(200);
    expect(w.store.saves.length).toBeLessThan(10); // batched
    const dels = ips.filter((_, i) => i % 2 === 0);
    await Promise.all(dels.map((ip) => w.cp.submit({ op: 'extip.del', ips: parsed(ip) })));
    expect([...w.store.state.extip].sort()).toEqual(ips.filter((_, i) => i % 2 === 1).sort());
    expect([...w.assigned].sort()).toEqual([...w.store.state.extip].sort());
  });

  it('applies nothing of a batch whose save fails, and answers each request with the error', async () => {
    const w = world();
    await w.cp.submit({ op: 'forwardable.add', owner: 'ops', ips: parsed('10.0.0.1') });
    w.store.failing = true;
    const r = await Promise.allSettled([
      w.cp.submit({ op: 'forwardable.add', owner: 'ops', ips: parsed('10.0.0.2') }),
      w.cp.submit({ op: 'extip.add', ips: parsed('192.0.2.1') }),
    ]);
    expect(r.map((x) => x.status)).toEqual(['rejected', 'rejected']);
    expect((r[0] as PromiseRejectedResult).reason).toBeInstanceOf(StorageError);
    expect(w.log).toEqual(['upsert ops 10.0.0.1']);
    expect([...(w.store.state.forwardable.get('ops') ?? [])]).toEqual(['10.0.0.1']);
    w.store.failing = false;
    await w.cp.submit({ op: 'forwardable.set', owner: 'ops', ips: parsed() });
    expect(w.store.state.forwardable.has('ops')).toBe(false);
  });

  it('refuses an IP that would be forwardable and external, checking against earlier requests of the batch', async () => {
    const w = world();
    const [a, b, c, d] = await Promise.allSettled([
      w.cp.submit({ op: 'forwardable.add', owner: 'ops', ips: parsed('10.0.0.1') }),
      w.cp.submit({ op: 'extip.add', ips: parsed('10.0.0.1') }),
      w.cp.submit({ op: 'extip.add', ips: parsed('10.9.9.9') }),
      w.cp.submit({ op: 'extip.add', ips: parsed('192.0.2.7') }),
    ]);
    expect(a?.status).toBe('fulfilled');
    expect((b as PromiseRejectedResult).reason.message).toMatch(
      /10\.0\.0\.1 is forwardable \(owner ops\).*fibkeeper forwardable del 10\.0\.0\.1 --owner ops/,
    );
    expect((c as PromiseRejectedResult).reason.message).toMatch(
      /owner config.*forwardable\.static/,
    );
    expect(d?.status).toBe('fulfilled');
    await expect(
      w.cp.submit({ op: 'forwardable.add', owner: 'lb', ips: parsed('192.0.2.7') }),
    ).rejects.toMatchObject({ code: 'FIBKEEPER_ERR_CONFLICT' });
    expect([...w.store.state.extip]).toEqual(['192.0.2.7']);
  });

  it('refuses a node-local external IP that is a cluster IP, saving and assigning nothing', async () => {
    const w = world();
    w.cluster.add('192.0.2.50');
    await expect(w.cp.submit({ op: 'extip.add', ips: parsed('192.0.2.50') })).rejects.toMatchObject(
      {
        code: 'FIBKEEPER_ERR_CONFLICT',
        message: expect.stringMatching(
          /192\.0\.2\.50 is a cluster external IP.*fibkeeper cluster extip del 192\.0\.2\.50/,
        ),
      },
    );
    expect(w.store.saves).toEqual([]);
    expect(w.log).toEqual([]);
  });

  it('takes a change that became invalid while the file was written out of the file again', async () => {
    const w = world();
    const p = w.cp.submit({ op: 'forwardable.add', owner: 'ops', ips: parsed('10.0.0.5') });
    w.node.add('10.0.0.5'); // the node got this address during the write
    await expect(p).rejects.toThrow(/address of this node/);
    expect(w.store.state.forwardable.has('ops')).toBe(false);
    expect(JSON.parse(readFileSync(w.path, 'utf8')).forwardable).toEqual({});
  });

  it('drops a request still queued at its deadline, and says what a stuck one is waiting for', async () => {
    const w = world();
    w.stick(true);
    const deadline = new AbortController();
    const stuck = w.cp.submit({ op: 'extip.add', ips: parsed('192.0.2.1') }, deadline.signal);
    // an exclusive task that holds the queue
    let release = () => undefined as void;
    const hold = w.cp.exclusive('a config reload', () => new Promise<void>((r) => (release = r)));
    const queued = new AbortController();
    const behind = w.cp.submit({ op: 'extip.add', ips: parsed('192.0.2.2') }, queued.signal);
    await vi.waitFor(() => expect(w.log).toContain('assign 192.0.2.1')); // saved, now stuck
    deadline.abort();
    queued.abort();
    await expect(stuck).rejects.toThrow(
      /saved, but not yet applied after \d+ ms: the holder device fibkeeper0 cannot be used; it stays wanted/,
    );
    await expect(behind).rejects.toThrow(
      /not applied: waited \d+ ms in the write queue behind a config reload/,
    );
    release();
    await hold;
    expect([...w.store.state.extip]).toEqual(['192.0.2.1']);
  });

  it('hands the IPs the API parsed down as they are: nothing parses them again', async () => {
    const w = world();
    const add = parsed('192.0.2.9', '2001:db8::9');
    await w.cp.submit({ op: 'extip.add', ips: add });
    await w.cp.submit({ op: 'forwardable.add', owner: 'ops', ips: parsed('192.0.2.10') });
    // check (plan), check again and assign (apply): every one got the objects themselves.
    expect(w.seen.length).toBeGreaterThanOrEqual(5);
    for (const ip of w.seen) expect(typeof ip, JSON.stringify(ip)).toBe('object');
    expect(w.seen.filter((ip) => add.includes(ip as ParsedIp))).toHaveLength(6);
  });
});
