// The redirect-error tracer (bpf/xdp_trace.c): loaded once per managed namespace, attached
// to the tracepoints xdp_redirect_err and xdp_devmap_xmit while the agent runs, counting into
// fk_rerr (pinned with the other maps, so the counts survive restarts). A kernel without
// BTF or those tracepoints loads nothing: counting is then reported unavailable.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describeError } from '../errors/index.js';
import type { Logger } from '../log/index.js';
import { BpfLink, BpfMap, BpfObject, type BpfProgram } from '../native/index.js';
import {
  FK_MAP_RERR,
  FK_RERR_MAX_ENTRIES,
  FK_TRACE_CFG_VAR,
  FK_TRACE_RERR_PROG,
  FK_TRACE_RERR_TP,
  FK_TRACE_XMIT_PROG,
  FK_TRACE_XMIT_TP,
  SIZEOF_FK_RERR_KEY,
  decodeRedirectErrors,
  encodeTraceConfig,
  type RedirectErrorName,
} from './layout-state.js';
import { unpin } from './pins.js';

/** build/bpf/xdp_trace.o of this package. */
export function defaultTracerPath(): string {
  return fileURLToPath(new URL('../../build/bpf/xdp_trace.o', import.meta.url));
}

function fits(m: BpfMap): boolean {
  return (
    m.type === 'hash' &&
    m.keySize === SIZEOF_FK_RERR_KEY &&
    m.valueSize === 8 &&
    m.maxEntries === FK_RERR_MAX_ENTRIES
  );
}

export class Tracer {
  readonly #map: BpfMap;
  readonly #progs: BpfProgram[];
  readonly #links: BpfLink[];

  private constructor(map: BpfMap, progs: BpfProgram[], links: BpfLink[]) {
    this.#map = map;
    this.#progs = progs;
    this.#links = links;
  }

  /**
   * Loads and attaches the tracer for the namespace of inode `netnsIno`, counting into the
   * map pinned at `mapPin` (created and pinned there when absent or of another shape).
   * Returns undefined, after a warning, when this kernel cannot run it.
   */
  static start(p: {
    objectPath: string;
    netnsIno: number;
    mapPin: string;
    log: Logger;
  }): Tracer | undefined {
    let obj: BpfObject | undefined;
    let pinned: BpfMap | undefined;
    const progs: BpfProgram[] = [];
    const links: BpfLink[] = [];
    try {
      if (!existsSync(p.objectPath)) throw new Error(`${p.objectPath} not found (make bpf)`);
      if (existsSync(p.mapPin)) {
        pinned = BpfMap.fromPinned(p.mapPin);
        if (!fits(pinned)) {
          pinned.close();
          pinned = undefined;
          unpin(p.mapPin);
        }
      }
      obj = BpfObject.open(p.objectPath);
      obj.setRodata(FK_TRACE_CFG_VAR, encodeTraceConfig(p.netnsIno));
      if (pinned !== undefined) obj.reuseMap(FK_MAP_RERR, pinned);
      obj.load();
      const map = pinned ?? obj.map(FK_MAP_RERR);
      if (pinned === undefined) map.pin(p.mapPin);
      for (const [prog, tp] of [
        [FK_TRACE_RERR_PROG, FK_TRACE_RERR_TP],
        [FK_TRACE_XMIT_PROG, FK_TRACE_XMIT_TP],
      ] as const) {
        const pr = obj.program(prog);
        progs.push(pr);
        links.push(BpfLink.attachRawTracepoint(pr, tp));
      }
      return new Tracer(map, progs, links);
    } catch (err) {
      for (const x of [...links, ...progs]) x.close();
      pinned?.close();
      p.log.warn(
        { err: describeError(err) },
        'xdp: redirect errors cannot be counted on this kernel (the tracer needs BTF and the xdp tracepoints)',
      );
      return undefined;
    } finally {
      obj?.close();
    }
  }

  /** Frames lost after a redirect, per ingress ifindex and reason, since the map was made. */
  read(): Map<number, Record<RedirectErrorName, number>> {
    const entries: { key: Buffer; value: Buffer }[] = [];
    for (const key of this.#map.keys()) {
      const value = this.#map.lookup(key);
      if (value !== undefined) entries.push({ key, value });
    }
    return decodeRedirectErrors(entries);
  }

  /** Detaches (the counts stay in the pinned map). Idempotent. */
  close(): void {
    for (const x of [...this.#links, ...this.#progs]) x.close();
    this.#links.length = 0;
    this.#progs.length = 0;
    this.#map.close();
  }
}
