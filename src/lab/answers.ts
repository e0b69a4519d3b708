// Who answers for an IP at the IP level, for the cluster tests and bench/cluster: from a
// client on the segment, every `everyMs` one round of probes goes to each cluster IP through
// *each* node's MAC (an L2 unicast, as a host with that node in its ARP cache would send): an
// ICMP echo request and a TCP SYN to a closed port. A node whose kernel holds the IP answers
// (an echo reply, a RST); a node that does not hold it drops the frame (its forwarding is
// off). The round number rides in the echo sequence and the TCP source port, so every answer
// is matched to its round: a round in which two MACs answered for one IP is a dual answer,
// whatever the ARP caches of the segment say. Frames are built and read here (AF_PACKET in
// the client's namespace); the client's kernel ignores the answers (no such ping, no such
// connection).
import { randomBytes } from 'node:crypto';
import { icmpv6Checksum } from '../extip/index.js';
import { formatMac, ipFromBytes, parseIp, parseMac } from '../ipaddr/index.js';
import { ETH_P_ALL, PacketSocket } from '../native/index.js';
import { monotonicClock } from '../sched/index.js';

export interface Answer {
  /** CLOCK_MONOTONIC ms when read. */
  at: number;
  ip: string;
  mac: string;
  kind: 'icmp' | 'tcp';
  round: number;
}

export interface DualInterval {
  ip: string;
  /** First and last round (monotonic ms of their sending) in which two MACs answered. */
  from: number;
  to: number;
  rounds: number;
  macs: string[];
}

export interface AnswerProbeOptions {
  netns: string;
  ifindex: number;
  /** The client: its MAC and addresses (the answers come back to them). */
  mac: string;
  v4: string;
  v6?: string;
  /** The MACs to send every probe through (the nodes). */
  targets: readonly string[];
  ips: readonly string[];
  everyMs: number;
}

const TCP_PORT = 9; // discard: nothing listens there in the lab's node namespaces
const SPORT_BASE = 20_000;

function sum16(b: Buffer, start = 0, end = b.length): number {
  let s = 0;
  for (let i = start; i + 1 < end; i += 2) s += b.readUInt16BE(i);
  if ((end - start) & 1) s += b[end - 1]! << 8;
  return s;
}

function fold(s: number): number {
  while (s > 0xffff) s = (s & 0xffff) + Math.floor(s / 0x10000);
  return ~s & 0xffff;
}

export class AnswerProbe {
  readonly answers: Answer[] = [];
  readonly #o: AnswerProbeOptions;
  readonly #sock: PacketSocket;
  readonly #id = randomBytes(2).readUInt16BE(0);
  readonly #sentAt = new Map<number, number>();
  #round = 0;
  #timer: ReturnType<typeof setInterval> | undefined;

