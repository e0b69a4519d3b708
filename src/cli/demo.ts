import { runDemo } from '../demo/index.js';
import type { Command } from './command.js';

export const demoCommand: Command = {
  name: 'demo',
  summary: 'Show fibkeeper at work in a throwaway namespace lab (needs root)',
  usage: '',
  help: [
    'Builds client -- router -- server1 and router -- gw -- server2 as network namespaces,',
    'runs the agent in the router with XDP, declares the servers forwardable, sends UDP and',
    'ICMP traffic, deletes a neighbor entry, assigns an external IP, and prints what the',
    'kernel and the wire show. Everything is removed at the end, also on Ctrl-C or failure.',
  ].join('\n'),
  options: {},
  async run(_args, io) {
    return runDemo(io);
  },
};
