// The table of subcommands.
import type { Command } from './command.js';
import { configCheckCommand, configExampleCommand } from './config.js';
import { probeCommand } from './probe.js';
import { versionCommand } from './version.js';

export const COMMANDS: readonly Command[] = [
  probeCommand,
  configExampleCommand,
  configCheckCommand,
  versionCommand,
];
