// The systems bench/cluster compares on one lab segment: fibkeeper (three agents in cluster
// mode against a local etcd) and keepalived (Debian's package, VRRPv3, three instances with
// priorities 100/90/80 and one VIP), each with the same faults: SIGKILL, SIGSTOP (a hung
// process, resumed with SIGCONT), the holder's link lost (its bridge port down: no carrier
// on its ext0) and SIGTERM (a graceful stop). Every process is started in a process group of
// its own and ended by its PID.
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ApiClient } from '../../dist/api/index.js';
import { clusterAgentConfig } from '../../dist/lab/index.js';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** keepalived on PATH, installed from Debian's package when missing (apt-get, once). */
export function ensureKeepalived() {
  if (spawnSync('keepalived', ['--version']).status === 0) return;
  console.log('installing keepalived (Debian package) for the reference');
  const r = spawnSync(
    'apt-get',
    ['install', '-y', '-qq', '--no-install-recommends', 'keepalived'],
    {
      stdio: 'inherit',
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    },
  );
  if (r.status !== 0) throw new Error('cannot install keepalived (apt-get install keepalived)');
}

function linkSet(lab, node, up) {
  const r = spawnSync('ip', ['-n', lab.bridge, 'link', 'set', node.port, up ? 'up' : 'down']);
  if (r.status !== 0) throw new Error(`link ${node.port} ${up ? 'up' : 'down'} failed`);
}

/** One node's processes as a group: signals go to all of them. */
class Group {
  constructor(child) {
    this.child = child;
    this.exited = new Promise((r) => child.once('exit', r));
  }
  get alive() {
    return this.child.exitCode === null && this.child.signalCode === null;
  }
  signal(sig) {
    try {
      process.kill(-this.child.pid, sig);
    } catch {
      // gone
    }
  }
}

/** fibkeeper: one agent per node, `fibkeeper run` with the default cluster settings. */
export class Fibkeeper {
  name = 'fibkeeper';
  constructor({ lab, etcd, dir, keys, reaper, until }) {
    Object.assign(this, { lab, etcd, dir, keys, reaper, until });
    this.nodes = lab.nodes.map((n) => {
      const d = join(dir, `fk-${n.name}`);
      mkdirSync(d, { recursive: true, mode: 0o750 });
      writeFileSync(
        join(d, 'config.yaml'),
        clusterAgentConfig(n, {
          etcd: etcd.endpoint,
          dir: d,
          keyPrefix: keys,
          logLevel: 'debug',
          neighbor: false,
        }) + '\n',
      );
      return { ...n, dir: d, log: join(d, 'agent.log'), api: new ApiClient(join(d, 'api.sock')) };
    });
    this.deaths = [];
  }

  async start(n) {
    const fd = openSync(n.log, 'a');
    const bin = new URL('../../bin/fibkeeper.js', import.meta.url).pathname;
    const child = spawn(process.execPath, [bin, 'run', '--config', join(n.dir, 'config.yaml')], {
      stdio: ['ignore', fd, fd],
      detached: true,
    });
    closeSync(fd);
    this.reaper.agent(child);
    n.group = new Group(child);
    await this.until(
      async () => {
        if (!n.group.alive) throw new Error(readFileSync(n.log, 'utf8').slice(-800));
        const st = await n.api.call('GET', '/v1/status').catch(() => undefined);
        return st?.ready === true;
      },
      30_000,
      `${n.name} ready`,
    );
  }

  async up(ip) {
    await Promise.all(this.nodes.map((n) => this.start(n)));
    await this.nodes[0].api.call('POST', '/v1/cluster/extip', { ips: [ip] });
  }

  /** Injects `fault` on node `n`; returns when it is in place. */
  async fault(fault, n, now) {
    const at = now();
    if (fault === 'sigkill') {
      n.group.signal('SIGKILL');
      this.deaths.push({ node: n.name, at });
    } else if (fault === 'sigstop') n.group.signal('SIGSTOP');
    else if (fault === 'sigterm') n.group.signal('SIGTERM');
    else if (fault === 'link') linkSet(this.lab, n, false);
    return at;
  }

  /** Undoes `fault` on `n` (a restarted agent, SIGCONT, the link back). */
  async recover(fault, n) {
    if (fault === 'sigstop') n.group.signal('SIGCONT');
    else if (fault === 'link') linkSet(this.lab, n, true);
    else {
      await n.group.exited;
      await this.start(n);
    }
    await sleep(2500); // the node registers; the IP comes back after the rebalance delay
  }

  async down() {
    for (const n of this.nodes) if (n.group?.alive) n.group.signal('SIGKILL');
    await Promise.all(this.nodes.map((n) => n.group?.exited));
  }

