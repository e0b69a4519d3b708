import { StateStore, staticSets } from '../agent/index.js';
import { checkRunnable, exampleConfigYaml, loadConfig } from '../config/index.js';
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
  usage: 'FILE',
  help: [
    'Exit code 1 with an error naming the option when `fibkeeper run` would refuse the file:',
    'the same checks (options, their bounds and the rules between them, the token file, the',
    'state file). Entries of the state file that the agent would skip are listed on stderr.',
    'What only the running node can tell (its addresses, kernel features, capabilities) is',
    'checked by `run` itself, before it changes anything.',
  ].join('\n'),
  options: {},
  positionals: true,
  async run(args, io) {
    const [file, ...rest] = args.positionals;
    if (!file || rest.length > 0) throw new UsageError('give exactly one config file');
    const cfg = loadConfig(file);
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
