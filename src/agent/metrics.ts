// Metric group of the agent itself: readiness, config reloads, kernel sockets replaced, the
// event stream's followers, and the XDP miss tracker.
import { Counter, Gauge, type Registry } from '../metrics/index.js';
import { SOCKET_NAMES } from '../netlink/index.js';

export interface AgentMetrics {
  reloads: Counter<'result'>;
  /** Saves of the state file by result: ok, or error (the requests of that save failed). */
  stateSaves: Counter<'result'>;
  /** Kernel sockets closed and opened afresh after an error or silence, by socket. */
  socketReopens: Counter<'socket'>;
  /** Followers of GET /v1/events cut off for leaving too much unread. */
  eventFollowersCut: Counter;
}

export function registerAgentMetrics(
  registry: Registry,
  ready: () => boolean,
  stateSkipped: () => number = () => 0,
  healthy: () => boolean = () => true,
  followers: () => number = () => 0,
): AgentMetrics {
  new Gauge({
    name: 'fibkeeper_agent_ready',
    help: '1 once the initial dumps are done and the first reconciliation round has finished.',
    registers: [registry],
    collect() {
      this.set(ready() ? 1 : 0);
    },
  });
  new Gauge({
    name: 'fibkeeper_agent_healthy',
    help: '1 while /healthz answers 200; 0 while something needs an operator (its reasons: /healthz, fibkeeper status).',
    registers: [registry],
    collect() {
      this.set(healthy() ? 1 : 0);
    },
  });
  const reloads = new Counter({
    name: 'fibkeeper_config_reloads_total',
    help: 'Config reloads (SIGHUP) by result: ok, or error (the running configuration was kept).',
    labelNames: ['result'],
    registers: [registry],
  });
  for (const result of ['ok', 'error']) reloads.inc({ result }, 0); // series from the start
  const stateSaves = new Counter({
    name: 'fibkeeper_state_saves_total',
    help: 'Durable saves of the state file (each before the control API requests it holds are answered), by result: ok, or error (those requests failed and nothing of them was applied).',
    labelNames: ['result'],
    registers: [registry],
  });
  for (const result of ['ok', 'error']) stateSaves.inc({ result }, 0);
  new Gauge({
    name: 'fibkeeper_state_entries_skipped',
    help: 'Entries of the state file that the agent did not apply at its last start or reload (each logged with its reason; fibkeeper status lists them).',
    registers: [registry],
    collect() {
      this.set(stateSkipped());
    },
  });
  const socketReopens = new Counter({
    name: 'fibkeeper_socket_reopens_total',
    help: 'Kernel sockets closed and opened afresh after an error (other than a receive overflow) or after they stopped answering the liveness probes, by socket: request (the rtnetlink request socket), link, route, neighbor, xdp (event subscriptions), genl (xdp_features), packet (the external interface). Each reopen is logged once with its errno.',
    labelNames: ['socket'],
    registers: [registry],
  });
  for (const socket of SOCKET_NAMES) socketReopens.inc({ socket }, 0);
  new Gauge({
    name: 'fibkeeper_events_followers',
    help: 'Clients following the event stream now (fibkeeper events -f, GET /v1/events?follow=1).',
    registers: [registry],
    collect() {
      this.set(followers());
    },
  });
  const eventFollowersCut = new Counter({
    name: 'fibkeeper_events_followers_cut_total',
    help: 'Followers of the event stream cut off because they left more than 4 MiB unread (the agent holds no more for a slow client; it is told so in a last line).',
    registers: [registry],
  });
  return { reloads, stateSaves, socketReopens, eventFollowersCut };
}

export interface MissTrackerMetrics {
  learned: Counter;
  expired: Counter;
}

export function registerMissTrackerMetrics(
  registry: Registry,
  tracked: () => number,
): MissTrackerMetrics {
  new Gauge({
    name: 'fibkeeper_xdp_miss_tracker_tracked',
    help: 'Next hops currently forwardable because of XDP misses (owner xdp-miss).',
    registers: [registry],
    collect() {
      this.set(tracked());
    },
  });
  return {
    learned: new Counter({
      name: 'fibkeeper_xdp_miss_tracker_learned_total',
      help: 'Next hops added as forwardable IPs (owner xdp-miss) because XDP saw NO_NEIGH for them.',
      registers: [registry],
    }),
    expired: new Counter({
      name: 'fibkeeper_xdp_miss_tracker_expired_total',
      help: 'Next hops learned from XDP misses that expired after the TTL without a new miss.',
      registers: [registry],
    }),
  };
}
