import { readFileSync } from 'node:fs';
import { EXIT_OK, type Command } from './command.js';

/** The package version, read from package.json next to src/ or dist/. */
export function packageVersion(): string {
  const url = new URL('../../package.json', import.meta.url);
  return (JSON.parse(readFileSync(url, 'utf8')) as { version: string }).version;
}

export const versionCommand: Command = {
  name: 'version',
  summary: 'Print the version of fibkeeper',
  usage: '',
  help: '',
  options: {},
  async run(_args, io) {
    io.out(`fibkeeper ${packageVersion()} (node ${process.version})\n`);
    return EXIT_OK;
  },
};
