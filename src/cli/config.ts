import { StateStore, checkStaticsOnNode, staticSets } from '../agent/index.js';
import { readFileSync } from 'node:fs';
import {
  buildConfig,
  checkRunnable,
  exampleConfigYaml,
  loadConfig,
  type FibkeeperConfig,
} from '../config/index.js';
import { ConfigError, describeError } from '../errors/index.js';
import { NetlinkHandle } from '../netlink/index.js';
import { EXIT_OK, UsageError, type Command } from './command.js';

export const configExampleCommand: Command = {
  name: 'config example',
  summary: 'Print a config file with every option, its meaning and its default',
  usage: '',
  help: 'The same text is in deploy/fibkeeper.example.yaml.',
  options: {},
  async run(_args, io) {
    io.out(exampleConfigYaml());
    return EXIT_OK;
  },
};

export const configCheckCommand: Command = {
  name: 'config check',
  summary: 'Validate a config file as `run` does and print the resulting configuration as JSON',
  usage: 'FILE | -',
  help: [
    'Exit code 1 with an error naming the option when `fibkeeper run` would refuse the file:',
    'the same checks (options, their bounds and the rules between them, the token file, the',
    'state file). Every option with a bad value or an unknown name is reported at once; the',
    'rules between options are checked once each option is valid. `-` reads standard input.',
    'Entries of the state file that the agent would skip are listed on stderr.',
    'Where it can see the node (its network namespace, `netns`), it checks forwardable.static',
    "and extip.static against the node's addresses too, reading only; otherwise it says on",
    'stderr that it skipped that. Kernel features and capabilities are checked by `run`',
    'itself, before it changes anything.',
  ].join('\n'),
  options: {},
  positionals: true,
  async run(args, io) {
    const [file, ...rest] = args.positionals;
    if (!file || rest.length > 0) {
      throw new UsageError('give exactly one config file (- for standard input)');
    }
    const cfg = file === '-' ? buildConfig(readStdin(), {}, 'standard input') : loadConfig(file);
    checkRunnable(cfg);
    // Read only: an agent may be running and writing the file and its journal.
    const { skipped } = new StateStore(cfg.stateFile).load(staticSets(cfg), { repair: false });
    for (const e of skipped) {
      io.err(`warning: state file ${cfg.stateFile}: ${e.entry} would be skipped: ${e.reason}\n`);
    }
    if (cfg.xdp.enabled && cfg.xdp.nodePolicy === 'bypass') {
      io.err(
        "warning: xdp.nodePolicy: bypass: frames forwarded in XDP skip the node's netfilter (filter, connection tracking, NAT), tc and xfrm policy; respect (the default) sends the traffic they act on to the kernel\n",
      );
    }
    if (cfg.neighbor.refresh === 'managed') {
      io.err(
        `warning: neighbor.refresh: managed: above neighbor.rateLimit (${cfg.neighbor.rateLimit}) desired entries the kernel re-probes every stale managed entry at once, in bursts as large as the table, and most can go unusable (the agent then warns in status); auto (the default) runs managed entries up to rateLimit and refreshes them itself above\n`,
      );
    }
    const skippedWhy = await checkOnNode(cfg);
    if (skippedWhy !== undefined) {
      io.err(`note: the static lists were not checked against the node: ${skippedWhy}\n`);
    }
    io.out(
      JSON.stringify(
        { ...cfg, api: { ...cfg.api, socketMode: `0${cfg.api.socketMode.toString(8)}` } },
        null,
        2,
      ) + '\n',
    );
    return EXIT_OK;
  },
};

/**
 * The node checks of `run` (node-check.ts), when the node can be read: ConfigError when it
 * would refuse the file, else undefined; the reason when it cannot be read (no permission to
 * enter `netns`, no such namespace).
 */
async function checkOnNode(cfg: FibkeeperConfig): Promise<string | undefined> {
  let nl: NetlinkHandle;
  try {
    nl = NetlinkHandle.open(cfg.netns ? { netns: cfg.netns } : {});
  } catch (err) {
    return describeError(err);
  }
  try {
    await checkStaticsOnNode(nl, cfg, cfg.netns || undefined);
    return undefined;
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    return describeError(err);
  } finally {
    nl.close();
  }
}

/** Standard input as text (`config check -`). */
function readStdin(): string {
  try {
    return readFileSync(0, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read standard input: ${(err as Error).message}`);
  }
}
