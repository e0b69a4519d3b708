import { loadConfig } from '../config/index.js';
import { detachPinned } from '../fib/index.js';
import { createLogger } from '../log/index.js';
import { clientFor } from './client-commands.js';
import { EXIT_OK, str, type Command } from './command.js';

export const xdpDetachCommand: Command = {
  name: 'xdp detach',
  summary: "Detach and unpin fibkeeper's XDP programs (never anyone else's)",
  usage: '[--config FILE] [--socket PATH] [--netns NAME] [--pin-dir DIR]',
  help: [
    'Options:',
    '  --config FILE   read api.socket, netns and xdp.pinDir from this config file',
    "  --socket PATH   the agent's control socket: when an agent answers there, it detaches",
    '  --netns NAME    namespace of the devices (without a running agent)',
    "  --pin-dir DIR   the agent's xdp.pinDir (without a running agent)",
    '',
    'With a running agent, the agent detaches (and keeps XDP off until it restarts).',
    'Without one, the pinned links under the pin directory are detached and unpinned.',
  ].join('\n'),
  options: {
    config: { type: 'string' },
    socket: { type: 'string' },
    netns: { type: 'string' },
    'pin-dir': { type: 'string' },
  },
  async run(args, io) {
    try {
      const r = await clientFor(args).call<{ detached: string[] }>('POST', '/v1/xdp/detach');
      io.out(`detached by the agent: ${r.detached.join(' ') || '(nothing attached)'}\n`);
      return EXIT_OK;
    } catch (err) {
      if ((err as { code?: string }).code !== 'FIBKEEPER_ERR_NOT_FOUND') throw err;
    }
    const cfg = loadConfig(str(args, 'config'));
    const netns = str(args, 'netns') ?? (cfg.netns || undefined);
    const detached = detachPinned({
      ...(netns ? { netns } : {}),
      pinDir: str(args, 'pin-dir') ?? cfg.xdp.pinDir,
      log: createLogger('warn'),
    });
    io.out(
      `no agent running; detached from the pins: ${detached.join(' ') || '(nothing pinned)'}\n`,
    );
    return EXIT_OK;
  },
};
