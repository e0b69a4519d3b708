// SIGHUP: re-read the config file, all or nothing. Everything is checked first — the file,
// what `run` needs of it, the static lists against the node (its own addresses, IPv6 on the
// external interface) — and the XDP program swap, the one step that can still fail, goes
// before the rest. Only then are `forwardable.static`, `extip.static`, `cluster.static`
// (seeded into etcd) and the log level applied; the state file's entries are applied again (those skipped before may pass now).
// Other changes are logged as needing a restart. Runs alone in the write queue.
import { OPTIONS, checkRunnable, loadConfig, type FibkeeperConfig } from '../config/index.js';
import { describeError } from '../errors/index.js';
import type { AgentView } from './view.js';
import { planExtip, planForwardable, staticSets } from './restore.js';
import { usableOf } from './state.js';

export interface ReloadResult {
  applied: string[];
  needRestart: string[];
}

/** The XDP options marked `reload: 'live'` in the option table (programs swapped at once). */
const XDP_LIVE_KEYS = OPTIONS.filter((o) => o.reload === 'live' && o.path.startsWith('xdp.')).map(
  (o) => o.path.slice('xdp.'.length) as keyof FibkeeperConfig['xdp'],
);

function flat(o: unknown, prefix = ''): [string, string][] {
  return Object.entries(o as Record<string, unknown>).flatMap(([k, v]) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? flat(v, `${prefix}${k}.`)
      : [[`${prefix}${k}`, JSON.stringify(v)] as [string, string]],
  );
}

export async function reloadAgent(
  agent: AgentView,
  o: { configPath: string | undefined; flags: Readonly<Record<string, string | boolean>> },
): Promise<ReloadResult> {
  const cur = agent.cfg;
  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
  let next: FibkeeperConfig;
  let plan: {
    forwardable: ReturnType<typeof planForwardable> | undefined;
    extip: ReturnType<typeof planExtip> | undefined;
    skipped: ReturnType<typeof usableOf>['skipped'];
  };
  const applied: string[] = [];
  try {
    next = { ...loadConfig(o.configPath, o.flags), netns: cur.netns };
    checkRunnable(next);
    const { usable, skipped } = usableOf(agent.store.state, staticSets(next));
    plan = {
      forwardable: agent.neighbor && planForwardable(agent.neighbor, next, usable),
      extip: agent.extip && planExtip({ check: (ips) => agent.extip!.validate(ips) }, next, usable),
      skipped,
    };
    // XDP options apply at once (programs swapped atomically); the device list is shared
    // with the neighbor subsystem and needs a restart.
    const xdpChanged = XDP_LIVE_KEYS.filter((k) => next.xdp[k] !== cur.xdp[k]);
    if (agent.xdp && xdpChanged.length > 0 && next.xdp.pinDir === cur.xdp.pinDir) {
      await agent.xdp.reconfigure(agent.xdpConfig({ ...next, devices: cur.devices }));
      applied.push(...xdpChanged.map((k) => `xdp.${k}`));
    }
  } catch (err) {
    agent.metrics.reloads.inc({ result: 'error' });
    agent.log.error(
      { err: describeError(err) },
      'config reload refused; keeping the running configuration (nothing of the new file was applied)',
    );
    throw err;
  }
  // Checked: from here on nothing fails.
  const n = agent.neighbor;
  if (n && plan.forwardable) {
    for (const [owner, ips] of plan.forwardable.owners) n.setOwner(owner, ips);
    if (!same(next.forwardable.static, cur.forwardable.static)) applied.push('forwardable.static');
  }
  const x = agent.extip;
  if (x && plan.extip) {
    // The desired set changes now; the kernel follows in the background (the assigner
    // retries and reports what fails).
    x.setDesired(plan.extip.desired).catch((err: unknown) =>
      agent.log.error({ err: describeError(err) }, 'extip: some external IPs are not assigned yet'),
    );
    if (!same(next.extip.static, cur.extip.static)) applied.push('extip.static');
  }
  if (agent.cluster && !same(next.cluster.static, cur.cluster.static)) {
    agent.cluster.reseed(next.cluster.static); // added in the background when etcd answers
    applied.push('cluster.static');
  }
  agent.skipped = [
    ...plan.skipped,
    ...(plan.forwardable?.skipped ?? []),
    ...(plan.extip?.skipped ?? []),
  ];
  agent.reportSkipped('state file entries not applied after the reload');
  if (next.log.level !== cur.log.level) {
    agent.log.level = next.log.level;
    applied.push('log.level');
  }
  const before = new Map(flat(cur));
  const needRestart = flat(next)
    .filter(([k, v]) => before.get(k) !== v && !applied.includes(k))
    .map(([k]) => k);
  agent.cfg = next;
  agent.metrics.reloads.inc({ result: 'ok' });
  agent.log.info({ applied, needRestart }, 'config reloaded');
  if (needRestart.length > 0) {
    agent.log.warn({ options: needRestart }, 'these option changes take effect after a restart');
  }
  return { applied, needRestart };
}
