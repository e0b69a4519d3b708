// The table of subcommands.
import type { Command } from './command.js';
import { versionCommand } from './version.js';

export const COMMANDS: readonly Command[] = [versionCommand];
