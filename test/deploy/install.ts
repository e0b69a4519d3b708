// `make install` into a test's own directory (DESTDIR and/or PREFIX), as an operator runs it.
import { spawnSync } from 'node:child_process';

/** Runs `make install` with these variables; throws with make's output when it fails. */
export function makeInstall(vars: { DESTDIR?: string; PREFIX?: string }): void {
  const args = ['-s', 'install', ...Object.entries(vars).map(([k, v]) => `${k}=${v}`)];
  const r = spawnSync('make', args, { encoding: 'utf8' });
  if (r.status !== 0)
    throw new Error(`make ${args.join(' ')}: ${r.status}\n${r.stdout}${r.stderr}`);
}
