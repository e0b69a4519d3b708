// The table of subcommands.
import type { Command } from './command.js';
import { extipCommands, forwardableCommands, statusCommand } from './client-commands.js';
import { bgpStatusCommand } from './bgp.js';
import { clusterCommands } from './cluster.js';
import { configCheckCommand, configExampleCommand } from './config.js';
import { completionCommand } from './completion.js';
import { demoCommand } from './demo.js';
import { eventsCommand } from './events.js';
import { labDownCommand, labUpCommand } from './lab.js';
import { probeCommand } from './probe.js';
import { runCommand } from './run.js';
import { versionCommand } from './version.js';
import { xdpDetachCommand, xdpMissesCommand } from './xdp.js';

export const COMMANDS: readonly Command[] = [
  runCommand,
  statusCommand,
  eventsCommand,
  ...forwardableCommands,
  ...extipCommands,
  ...clusterCommands,
  bgpStatusCommand,
  xdpDetachCommand,
  xdpMissesCommand,
  probeCommand,
  demoCommand,
  labUpCommand,
  labDownCommand,
  configExampleCommand,
  configCheckCommand,
  versionCommand,
  completionCommand(() => COMMANDS),
];
