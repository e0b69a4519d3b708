// `fibkeeper run`: the long-running agent.
import { Agent } from '../agent/index.js';
import { OPTIONS, flagName, loadConfig } from '../config/index.js';
import { describeError } from '../errors/index.js';
import { createLogger, type Logger } from '../log/index.js';
import {
  configureFaults,
  exitAfter,
  faultCounts,
  parseFaultSpec,
  setLibbpfLogger,
  type FaultSpec,
} from '../native/index.js';
import { EXIT_FAILED, EXIT_OK, str, type Command, type OptionsSpec } from './command.js';
import { Periodic, systemClock } from '../sched/index.js';
import { SystemdNotifier } from './notify.js';
import { packageVersion } from './version.js';

const optionFlags: OptionsSpec = Object.fromEntries(
  OPTIONS.map((o) => [flagName(o.path), { type: 'string' as const }]),
);

/**
 * How long a stop may take after SIGTERM or SIGINT, ms. The graceful stop (start order
 * backwards) normally takes well under a second; when it waits for the kernel (a netlink
 * reply that never comes, a send thread stuck in the kernel), a thread of the addon ends the
 * process at this bound (exit code 1), whatever the event loop is doing.
 */
export const STOP_BOUND_MS = 5000;

/**
 * Test-only fault injection (src/native/faults.ts), from FIBKEEPER_TEST_FAULTS, never from
 * the config: its spec (undefined without the variable). arm() arms it, loudly.
 */
function testFaults(env: NodeJS.ProcessEnv): FaultSpec | undefined {
  const text = env.FIBKEEPER_TEST_FAULTS;
  return text === undefined || text === '' ? undefined : parseFaultSpec(text);
}

function armTestFaults(spec: FaultSpec, text: string, log: Logger): void {
  const rules = configureFaults(spec);
  log.warn(
    { faults: text, rules },
    'TEST FAULT INJECTION ARMED (FIBKEEPER_TEST_FAULTS): kernel calls will fail on purpose',
  );
  if (rules.length > 0) {
    const report = () => log.warn({ injected: faultCounts() }, 'test faults injected');
    new Periodic(systemClock, 5000, report, { unref: true }).start();
  }
}

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
    'the config file, all or nothing (static forwardable and external IPs, log level, XDP',
    'options). During the start both wait for it to end.',
    'Under systemd (Type=notify, NOTIFY_SOCKET set) it sends READY=1 once ready (or after 30 s',
    'with STATUS= naming what is not ready), RELOADING=1/READY=1 around a reload, STOPPING=1,',
    'and with WatchdogSec= (WATCHDOG_USEC set) WATCHDOG=1 while /livez would answer 200.',
    `A stop ends within ${STOP_BOUND_MS / 1000} s whatever it waits for (then with exit code 1).`,
  ].join('\n'),
  options: { config: { type: 'string' }, ...optionFlags },
  async run(args, io) {
    // Signals first: a SIGHUP during the start waits for it (then reloads), a SIGTERM or
    // SIGINT during the start stops the agent once the start has ended.
    let agent: Agent | undefined;
    let systemd: SystemdNotifier | undefined;
    let started = false;
    const stopped = new AbortController();
    let hupEarly = false;
    let stopping = false;
    let exit: (code: number) => void = () => undefined;
    const exited = new Promise<number>((r) => (exit = r));
    const reload = () => {
      const a = agent;
      const notify = started; // a reload asked for during the start: READY=1 comes from the start
      if (notify) systemd?.reloading();
      a?.reload()
        .catch(() => {
          /* logged by the agent; the running configuration stays */
        })
        .finally(() => {
          if (notify && !stopping && a) systemd?.ready(a);
        });
    };
    const onHup = () => (agent ? reload() : (hupEarly = true));
    const stop = (signal: string) => {
      if (stopping) return;
      stopping = true;
      stopped.abort();
      systemd?.stopping();
      exitAfter(
        STOP_BOUND_MS,
        EXIT_FAILED,
        `fibkeeper run: the stop did not end within ${STOP_BOUND_MS} ms; exiting now`,
      );
      const a = agent;
      if (!a) return exit(EXIT_FAILED);
      a.log.info({ signal }, 'stopping');
      void a
        .settled()
        .then(() => a.stop())
        .then(
          () => exit(EXIT_OK),
          () => exit(EXIT_FAILED),
        );
    };
    const onTerm = () => stop('SIGTERM');
    const onInt = () => stop('SIGINT');
    process.on('SIGHUP', onHup);
    process.on('SIGTERM', onTerm);
    process.on('SIGINT', onInt);
    const flags: Record<string, string> = {};
    for (const o of OPTIONS) {
      const v = str(args, flagName(o.path));
      if (v !== undefined) flags[flagName(o.path)] = v;
    }
    const configPath = str(args, 'config');
    try {
      const cfg = loadConfig(configPath, flags);
      const log = createLogger(cfg.log.level);
      const libbpf = log.child({ component: 'libbpf' });
      setLibbpfLogger((level, msg) => libbpf[level === 'warn' ? 'warn' : 'debug'](msg.trimEnd()));
      const faults = testFaults(process.env);
      if (faults?.phase === 'start') armTestFaults(faults, process.env.FIBKEEPER_TEST_FAULTS!, log);
      const health = faults?.health;
      systemd = new SystemdNotifier(log);
      agent = new Agent({
        config: cfg,
        ...(configPath ? { configPath } : {}),
        flags,
        version: packageVersion(),
        log,
        ...(health ? { health } : {}),
      });
      systemd.watchdog(agent, stopped.signal);
      if (hupEarly) reload(); // waits for the start
      await agent.start();
      if (faults?.phase === 'ready') armTestFaults(faults, process.env.FIBKEEPER_TEST_FAULTS!, log);
      started = true;
      void systemd.started(agent, stopped.signal);
    } catch (err) {
      process.off('SIGHUP', onHup);
      process.off('SIGTERM', onTerm);
      process.off('SIGINT', onInt);
      io.err(`fibkeeper run: ${describeError(err)}\n`);
      return EXIT_FAILED;
    }
    return exited;
  },
};
