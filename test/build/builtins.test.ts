// The agent's module graph loads no built-in it never uses. An ES import of `node:http`
// builds the module's namespace from every export, and Node 24's lazy ones (WebSocket,
// CloseEvent, MessageEvent) load undici, tls and crypto with it: about 13 MiB of RSS
// (src/util/http.ts); prom-client's index loads https (tls) and cluster for its
// Pushgateway and aggregator, about 7 MiB more (src/metrics/prom.ts). Asked of Node itself: the built-ins it loaded (process.moduleLoadList)
// once `fibkeeper`'s CLI (every command, `run` among them) is imported from dist/.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');

function loadedBy(file: string): string[] {
  const script =
    `await import(${JSON.stringify(join(ROOT, file))});` +
    'process.stdout.write(JSON.stringify(process.moduleLoadList));';
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
    encoding: 'utf8',
  });
  return JSON.parse(out) as string[];
}

describe('the modules the CLI loads', () => {
  it('do not include undici (node:http is required, not imported as an ES module)', () => {
    expect(existsSync(join(ROOT, 'dist', 'cli', 'index.js')), 'run make build').toBe(true);
    const loaded = loadedBy('dist/cli/index.js');
    expect(loaded.length).toBeGreaterThan(50); // the list is Node's, and it is read
    expect(loaded.filter((m) => m.includes('undici'))).toEqual([]);
  });

  it('do not include tls (prom-client by its parts, node:https only when cluster TLS asks)', () => {
    const loaded = loadedBy('dist/cli/index.js');
    expect(loaded.filter((m) => /^NativeModule (tls|https|cluster)$/.test(m))).toEqual([]);
  });
});
