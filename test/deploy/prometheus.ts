// A real Prometheus (Debian's `prometheus` server) for end-to-end alert tests: started on
// loopback with a port of its own, a temp data dir, a 1 s scrape and evaluation interval and
// the shipped alert rules made quick (every `for:` 1 s, every range 15 s: what the alerts
// wait for is promtool's to test, in deploy/prometheus/fibkeeper-rules.test.yaml); stopped
// by its PID and removed when the file ends.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cleanupLater } from '../helpers/cleanup.js';
import { waitFor } from '../helpers/netns.js';
import { freePort } from '../helpers/ports.js';

export { freePort };

export const RULES = 'deploy/prometheus/fibkeeper-rules.yaml';

/** A free TCP port on 127.0.0.1 (closed again: the caller binds it). */

/** The shipped rules with every `for:` cut to 1 s and every range to 15 s. */
export function quickRules(text: string): string {
  return text.replace(/^(\s+)for: \S+$/gm, '$1for: 1s').replace(/\[(\d+)[smh]\]/g, '[15s]');
}

export interface Alert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  state: 'pending' | 'firing';
}

export class Prometheus {
  readonly url: string;
  readonly #dir: string;
  readonly #proc: ChildProcess;
  #log = '';

  private constructor(url: string, dir: string, proc: ChildProcess) {
    this.url = url;
    this.#dir = dir;
    this.#proc = proc;
    proc.stdout?.on('data', (d: Buffer) => (this.#log = (this.#log + d.toString()).slice(-4000)));
    proc.stderr?.on('data', (d: Buffer) => (this.#log = (this.#log + d.toString()).slice(-4000)));
  }

  /** Starts Prometheus scraping `targets` (host:port) as job "fibkeeper". */
  static async start(targets: string[]): Promise<Prometheus> {
    const dir = mkdtempSync(join(tmpdir(), 'fkt-prom-'));
    writeFileSync(join(dir, 'rules.yaml'), quickRules(readFileSync(RULES, 'utf8')));
    writeConfig(dir, targets);
    const port = await freePort();
    const proc = spawn(
      'prometheus',
      [
        `--config.file=${join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
        '--web.enable-lifecycle',
        '--log.level=warn',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const p = new Prometheus(`http://127.0.0.1:${port}`, dir, proc);
    cleanupLater(() => p.stop());
    await waitFor(async () => (await fetch(`${p.url}/-/ready`).catch(() => undefined))?.ok, {
      what: `prometheus ready (${p.#log})`,
      timeoutMs: 30_000,
    });
    return p;
  }

  /** Scrapes `targets` from now on (POST /-/reload). */
  async setTargets(targets: string[]): Promise<void> {
    writeConfig(this.#dir, targets);
    const r = await fetch(`${this.url}/-/reload`, { method: 'POST' });
    if (!r.ok) throw new Error(`prometheus reload: ${r.status} ${await r.text()}`);
  }

  /** An instant query's vector. */
  async query(
    expr: string,
  ): Promise<{ metric: Record<string, string>; value: [number, string] }[]> {
    const r = await fetch(`${this.url}/api/v1/query?query=${encodeURIComponent(expr)}`);
    const body = (await r.json()) as { status: string; data: { result: [] }; error?: string };
    if (body.status !== 'success') throw new Error(`query ${expr}: ${body.error}`);
    return body.data.result;
  }

  async alerts(): Promise<Alert[]> {
    const r = await fetch(`${this.url}/api/v1/alerts`);
    return ((await r.json()) as { data: { alerts: Alert[] } }).data.alerts;
  }

  /** Waits until an alert named `name` whose labels include `labels` fires; returns it. */
  async firing(
    name: string,
    labels: Record<string, string> = {},
    timeoutMs = 60_000,
  ): Promise<Alert> {
    let seen: Alert[] = [];
    return waitFor(
      async () => {
        seen = await this.alerts();
        return seen.find(
          (a) =>
            a.state === 'firing' &&
            a.labels.alertname === name &&
            Object.entries(labels).every(([k, v]) => a.labels[k] === v),
        );
      },
      {
        what: () =>
          `${name} ${JSON.stringify(labels)} firing; alerts now: ${JSON.stringify(seen.map((a) => [a.labels, a.state]))}; log: ${this.#log}`,
        timeoutMs,
        intervalMs: 250,
      },
    );
  }

  stop(): void {
    if (this.#proc.exitCode === null && this.#proc.signalCode === null) this.#proc.kill('SIGKILL');
    rmSync(this.#dir, { recursive: true, force: true });
  }
}

function writeConfig(dir: string, targets: string[]): void {
  const cfg = [
    'global:',
    '  scrape_interval: 1s',
    '  scrape_timeout: 900ms',
    '  evaluation_interval: 1s',
    'rule_files:',
    `  - ${join(dir, 'rules.yaml')}`,
    'scrape_configs:',
    '  - job_name: fibkeeper',
    '    static_configs:',
    `      - targets: [${targets.map((t) => `"${t}"`).join(', ')}]`,
  ];
  writeFileSync(join(dir, 'prometheus.yml'), cfg.join('\n') + '\n');
}
