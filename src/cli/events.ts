// `fibkeeper events`: what the agent did and saw, like `ip monitor` and `cilium monitor`. The
// events the agent keeps (its last EVENT_LOG_CAPACITY), then with --follow each new one as it
// comes (GET /v1/events?follow=1, JSON lines), until interrupted. Text: one readable line an
// event; -o json: the agent's JSON line as it is (for jq).
import { formatEventLine, type AgentEvent } from '../events/index.js';
import { clientFor } from './client-commands.js';
import { EXIT_FAILED, EXIT_OK, UsageError, flag, str, type Command } from './command.js';
import { outputOf } from './output.js';

export const eventsCommand: Command = {
  name: 'events',
  summary: 'Show what the agent did: entries repaired, IPs defended, takeovers, XDP, reloads',
  usage: '[--follow] [--since DURATION|TIME] [--type TYPE[,TYPE...]] [-o text|json]',
  help: [
    'Options:',
    '  --follow, -f        after the events kept, print each new one as it happens',
    '  --since D|T         only events of the last D (30s, 5m, 1h) or since an ISO 8601 time',
    '  --type T[,T...]     only these types, or subsystems (neighbor, extip, cluster, xdp,',
    '                      forwardable, config, socket, agent): --type neighbor,extip.conflict',
    '  -o, --output FMT    text (one line an event, the default) or json (one JSON object a',
    '                      line, with seq, time, type, summary and the fields of its type)',
    '  --socket PATH       control socket of the agent (default: $FIBKEEPER_SOCKET, else',
    '                      api.socket of --config)',
    '  --config FILE       read api.socket from this config file',
    '',
    'The agent keeps its last 1000 events. A follower that reads slower than the agent',
    'writes is cut off (the agent holds no more than 4 MiB for it): the command then says',
    'so and exits 1.',
  ].join('\n'),
  options: {
    socket: { type: 'string' },
    config: { type: 'string' },
    follow: { type: 'boolean', short: 'f' },
    since: { type: 'string' },
    type: { type: 'string' },
    output: { type: 'string', short: 'o' },
  },
  async run(args, io) {
    const output = outputOf(args, ['text', 'json']);
    const q = new URLSearchParams();
    const follow = flag(args, 'follow');
    if (follow) q.set('follow', '1');
    const since = str(args, 'since');
    if (since !== undefined) q.set('since', since);
    const type = str(args, 'type');
    if (type !== undefined) {
      if (!/^[a-z]+(\.[a-z]+)?(,[a-z]+(\.[a-z]+)?)*$/.test(type)) {
        throw new UsageError(`--type ${type}: give types or subsystems separated by commas`);
      }
      q.set('type', type);
    }
    let cut: string | undefined;
    const qs = q.toString();
    await clientFor(args).stream(`/v1/events${qs ? `?${qs}` : ''}`, (item) => {
      const e = item as AgentEvent | { type: 'stream.cut'; summary: string };
      if (e.type === 'stream.cut') {
        cut = e.summary;
        return;
      }
      io.out(output === 'json' ? `${JSON.stringify(e)}\n` : `${formatEventLine(e)}\n`);
    });
    if (cut !== undefined) {
      io.err(`fibkeeper events: the agent ended the stream: ${cut}\n`);
      return EXIT_FAILED;
    }
    return EXIT_OK;
  },
};
