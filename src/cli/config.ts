import { exampleConfigYaml, loadConfig } from '../config/index.js';
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
  summary: 'Validate a config file and print the resulting configuration as JSON',
  usage: 'FILE',
  help: 'Exit code 1 with an error naming the option when the file is not valid.',
  options: {},
  positionals: true,
  async run(args, io) {
    const [file, ...rest] = args.positionals;
    if (!file || rest.length > 0) throw new UsageError('give exactly one config file');
    const cfg = loadConfig(file);
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
