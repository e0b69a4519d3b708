import { createServer } from 'node:net';
import { describeLab, labDown, labUp, type Lab } from '../lab/index.js';
import { EXIT_OK, str, type Command } from './command.js';

const prefixHelp =
  '  --prefix NAME   namespace name prefix (default fklab): NAME-client, NAME-router, ...';

/** A TCP port free on loopback now (for the lab agent's metrics). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => resolve(typeof a === 'object' && a ? a.port : 9470));
    });
    s.on('error', reject);
  });
}

/**
 * `fibkeeper run` for the lab's router, with paths of the lab's own — control socket, state
 * file, XDP pin directory (unpinned when it stops: the lab is throwaway) — and a metrics
 * port that was free, so it never takes an agent of the node's socket, state or pins.
 */
export function labRunCommand(lab: Lab, metricsPort: number): string {
  return [
    'fibkeeper run',
    `--netns ${lab.hosts.router}`,
    `--devices ${lab.routerDevices.join(',')}`,
    '--extip-enabled=true --extip-holder-kind bridge',
    `--extip-interface ${lab.routerExternal}`,
    `--api-socket /run/fibkeeper/${lab.prefix}.sock`,
    `--state-file /run/fibkeeper/${lab.prefix}/state.json`,
    `--xdp-pin-dir /sys/fs/bpf/fibkeeper-${lab.prefix}`,
    '--xdp-keep-on-stop=false',
    `--metrics-address 127.0.0.1:${metricsPort}`,
  ].join(' ');
}

export const labUpCommand: Command = {
  name: 'lab up',
  summary: 'Build the demo topology of network namespaces and leave it up to play with',
  usage: '[--prefix NAME]',
  help: ['Options:', prefixHelp].join('\n'),
  options: { prefix: { type: 'string' } },
  async run(args, io) {
    const lab = labUp(str(args, 'prefix') ?? 'fklab');
    const port = await freePort();
    io.out(
      [
        `lab "${lab.prefix}" is up:`,
        `  ${lab.hosts.client} (${lab.addr.client}) -- ${lab.hosts.router} -- ${lab.hosts.server1} (${lab.addr.server1})`,
        `  ${lab.hosts.router} -- ${lab.hosts.gw} (${lab.addr.gw}) -- ${lab.hosts.server2} (${lab.addr.server2})`,
        `Run the agent in the router (its own socket, state file, pins and metrics port: it`,
        `does not collide with an agent of the node):`,
        `  ${labRunCommand(lab, port)}`,
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
