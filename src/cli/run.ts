// `fibkeeper run`: the long-running agent.
import { Agent } from '../agent/index.js';
import { OPTIONS, flagName, loadConfig } from '../config/index.js';
import { describeError } from '../errors/index.js';
import { createLogger } from '../log/index.js';
import { setLibbpfLogger } from '../native/index.js';
import { EXIT_FAILED, EXIT_OK, str, type Command, type OptionsSpec } from './command.js';
import { SystemdNotifier } from './notify.js';
import { packageVersion } from './version.js';

const optionFlags: OptionsSpec = Object.fromEntries(
  OPTIONS.map((o) => [flagName(o.path), { type: 'string' as const }]),
);

export const runCommand: Command = {
  name: 'run',
  summary: 'Run the agent (XDP forwarding, neighbor freshness, external IPs, control API, metrics)',
  usage: '[--config FILE] [--<option>=VALUE ...]',
  help: [
    'Options:',
    '  --config FILE   YAML or JSON config file (`fibkeeper config example` shows every option)',
    ...OPTIONS.map(
      (o) =>
        `  --${flagName(o.path)}=${o.values ? o.values.join('|') : o.type.toUpperCase()}\n      ${o.doc}`,
    ),
    '',
    'Flags win over the file. Lists are comma-separated; booleans take =true or =false.',
    'Signals: SIGTERM/SIGINT stop gracefully (forwarding state stays in place), SIGHUP reloads',
    'the config file (static forwardable and external IPs, log level, XDP options).',
    'Under systemd (Type=notify, NOTIFY_SOCKET set) it sends READY=1 once ready (or after 30 s',
    'with STATUS= naming what is not ready), RELOADING=1/READY=1 around a reload, STOPPING=1.',
  ].join('\n'),
  options: { config: { type: 'string' }, ...optionFlags },
  async run(args, io) {
    const flags: Record<string, string> = {};
    for (const o of OPTIONS) {
      const v = str(args, flagName(o.path));
      if (v !== undefined) flags[flagName(o.path)] = v;
    }
    const configPath = str(args, 'config');
    const cfg = loadConfig(configPath, flags);
    const log = createLogger(cfg.log.level);
    const libbpf = log.child({ component: 'libbpf' });
    setLibbpfLogger((level, msg) => libbpf[level === 'warn' ? 'warn' : 'debug'](msg.trimEnd()));
    const systemd = new SystemdNotifier(log);
    const agent = new Agent({
      config: cfg,
      ...(configPath ? { configPath } : {}),
      flags,
      version: packageVersion(),
      log,
    });
    try {
      await agent.start();
    } catch (err) {
      io.err(`fibkeeper run: ${describeError(err)}\n`);
      return EXIT_FAILED;
    }
    const stopped = new AbortController();
    void systemd.started(agent, stopped.signal);
    return new Promise<number>((resolve) => {
      let stopping = false;
      const stop = (signal: string) => {
        if (stopping) return;
        stopping = true;
        stopped.abort();
        systemd.stopping();
        log.info({ signal }, 'stopping');
        agent.stop().then(
          () => resolve(EXIT_OK),
          () => resolve(EXIT_FAILED),
        );
      };
      process.on('SIGTERM', () => stop('SIGTERM'));
      process.on('SIGINT', () => stop('SIGINT'));
      process.on('SIGHUP', () => {
        systemd.reloading();
        agent
          .reload()
          .catch(() => {
            /* logged by the agent; the running configuration stays */
          })
          .finally(() => {
            if (!stopping) systemd.ready(agent);
          });
      });
    });
  },
};
