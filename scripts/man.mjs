// Writes the man pages into build/man (make build runs it after the TypeScript):
// fibkeeper.1 from the command table, fibkeeper.yaml.5 from the option table (src/cli/man.ts).
import { mkdirSync, writeFileSync } from 'node:fs';
import { COMMANDS } from '../dist/cli/commands.js';
import { commandsManPage, configManPage } from '../dist/cli/man.js';
import { packageVersion } from '../dist/cli/version.js';

const dir = new URL('../build/man/', import.meta.url);
mkdirSync(dir, { recursive: true });
writeFileSync(new URL('fibkeeper.1', dir), commandsManPage(COMMANDS, packageVersion()));
writeFileSync(new URL('fibkeeper.yaml.5', dir), configManPage(packageVersion()));
