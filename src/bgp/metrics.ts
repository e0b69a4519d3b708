// Metric group of BGP announcement (src/bgp): what is announced, what was advertised and
// withdrawn, each peer's session, the daemon's restarts and refused configurations. Label
// values come from small fixed sets (the peer label is the configured peer's protocol name,
// bounded by bgp.peers); IPs never become labels.
import { Counter, Gauge, type Registry } from '../metrics/index.js';

export interface BgpMetrics {
  announced: Gauge<'family'>;
  advertised: Counter<'family'>;
  withdrawn: Counter<'family'>;
  sessionUp: Gauge<'peer'>;
  exported: Gauge<'peer'>;
  daemonRestarts: Counter;
  configureErrors: Counter;
}

/** `sessions` is read at scrape time (the daemon's `show protocols all`). */
export function registerBgpMetrics(
  registry: Registry,
  sessions: () => Promise<{ peer: string; up: boolean; exported: number }[]>,
): BgpMetrics {
  const registers = [registry];
  const m: BgpMetrics = {
    announced: new Gauge({
      name: 'fibkeeper_bgp_announced',
      help: 'External IPs the BGP daemon is told to announce, by family',
      labelNames: ['family'],
      registers,
    }),
    advertised: new Counter({
      name: 'fibkeeper_bgp_advertised_total',
      help: 'External IPs added to the announced set, by family',
      labelNames: ['family'],
      registers,
    }),
    withdrawn: new Counter({
      name: 'fibkeeper_bgp_withdrawn_total',
      help: 'External IPs taken out of the announced set, by family',
      labelNames: ['family'],
      registers,
    }),
    sessionUp: new Gauge({
      name: 'fibkeeper_bgp_session_up',
      help: '1 while the BGP session to the peer is Established (peer: fk_peerN, the Nth of bgp.peers)',
      labelNames: ['peer'],
      registers,
      async collect() {
        const s = await sessions().catch(() => []);
        this.reset();
        for (const x of s) this.set({ peer: x.peer }, x.up ? 1 : 0);
      },
    }),
    exported: new Gauge({
      name: 'fibkeeper_bgp_peer_routes_exported',
      help: 'Routes the daemon advertises to the peer now',
      labelNames: ['peer'],
      registers,
      async collect() {
        const s = await sessions().catch(() => []);
        this.reset();
        for (const x of s) this.set({ peer: x.peer }, x.exported);
      },
    }),
    daemonRestarts: new Counter({
      name: 'fibkeeper_bgp_daemon_restarts_total',
      help: 'Times the BGP daemon ended unexpectedly and was started again',
      registers,
    }),
    configureErrors: new Counter({
      name: 'fibkeeper_bgp_configure_errors_total',
      help: 'Configurations the BGP daemon refused or could not be given',
      registers,
    }),
  };
  for (const f of ['ipv4', 'ipv6']) {
    m.announced.set({ family: f }, 0);
    m.advertised.inc({ family: f }, 0);
    m.withdrawn.inc({ family: f }, 0);
  }
  return m;
}
