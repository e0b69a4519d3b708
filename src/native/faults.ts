// Fault injection at the native boundary, for tests (native/faults.h). Armed only by the
// environment variable FIBKEEPER_TEST_FAULTS, which `fibkeeper run` reads at start (and then
// logs a warning, and every 5 s what was injected); it is not an option of the config, the
// flags or the README's table, and nothing the project ships sets it. The addon is the same
// one that ships: disarmed, a send or receive pays one relaxed atomic load.
//
//   FIBKEEPER_TEST_FAULTS="classes=EINVAL+EAGAIN,rate=0.002,sockets=netlink+packet,seed=7"
//
// classes: what goes wrong, at receives (recv) and sends (send) of the chosen sockets:
//   EINVAL, EBUSY   recv: the call fails with it (the datagram stays queued); send: fails
//   ENOBUFS         recv: a datagram dropped and ENOBUFS reported; send: fails
//   EMSGSIZE        recv: a datagram dropped and EMSGSIZE reported (MSG_TRUNC); send: fails
//   EAGAIN          recv: a storm (stormMs) of wakeups that find nothing; send: fails
//   timeout         recv: a deaf period (deafMs): everything received vanishes;
//                   send: "sent", but nothing reaches the kernel (no reply will come)
//   truncate        recv: a datagram delivered cut short (inside a message)
//   hang            send (the netlink send thread only; never the JS thread): sleeps
//                   hangMs before the sendmsg
// rate: probability per call of each class; sockets: netlink, packet or both; seed: the
// random sequence; stormMs, deafMs, hangMs: lengths (defaults 50, 2000, 2000); delayMs:
// nothing is injected before that long after arming (default 0); phase: start (default:
// armed before the agent starts) or ready (armed once it is ready). The same
// variable may shorten the agent's socket health timings for a test (netlink/health.ts):
// probeMs (round interval), silentMs (silence before a reopen), liveMs (silence before
// /livez fails). classes may be empty: then only those timings apply.
import { constants } from 'node:os';
import { InvalidArgumentError } from '../errors/index.js';
import { binding } from './binding.js';

export const FAULT_CLASSES = [
  'EINVAL',
  'ENOBUFS',
  'EMSGSIZE',
  'EBUSY',
  'EAGAIN',
  'timeout',
  'truncate',
  'hang',
] as const;
export type FaultClass = (typeof FAULT_CLASSES)[number];

export interface FaultSpec {
  classes: FaultClass[];
  rate: number;
  sockets: ('netlink' | 'packet')[];
  seed: number;
  stormMs: number;
  deafMs: number;
  hangMs: number;
  delayMs: number;
  /** When `fibkeeper run` arms the faults: before the agent starts, or once it is ready. */
  phase: 'start' | 'ready';
  /** Socket health timings for the agent (netlink/health.ts), when the test gives them. */
  health: { intervalMs?: number; deafMs?: number; livenessMs?: number };
}

// native/faults.h: FaultSite and RuleKind.
const SITE = { netlinkRecv: 0, netlinkSend: 1, packetRecv: 2, packetSend: 3 } as const;
const KIND = { errno: 0, lose: 1, storm: 2, deaf: 3, truncate: 4, hang: 5 } as const;
type Kind = keyof typeof KIND;

/** What a class does at a receive and at a send (undefined: nothing). */
const EFFECT: Record<FaultClass, { recv?: Kind; send?: Kind }> = {
  EINVAL: { recv: 'errno', send: 'errno' },
  EBUSY: { recv: 'errno', send: 'errno' },
  ENOBUFS: { recv: 'lose', send: 'errno' },
  EMSGSIZE: { recv: 'lose', send: 'errno' },
  EAGAIN: { recv: 'storm', send: 'errno' },
  timeout: { recv: 'deaf', send: 'lose' },
  truncate: { recv: 'truncate' },
  hang: { send: 'hang' },
};

interface Rule {
  site: number;
  kind: number;
  err: number;
  probability: number;
  /** For faultCounts(): "EINVAL netlink recv". */
  name: string;
}

