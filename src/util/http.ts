// `node:http` loaded the CommonJS way. An ES import of a built-in module makes Node build
// its namespace from every export, reading each one; Node 24's `http` has lazy exports
// (WebSocket, CloseEvent, MessageEvent) that load undici, and with it tls, crypto and the
// web streams: 76 modules and about 13 MiB of RSS the agent never uses (measured:
// `import('node:http')` 61.8 MiB RSS, this 48.5 MiB; docs/neighbor.md, "Memory"). Types
// come from `import type` as before; values from here.
import { createRequire } from 'node:module';

const http = createRequire(import.meta.url)('node:http') as typeof import('node:http');

export const createServer: typeof http.createServer = http.createServer;
export const request: typeof http.request = http.request;
