// A TCP proxy on loopback that the test controls: cut() black-holes the path (existing
// connections stop forwarding, new ones are accepted and never forwarded: no RST, as a
// partition looks), heal() forwards again for new connections.
import { createConnection, createServer, type Server, type Socket } from 'node:net';

export class CutProxy {
  readonly #server: Server;
  readonly #target: number;
  #cut = false;
  readonly #pairs = new Set<{ a: Socket; b: Socket | undefined }>();
  port = 0;

  private constructor(target: number) {
    this.#target = target;
    this.#server = createServer((a) => this.#accept(a));
  }

  static async start(targetPort: number): Promise<CutProxy> {
    const p = new CutProxy(targetPort);
    await new Promise<void>((resolve) => p.#server.listen(0, '127.0.0.1', resolve));
    const addr = p.#server.address();
    p.port = typeof addr === 'object' && addr ? addr.port : 0;
    return p;
  }

  get endpoint(): string {
    return `127.0.0.1:${this.port}`;
  }

  #accept(a: Socket): void {
    a.on('error', () => undefined);
    const pair: { a: Socket; b: Socket | undefined } = { a, b: undefined };
    this.#pairs.add(pair);
    a.on('close', () => {
      pair.b?.destroy();
      this.#pairs.delete(pair);
    });
    if (this.#cut) {
      a.on('data', () => undefined); // swallowed
      return;
    }
    const b = createConnection(this.#target, '127.0.0.1');
    pair.b = b;
    b.on('error', () => a.destroy());
    b.on('close', () => a.destroy());
    a.on('data', (d) => !this.#cut && b.write(d));
    b.on('data', (d) => !this.#cut && a.write(d));
  }

  cut(): void {
    this.#cut = true;
  }

  /** Forwards again; connections that were black-holed are closed (they lost bytes). */
  heal(): void {
    this.#cut = false;
    for (const p of this.#pairs) {
      p.a.destroy();
      p.b?.destroy();
    }
    this.#pairs.clear();
  }

  async close(): Promise<void> {
    this.heal();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}