  /** Every hold set of every agent (debug log), with a SIGKILL counted as an empty set. */
  holdRecords() {
    const out = [];
    for (const n of this.nodes) {
      const mine = [];
      for (const line of readFileSync(n.log, 'utf8').split('\n')) {
        if (!line.includes('"cluster hold set"')) continue;
        const l = JSON.parse(line);
        mine.push({ node: n.name, at: l.at, ips: l.ips, deadline: l.deadline ?? -Infinity });
      }
      for (const d of this.deaths.filter((x) => x.node === n.name)) {
        mine.push({ node: n.name, at: d.at, ips: [], deadline: -Infinity });
      }
      out.push(...mine.sort((a, b) => a.at - b.at));
    }
    return out;
  }
}

/** keepalived: VRRPv3, advert_int as given, priorities 100/90/80, the VIP on ext0. */
export class Keepalived {
  constructor({ lab, dir, reaper, advertInt }) {
    Object.assign(this, { lab, dir, reaper, advertInt });
    this.name = `keepalived (advert_int ${advertInt})`;
    this.nodes = lab.nodes.map((n) => ({ ...n, dir: join(dir, `ka-${advertInt}-${n.name}`) }));
  }

  config(n, i, ip) {
    return [
      'global_defs {',
      `  router_id ${n.name}`,
      '  vrrp_version 3',
      '  script_user root',
      '}',
      'vrrp_instance VI {',
      '  state BACKUP',
      '  interface ext0',
      '  virtual_router_id 51',
      `  priority ${100 - 10 * i}`,
      `  advert_int ${this.advertInt}`,
      '  virtual_ipaddress {',
      `    ${ip}/24 dev ext0`,
      '  }',
      '}',
      '',
    ].join('\n');
  }

  async start(n) {
    const fd = openSync(join(n.dir, 'keepalived.log'), 'a');
    const child = spawn(
      'ip',
      [
        'netns',
        'exec',
        n.netns,
        'keepalived',
        '-n',
        '--vrrp',
        '-l',
        '-f',
        join(n.dir, 'k.conf'),
        '-p',
        join(n.dir, 'k.pid'),
        '-r',
        join(n.dir, 'v.pid'),
      ],
      { stdio: ['ignore', fd, fd], detached: true },
    );
    closeSync(fd);
    this.reaper.child(child);
    n.group = new Group(child);
    await sleep(300);
    for (const pid of this.pids(n)) this.reaper.process(pid); // the VRRP child too
  }

  async up(ip) {
    this.nodes.forEach((n, i) => {
      mkdirSync(n.dir, { recursive: true });
      writeFileSync(join(n.dir, 'k.conf'), this.config(n, i, ip));
    });
    for (const n of this.nodes) await this.start(n);
  }

  /**
   * Every process of the node's keepalived: the parent and its VRRP child, which runs in a
   * session of its own (a signal to the parent's group misses it). From their pid files.
   */
  pids(n) {
    const out = [];
    for (const f of ['k.pid', 'v.pid']) {
      try {
        const pid = Number(readFileSync(join(n.dir, f), 'utf8').trim());
        // Only a live keepalived of this node's config: a stale pid file names someone else.
        const cmd = pid > 0 ? readFileSync(`/proc/${pid}/cmdline`, 'utf8') : '';
        if (cmd.includes('keepalived') && cmd.includes(n.dir)) out.push(pid);
      } catch {
        // not written (yet), or removed
      }
    }
    return out;
  }

  #signalAll(n, sig) {
    for (const pid of this.pids(n)) {
      try {
        process.kill(pid, sig);
      } catch {
        // gone
      }
    }
  }

  async fault(fault, n, now) {
    const at = now();
    if (fault === 'sigkill') this.#signalAll(n, 'SIGKILL');
    else if (fault === 'sigstop') this.#signalAll(n, 'SIGSTOP');
    else if (fault === 'sigterm') n.group.signal('SIGTERM');
    else if (fault === 'link') linkSet(this.lab, n, false);
    return at;
  }

  async recover(fault, n) {
    if (fault === 'sigstop') this.#signalAll(n, 'SIGCONT');
    else if (fault === 'link') linkSet(this.lab, n, true);
    else {
      await n.group.exited;
      // A killed VRRP child stays a zombie where nothing reaps orphans (a container's PID 1),
      // and keepalived takes its pid file for a running daemon: the files go first. SIGKILL
      // left the VIP on ext0 (keepalived never removed it); the new instance manages it.
      for (const f of ['k.pid', 'v.pid']) rmSync(join(n.dir, f), { force: true });
      await this.start(n);
    }
    await sleep(Math.max(1500, 5 * 1000 * this.advertInt)); // preemption back, settled
  }

  async down(ip) {
    for (const n of this.nodes) this.#signalAll(n, 'SIGKILL');
    for (const n of this.nodes) if (n.group?.alive) n.group.signal('SIGKILL');
    await Promise.all(this.nodes.map((n) => n.group?.exited));
    for (const n of this.nodes)
      spawnSync('ip', ['-n', n.netns, 'addr', 'del', `${ip}/24`, 'dev', 'ext0']);
  }
}