/** Parses FIBKEEPER_TEST_FAULTS; throws InvalidArgumentError naming what is wrong. */
export function parseFaultSpec(text: string): FaultSpec {
  const spec: FaultSpec = {
    classes: [],
    rate: 0.001,
    sockets: ['netlink', 'packet'],
    seed: 1,
    stormMs: 50,
    deafMs: 2000,
    hangMs: 2000,
    delayMs: 0,
    phase: 'start',
    health: {},
  };
  for (const part of text
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const [key, value = ''] = part.split('=', 2) as [string, string?];
    const list = value.split('+').filter(Boolean);
    const num = Number(value);
    if (key === 'classes') {
      for (const c of list) {
        if (!(FAULT_CLASSES as readonly string[]).includes(c)) {
          throw new InvalidArgumentError(
            `FIBKEEPER_TEST_FAULTS: unknown class ${c} (one of ${FAULT_CLASSES.join(', ')})`,
          );
        }
      }
      spec.classes = list as FaultClass[];
    } else if (key === 'sockets') {
      if (list.some((s) => s !== 'netlink' && s !== 'packet')) {
        throw new InvalidArgumentError('FIBKEEPER_TEST_FAULTS: sockets are netlink, packet');
      }
      spec.sockets = list as FaultSpec['sockets'];
    } else if (key === 'rate' && num >= 0 && num <= 1) spec.rate = num;
    else if (key === 'seed' && Number.isInteger(num)) spec.seed = num;
    else if (key === 'stormMs' && num >= 0) spec.stormMs = num;
    else if (key === 'deafMs' && num >= 0) spec.deafMs = num;
    else if (key === 'hangMs' && num >= 0) spec.hangMs = num;
    else if (key === 'delayMs' && num >= 0) spec.delayMs = num;
    else if (key === 'phase' && (value === 'start' || value === 'ready')) spec.phase = value;
    else if (key === 'probeMs' && num > 0) spec.health.intervalMs = num;
    else if (key === 'silentMs' && num > 0) spec.health.deafMs = num;
    else if (key === 'liveMs' && num > 0) spec.health.livenessMs = num;
    else throw new InvalidArgumentError(`FIBKEEPER_TEST_FAULTS: bad ${JSON.stringify(part)}`);
  }
  return spec;
}

function rules(spec: FaultSpec): Rule[] {
  const errnos = constants.errno as Record<string, number>;
  const out: Rule[] = [];
  for (const c of spec.classes) {
    const err = errnos[c] ?? 0;
    for (const sock of spec.sockets) {
      for (const op of ['recv', 'send'] as const) {
        const kind = EFFECT[c][op];
        // Packet sockets send on the JS thread, which an injected hang never blocks.
        if (kind === undefined || (kind === 'hang' && sock === 'packet')) continue;
        const site = SITE[`${sock}${op === 'recv' ? 'Recv' : 'Send'}`];
        out.push({
          site,
          kind: KIND[kind],
          err,
          probability: spec.rate,
          name: `${c} ${sock} ${op}`,
        });
      }
    }
  }
  return out;
}

let armed: Rule[] = [];

/** Arms the addon's fault injection (null: disarms it). Returns the rules' names. */
export function configureFaults(spec: FaultSpec | null): string[] {
  armed = spec === null ? [] : rules(spec);
  binding().configureFaults(
    spec === null
      ? null
      : {
          seed: spec.seed,
          stormMs: spec.stormMs,
          deafMs: spec.deafMs,
          hangMs: spec.hangMs,
          delayMs: spec.delayMs,
          rules: armed,
        },
  );
  return armed.map((r) => r.name);
}

/** How often each armed rule fired, by name ("EINVAL netlink recv"). */
export function faultCounts(): Record<string, number> {
  const counts = binding().faultCounts();
  return Object.fromEntries(armed.map((r, i) => [r.name, counts[i] ?? 0]));
}
