import { loadConfig } from '../config/index.js';
import { detachPinned } from '../fib/index.js';
import { createLogger } from '../log/index.js';
import type { MissRow } from '../agent/index.js';
import { COMMON, COMMON_HELP, clientFor } from './client-commands.js';
import { EXIT_OK, UsageError, str, type Command } from './command.js';
import { OUTPUT_HELP, OUTPUT_OPTIONS, outputOf, printData } from './output.js';
import { columns } from './status-format.js';

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

/** GET /v1/xdp/misses: the miss rows, and whether the miss tracker empties the map. */
export interface XdpMissesDocument {
  tracker: boolean;
  misses: MissRow[];
}

export const xdpMissesCommand: Command = {
  name: 'xdp misses',
  summary: 'List the destinations XDP passed to the kernel lately for want of a neighbor entry',
  usage: '[--limit N] [-o text|json|yaml]',
  help: [
    'The destinations XDP found no neighbor entry for (NO_NEIGH) in the last 10 minutes,',
    'most packets first: the kernel forwarded those packets instead of XDP. DESTINATION is',
    "the packet's, NEXT HOP the neighbor the route wanted, HITS the packets counted.",
    '',
    'Options:',
    '  --limit N       at most N destinations (1-4096; default 20)',
    ...OUTPUT_HELP,
    ...COMMON_HELP,
  ].join('\n'),
  options: { ...COMMON, ...OUTPUT_OPTIONS, limit: { type: 'string' } },
  async run(args, io) {
    const o = outputOf(args, ['text', 'json', 'yaml']);
    const limit = str(args, 'limit');
    if (limit !== undefined && !/^[1-9]\d{0,3}$/.test(limit)) {
      throw new UsageError(`--limit ${limit}: give a whole number from 1 to 4096`);
    }
    const qs = limit === undefined ? '' : `?limit=${limit}`;
    const r = await clientFor(args).call<XdpMissesDocument>('GET', `/v1/xdp/misses${qs}`);
    if (printData(io, o, r)) return EXIT_OK;
    if (r.misses.length === 0) {
      io.out('no XDP misses in the last 10 minutes: XDP found a neighbor entry for every packet\n');
      return EXIT_OK;
    }
    io.out(
      columns(
        ['DESTINATION', 'NEXT HOP', 'DEVICE', 'HITS', 'LAST SEEN'],
        r.misses.map((m) => [
          m.dst,
          m.nexthop,
          m.device,
          String(m.hits),
          `${(m.lastSeenAgoMs / 1000).toFixed(1)} s ago`,
        ]),
      ),
    );
    return EXIT_OK;
  },
};
