// The agent's own metrics: readiness and config reloads.
import { Counter, Gauge, type Registry } from 'prom-client';

export class AgentMetrics {
  readonly reloads: Counter<'result'>;
  constructor(registry: Registry, ready: () => boolean) {
    new Gauge({
      name: 'fibkeeper_agent_ready',
      help: '1 once the initial dumps are done and the first reconciliation round has finished.',
      registers: [registry],
      collect() {
        this.set(ready() ? 1 : 0);
      },
    });
    this.reloads = new Counter({
      name: 'fibkeeper_config_reloads_total',
      help: 'Config reloads (SIGHUP) by result: ok, or error (the running configuration was kept).',
      labelNames: ['result'],
      registers: [registry],
    });
  }
}
