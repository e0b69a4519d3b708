import { describeLab, labDown, labUp } from '../lab/index.js';
import { EXIT_OK, str, type Command } from './command.js';

const prefixHelp =
  '  --prefix NAME   namespace name prefix (default fklab): NAME-client, NAME-router, ...';

export const labUpCommand: Command = {
  name: 'lab up',
  summary: 'Build the demo topology of network namespaces and leave it up to play with',
  usage: '[--prefix NAME]',
  help: ['Options:', prefixHelp].join('\n'),
  options: { prefix: { type: 'string' } },
  async run(args, io) {
    const lab = labUp(str(args, 'prefix') ?? 'fklab');
    io.out(
      [
        `lab "${lab.prefix}" is up:`,
        `  ${lab.hosts.client} (${lab.addr.client}) -- ${lab.hosts.router} -- ${lab.hosts.server1} (${lab.addr.server1})`,
        `  ${lab.hosts.router} -- ${lab.hosts.gw} (${lab.addr.gw}) -- ${lab.hosts.server2} (${lab.addr.server2})`,
        `Run the agent in the router:`,
        `  fibkeeper run --netns ${lab.hosts.router} --devices ${lab.routerDevices.join(',')} --extip-enabled=true --extip-holder-kind bridge --extip-interface ${lab.routerExternal} --api-socket /run/fibkeeper/${lab.prefix}.sock`,
        `Remove it with: fibkeeper lab down --prefix ${lab.prefix}`,
        '',
      ].join('\n'),
    );
    return EXIT_OK;
  },
};

export const labDownCommand: Command = {
  name: 'lab down',
  summary: 'Remove the demo topology',
  usage: '[--prefix NAME]',
  help: ['Options:', prefixHelp].join('\n'),
  options: { prefix: { type: 'string' } },
  async run(args, io) {
    const prefix = str(args, 'prefix') ?? 'fklab';
    const removed = labDown(prefix);
    io.out(
      removed.length
        ? `removed ${removed.join(' ')}\n`
        : `no lab "${describeLab(prefix).prefix}" found\n`,
    );
    return EXIT_OK;
  },
};