  constructor(o: AnswerProbeOptions) {
    this.#o = o;
    this.#sock = PacketSocket.open({ ifindex: o.ifindex, netns: o.netns, protocol: ETH_P_ALL });
    this.#sock.receive({
      onFrame: (f, info) => {
        if (info.pktType !== 'outgoing') this.#onFrame(Buffer.from(f));
      },
      onError: () => undefined,
    });
  }

  start(): void {
    this.#timer ??= setInterval(() => this.#send(), this.#o.everyMs);
  }

  stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  close(): void {
    this.stop();
    this.#sock.close();
  }

  #send(): void {
    const round = (this.#round = (this.#round + 1) & 0xffff);
    this.#sentAt.set(round, monotonicClock.now());
    if (this.#sentAt.size > 60_000) this.#sentAt.delete(this.#sentAt.keys().next().value!);
    for (const ip of this.#o.ips) {
      for (const mac of this.#o.targets) {
        for (const f of this.#frames(ip, mac, round)) {
          try {
            this.#sock.send(f);
          } catch {
            // a full send queue drops a probe: a round with fewer answers, never more
          }
        }
      }
    }
  }

  #frames(ip: string, mac: string, round: number): Buffer[] {
    const dst = parseIp(ip);
    const v6 = dst.family === 6;
    const src = parseIp(v6 ? (this.#o.v6 ?? '::') : this.#o.v4);
    const eth = Buffer.concat([
      parseMac(mac),
      parseMac(this.#o.mac),
      Buffer.from(v6 ? [0x86, 0xdd] : [0x08, 0x00]),
    ]);
    const icmp = Buffer.alloc(16);
    icmp[0] = v6 ? 128 : 8;
    icmp.writeUInt16BE(this.#id, 4);
    icmp.writeUInt16BE(round, 6);
    const tcp = Buffer.alloc(20);
    tcp.writeUInt16BE(SPORT_BASE + (round % 40_000), 0);
    tcp.writeUInt16BE(TCP_PORT, 2);
    tcp.writeUInt32BE(round, 4);
    tcp[12] = 5 << 4;
    tcp[13] = 0x02; // SYN
    tcp.writeUInt16BE(64240, 14);
    const s = Buffer.from(src.bytes);
    const d = Buffer.from(dst.bytes);
    if (v6) {
      icmp.writeUInt16BE(icmpv6Checksum(s, d, icmp), 2);
      const pseudo = Buffer.concat([s, d, Buffer.from([0, 0, 0, 20, 0, 0, 0, 6])]);
      tcp.writeUInt16BE(fold(sum16(pseudo) + sum16(tcp)), 16);
      return [Buffer.concat([eth, ip6(s, d, 58, icmp)]), Buffer.concat([eth, ip6(s, d, 6, tcp)])];
    }
    icmp.writeUInt16BE(fold(sum16(icmp)), 2);
    const pseudo = Buffer.concat([s, d, Buffer.from([0, 6, 0, 20])]);
    tcp.writeUInt16BE(fold(sum16(pseudo) + sum16(tcp)), 16);
    return [Buffer.concat([eth, ip4(s, d, 1, icmp)]), Buffer.concat([eth, ip4(s, d, 6, tcp)])];
  }

  #onFrame(f: Buffer): void {
    if (f.length < 34) return;
    const mac = formatMac(f, 6);
    const type = f.readUInt16BE(12);
    let ip: string;
    let proto: number;
    let l4: number;
    if (type === 0x0800) {
      ip = ipFromBytes(f, 26, 4);
      proto = f[23]!;
      l4 = 14 + (f[14]! & 0x0f) * 4;
    } else if (type === 0x86dd && f.length >= 54) {
      ip = ipFromBytes(f, 22, 16);
      proto = f[20]!;
      l4 = 54;
    } else return;
    if (!this.#o.ips.includes(ip)) return;
    let round: number | undefined;
    let kind: 'icmp' | 'tcp';
    if ((proto === 1 && f[l4] === 0) || (proto === 58 && f[l4] === 129)) {
      if (f.readUInt16BE(l4 + 4) !== this.#id) return;
      round = f.readUInt16BE(l4 + 6);
      kind = 'icmp';
    } else if (proto === 6 && f.readUInt16BE(l4) === TCP_PORT) {
      const dport = f.readUInt16BE(l4 + 2);
      if (dport < SPORT_BASE || dport >= SPORT_BASE + 40_000) return;
      const ack = f.readUInt32BE(l4 + 8);
      round = (ack - 1) & 0xffff; // a RST|ACK acknowledges our sequence number + 1
      kind = 'tcp';
    } else return;
    this.answers.push({ at: monotonicClock.now(), ip, mac, kind, round });
  }

  /** When round `r` was sent (monotonic ms), if still remembered. */
  sentAt(r: number): number | undefined {
    return this.#sentAt.get(r);
  }

  /** Rounds in which two or more MACs answered for one IP, merged into intervals. */
  dualIntervals(): DualInterval[] {
    const byKey = new Map<string, Set<string>>();
    for (const a of this.answers) {
      const k = `${a.ip} ${a.round}`;
      const set = byKey.get(k) ?? new Set<string>();
      set.add(a.mac);
      byKey.set(k, set);
    }
    const duals = [...byKey]
      .filter(([, macs]) => macs.size > 1)
      .map(([k, macs]) => {
        const [ip, r] = k.split(' ') as [string, string];
        return { ip, round: Number(r), at: this.#sentAt.get(Number(r)) ?? NaN, macs: [...macs] };
      })
      .sort((a, b) => (a.ip === b.ip ? a.round - b.round : a.ip < b.ip ? -1 : 1));
    const out: DualInterval[] = [];
    for (const d of duals) {
      const last = out.at(-1);
      if (last && last.ip === d.ip && d.at - last.to <= 2 * this.#o.everyMs) {
        last.to = d.at;
        last.rounds++;
        for (const m of d.macs) if (!last.macs.includes(m)) last.macs.push(m);
      } else out.push({ ip: d.ip, from: d.at, to: d.at, rounds: 1, macs: d.macs });
    }
    return out;
  }

  /** The first answer for `ip` from `mac` to a round sent after `since`. */
  firstAnswer(ip: string, mac: string, since: number): Answer | undefined {
    return this.answers.find(
      (a) => a.ip === ip && a.mac === mac && (this.#sentAt.get(a.round) ?? -Infinity) > since,
    );
  }
}

function ip4(src: Buffer, dst: Buffer, proto: number, payload: Buffer): Buffer {
  const h = Buffer.alloc(20);
  h[0] = 0x45;
  h.writeUInt16BE(20 + payload.length, 2);
  h[8] = 64;
  h[9] = proto;
  src.copy(h, 12);
  dst.copy(h, 16);
  h.writeUInt16BE(fold(sum16(h)), 10);
  return Buffer.concat([h, payload]);
}

function ip6(src: Buffer, dst: Buffer, next: number, payload: Buffer): Buffer {
  const h = Buffer.alloc(40);
  h[0] = 0x60;
  h.writeUInt16BE(payload.length, 4);
  h[6] = next;
  h[7] = 64;
  src.copy(h, 8);
  dst.copy(h, 24);
  return Buffer.concat([h, payload]);
}
