// The agent's events (src/events): the log every subsystem reports into, and what the agent
// itself reports — XDP attachments and the node policy per device (from each pass of the
// forwarder, compared with the pass before), config reloads, kernel sockets reopened, changes
// of forwardable IPs through the write queue. GET /v1/events serves the log.
import type { Change, OwnerChange } from './control.js';
import { EventLog, type EventSink } from '../events/index.js';
import type { PolicyHit, XdpDeviceStatus } from '../fib/index.js';
import { ClusterEvents } from './cluster-events.js';

/** Events kept for `fibkeeper events --since`. */
export const EVENT_LOG_CAPACITY = 1000;

const sample = (ips: readonly unknown[], max = 5): string[] =>
  ips.slice(0, max).map((x) => (typeof x === 'string' ? x : (x as { address: string }).address));

const policyText = (hits: readonly PolicyHit[] | undefined): string =>
  hits === undefined || hits.length === 0
    ? 'xdp'
    : `kernel (${hits[0]!.reason}: ${hits[0]!.what}${hits.length > 1 ? ` +${hits.length - 1}` : ''})`;

export class AgentEvents {
  readonly log: EventLog;
  readonly cluster: ClusterEvents;
  #xdp = new Map<string, XdpDeviceStatus>();

  constructor(capacity = EVENT_LOG_CAPACITY) {
    this.log = new EventLog({ capacity });
    this.cluster = new ClusterEvents(this.log);
  }

  get sink(): EventSink {
    return this.log;
  }

  /** A pass of the XDP forwarder: what changed per device since the pass before. */
  xdpPass(devices: readonly XdpDeviceStatus[]): void {
    const next = new Map(devices.map((d) => [d.name, d]));
    for (const d of devices) this.#xdpDevice(this.#xdp.get(d.name), d);
    for (const [name, was] of this.#xdp) {
      if (!next.has(name) && was.attached === 'ours') {
        this.log.emit('xdp.detached', `${name}: program detached (device no longer selected)`, {
          device: name,
        });
      }
    }
    this.#xdp = next;
  }

  #xdpDevice(was: XdpDeviceStatus | undefined, d: XdpDeviceStatus): void {
    const dev = d.name;
    if (
      d.attached === 'ours' &&
      (was?.attached !== 'ours' || was.progId !== d.progId || was.mode !== d.mode)
    ) {
      this.log.emit(
        'xdp.attached',
        `${dev}: program ${d.progId ?? '?'} attached in ${d.mode ?? '?'} mode`,
        { device: dev, progId: d.progId ?? null, mode: d.mode ?? null },
      );
    } else if (d.attached === 'foreign' && was?.attached !== 'foreign') {
      this.log.emit(
        'xdp.foreign',
        `${dev}: an XDP program fibkeeper did not attach is there (${d.foreign?.owner ?? 'unknown'}); left alone`,
        { device: dev, progId: d.progId ?? null },
      );
    } else if (d.attached === 'none' && was?.attached === 'ours') {
      this.log.emit(
        'xdp.detached',
        `${dev}: program detached (${d.error ?? (d.ifindex === 0 ? 'device gone' : 'device down or not selected')})`,
        { device: dev },
      );
    }
    if (d.error !== undefined && d.error !== was?.error && d.attached !== 'foreign') {
      this.log.emit('xdp.error', `${dev}: ${d.error}`, { device: dev, error: d.error });
    }
    if (d.policy === undefined) return;
    for (const dir of ['ipv4', 'ipv6', 'egress'] as const) {
      const now = policyText(d.policy[dir]);
      const before = was?.policy === undefined ? undefined : policyText(was.policy[dir]);
      if (before === undefined ? now === 'xdp' : now === before) continue;
      this.log.emit(
        'xdp.policy',
        `${dev} ${dir}: ${d.policy.applied ? 'forwarded by ' : 'bypass: would be '}${now}`,
        { device: dev, direction: dir, forwardedBy: now === 'xdp' ? 'xdp' : 'kernel' },
      );
    }
  }

  /** XDP detached through the API. */
  xdpDetached(devices: readonly string[]): void {
    for (const dev of devices) {
      this.log.emit('xdp.detached', `${dev}: program detached (fibkeeper xdp detach)`, {
        device: dev,
      });
      this.#xdp.delete(dev);
    }
  }

  reloaded(r: { applied: readonly string[]; needRestart: readonly string[] }): void {
    this.log.emit(
      'config.reloaded',
      `config reloaded; applied: ${r.applied.join(', ') || 'nothing changed'}${r.needRestart.length ? `; after a restart: ${r.needRestart.join(', ')}` : ''}`,
      { applied: [...r.applied], needRestart: [...r.needRestart] },
    );
  }

  reloadRefused(why: string): void {
    this.log.emit('config.refused', `config reload refused, nothing applied: ${why}`, {
      error: why,
    });
  }

  socketReopened(socket: string, cause: string, failed: boolean): void {
    this.log.emit(
      'socket.reopened',
      failed
        ? `kernel socket ${socket} could not be reopened after ${cause}; tried again`
        : `kernel socket ${socket} reopened after ${cause}`,
      { socket, cause, ok: !failed },
    );
  }

  /** A forwardable change through the write queue, applied. */
  forwardable(c: Change, changed: OwnerChange | undefined): void {
    if (!c.op.startsWith('forwardable.') || !('owner' in c)) return;
    const n = c.ips.length;
    const owner = c.owner;
    const ips = sample(c.ips);
    const more = n > ips.length ? ' …' : '';
    if (c.op === 'forwardable.set') {
      this.log.emit(
        'forwardable.replaced',
        `owner ${owner} now holds ${n} IP(s)${changed ? ` (+${changed.added}, -${changed.removed})` : ''}`,
        { owner, count: n, added: changed?.added ?? null, removed: changed?.removed ?? null },
      );
      return;
    }
    const add = c.op === 'forwardable.add';
    const count = (add ? changed?.added : changed?.removed) ?? n;
    if (count === 0) return; // nothing changed: no event
    this.log.emit(
      add ? 'forwardable.added' : 'forwardable.removed',
      `${count} IP(s) ${add ? 'made forwardable for' : 'released by'} owner ${owner}: ${ips.join(' ')}${more}`,
      { owner, count, sample: ips },
    );
  }
}
