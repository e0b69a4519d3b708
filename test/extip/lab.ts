// The lab of the external-IP tests: a node namespace whose external interface ext0 is one
// end of a veth pair, a peer namespace on the other end (peer0), a capture of what reaches
// the peer, and helpers to read the subsystem's metrics and write pcap files for tcpdump and
// tshark.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { Registry } from 'prom-client';
import { onTestFinished } from 'vitest';
import {
  ExternalIpSubsystem,
  icmpv6Checksum,
  type ExternalIpConfig,
} from '../../src/extip/index.js';
import { parseIp, parseMac } from '../../src/ipaddr/index.js';
import { createLogger, silentLogger, type Logger } from '../../src/log/index.js';
import { ETH_P_ALL, PacketSocket } from '../../src/native/index.js';
import { ifindexOf, ip, ipJson, makeNetns, sysctl, vethPair, waitFor } from '../helpers/netns.js';

export const NODE_MAC = '02:00:00:0e:00:01';
export const PEER_MAC = '02:00:00:0e:00:02';
export const OLD_MAC = '02:00:00:0e:00:99';
export const NODE_V4 = '10.20.0.1';
export const PEER_V4 = '10.20.0.2';
export const NODE_V6 = '2001:db8:20::1';
export const PEER_V6 = '2001:db8:20::2';

export interface Lab {
  node: string;
  peer: string;
  /** ext0's IPv6 link-local address (usable: not tentative). */
  linkLocal: string;
}

/**
 * Two namespaces joined by ext0 (node) — peer0 (peer), each with an IPv4 /24 and an IPv6
 * /64 in the same subnets as the external IPs the tests assign (10.20.0.0/24,
 * 2001:db8:20::/64), so the peer reaches them on-link. DAD is off so addresses are usable
 * at once.
 */
export async function makeLab(tag: string): Promise<Lab> {
  const node = makeNetns(`${tag}n`);
  const peer = makeNetns(`${tag}p`);
  for (const ns of [node, peer]) {
    sysctl(ns, 'net.ipv6.conf.all.accept_dad', 0);
    sysctl(ns, 'net.ipv6.conf.default.accept_dad', 0);
  }
  vethPair(node, 'ext0', peer, 'peer0', { macA: NODE_MAC, macB: PEER_MAC });
  ip(node, 'addr', 'add', `${NODE_V4}/24`, 'dev', 'ext0');
  ip(node, 'addr', 'add', `${NODE_V6}/64`, 'dev', 'ext0', 'nodad');
  ip(peer, 'addr', 'add', `${PEER_V4}/24`, 'dev', 'peer0');
  ip(peer, 'addr', 'add', `${PEER_V6}/64`, 'dev', 'peer0', 'nodad');
  const linkLocal = await waitFor(
    () => {
      const addrs = ipJson<
        { addr_info: { local: string; scope: string; tentative?: boolean }[] }[]
      >(node, 'addr', 'show', 'dev', 'ext0');
      const ll = addrs[0]?.addr_info.find((a) => a.scope === 'link' && !a.tentative);
      return ll?.local;
    },
    { what: 'a link-local address on ext0' },
  );
  return { node, peer, linkLocal };
}

/**
 * Options for the tests: a bridge holder (no dummy here), short bursts, no periodic check,
 * duplicate address detection on with short waits (2 probes 50 ms apart, 150 ms after).
 */
export function testConfig(over: Partial<ExternalIpConfig> = {}): Partial<ExternalIpConfig> {
  return {
    holderName: 'fkx0',
    holderKind: 'bridge',
    interface: 'ext0',
    announceCount: 3,
    announceInterval: 200,
    checkInterval: 0,
    dad: true,
    dadProbes: 2,
    dadInterval: 50,
    dadWait: 150,
    ...over,
  };
}

/** A started subsystem in `ns` with its own registry; stopped when the test ends. */
export async function startExtip(
  ns: string,
  config: Partial<ExternalIpConfig> = testConfig(),
  log: Logger = silentLogger(),
): Promise<{ extip: ExternalIpSubsystem; registry: Registry }> {
  const registry = new Registry();
  const extip = new ExternalIpSubsystem({ netns: ns, config, registry, log });
  onTestFinished(() => extip.stop());
  await extip.start();
  return { extip, registry };
}

/** The value of one metric sample (0 when absent). */
export async function metric(
  registry: Registry,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  const m = registry.getSingleMetric(name);
  if (!m) throw new Error(`no metric ${name}`);
  const { values } = await m.get();
  const v = values.find((s) =>
    Object.entries(labels).every(([k, want]) => String(s.labels[k]) === want),
  );
  return v?.value ?? 0;
}

/** Every frame that arrives on `dev` in `ns` from now on (Ethernet header included). */
export function capture(ns: string, dev: string): { frames: Buffer[]; close(): void } {
  const sock = PacketSocket.open({ ifindex: ifindexOf(ns, dev), netns: ns, protocol: ETH_P_ALL });
  const frames: Buffer[] = [];
  sock.receive({
    onFrame: (f, info) => {
      if (info.pktType !== 'outgoing') frames.push(Buffer.from(f));
    },
    onError: (err) => {
      // ENETDOWN: the interface went down (tests do that on purpose); anything else is a bug
      if (err.code !== 'ENETDOWN') throw err;
    },
  });
  const close = () => sock.close();
  onTestFinished(close);
  return { frames, close };
}

/** Sends raw frames out of `dev` in `ns` (a conflicting host, a solicitation). */
export function sendFrom(ns: string, dev: string, ...frames: Buffer[]): void {
  const sock = PacketSocket.open({ ifindex: ifindexOf(ns, dev), netns: ns, protocol: 0 });
  try {
    for (const f of frames) sock.send(f);
  } finally {
    sock.close();
  }
}

/** Writes frames as a pcap (link type Ethernet) in a temporary directory; returns the path. */
export function writePcap(frames: readonly Buffer[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'fkt-extip-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  const head = Buffer.alloc(24);
  head.writeUInt32LE(0xa1b2c3d4, 0);
  head.writeUInt16LE(2, 4);
  head.writeUInt16LE(4, 6);
  head.writeUInt32LE(65535, 16);
  head.writeUInt32LE(1, 20); // LINKTYPE_ETHERNET
  const parts: Buffer[] = [head];
  frames.forEach((f, i) => {
    const rec = Buffer.alloc(16);
    rec.writeUInt32LE(1_700_000_000 + i, 0);
    rec.writeUInt32LE(f.length, 8);
    rec.writeUInt32LE(f.length, 12);
    parts.push(rec, Buffer.from(f));
  });
  const path = join(dir, 'capture.pcap');
  writeFileSync(path, Buffer.concat(parts));
  return path;
}

/**
 * A live `tcpdump -l -n -e -v` in `ns` on `dev` with `filter`; resolves once it listens.
 * Its output lines collect in `lines`; it is killed (by PID) when the test ends.
 */
export async function tcpdump(
  ns: string,
  dev: string,
  filter: string[],
): Promise<{ lines: string[]; stop(): void }> {
  const child: ChildProcess = spawn(
    'ip',
    ['netns', 'exec', ns, 'tcpdump', '-l', '-n', '-e', '-v', '-i', dev, ...filter],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const lines: string[] = [];
  let buf = '';
  child.stdout!.on('data', (d: Buffer) => {
    buf += d.toString();
    const parts = buf.split('\n');
    buf = parts.pop() ?? '';
    lines.push(...parts.filter((l) => l.trim() !== ''));
  });
  let listening = false;
  child.stderr!.on('data', (d: Buffer) => {
    if (d.toString().includes('listening on')) listening = true;
  });
  const stop = () => {
    if (child.exitCode === null && child.pid !== undefined) child.kill('SIGTERM');
  };
  onTestFinished(stop);
  await waitFor(() => listening, { what: 'tcpdump to listen' });
  return { lines, stop };
}

/** `ip -j addr show dev DEV` as [address, prefixlen, nodad] triples (global scope only). */
export function holderAddrs(ns: string, dev = 'fkx0'): string[] {
  let links: {
    addr_info: { local: string; prefixlen: number; scope: string; nodad?: boolean }[];
  }[];
  try {
    links = ipJson(ns, 'addr', 'show', 'dev', dev);
  } catch {
    return []; // no such device (the cluster holder of a stopped agent)
  }
  return (links[0]?.addr_info ?? [])
    .filter((a) => a.scope === 'global')
    .map((a) => `${a.local}/${a.prefixlen}${a.nodad ? ' nodad' : ''}`)
    .sort();
}

/** Waits until `n` frames matching `pred` have been captured; returns them. */
export async function framesMatching(
  cap: { frames: Buffer[] },
  pred: (f: Buffer) => boolean,
  n: number,
  timeoutMs = 5000,
): Promise<Buffer[]> {
  return waitFor(
    () => {
      const got = cap.frames.filter(pred);
      return got.length >= n ? got : undefined;
    },
    { timeoutMs, what: `${n} matching frames` },
  );
}

/**
 * Runs a command in a namespace without blocking the event loop (the subsystem under test
 * answers on this process's loop: a synchronous ping would wait for an answer that cannot
 * come). Rejects with stderr on failure.
 */
export function nsExecAsync(ns: string, cmd: string, ...args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      'ip',
      ['netns', 'exec', ns, cmd, ...args],
      { encoding: 'utf8' },
      (err, out, errOut) => {
        if (err)
          reject(new Error(`${cmd} ${args.join(' ')} in ${ns}: ${errOut.trim() || out.trim()}`));
        else resolve(out);
      },
    );
  });
}

/**
 * A neighbor solicitation (RFC 4861 section 4.3), written here field by field rather than by
 * the code under test: from `srcIp` ("::" for duplicate address detection) for `target`, to
 * `dstIp` (default: the target's solicited-node group) with a source link-layer address
 * option unless the source is "::" or `slla` is false, hop limit 255.
 */
export function neighborSolicit(p: {
  ethSrc: string;
  ethDst?: string;
  srcIp: string;
  dstIp?: string;
  target: string;
  slla?: boolean;
}): Buffer {
  const target = parseIp(p.target).bytes;
  const snm = Buffer.from('ff020000000000000000000100000000', 'hex');
  target.copy(snm, 13, 13, 16); // ff02::1:ffXX:XXXX
  snm[12] = 0xff;
  const dst = p.dstIp === undefined ? snm : parseIp(p.dstIp).bytes;
  const src = parseIp(p.srcIp).bytes;
  const withOpt = p.slla !== false && p.srcIp !== '::';
  const icmp = Buffer.alloc(24 + (withOpt ? 8 : 0));
  icmp[0] = 135;
  target.copy(icmp, 8);
  if (withOpt) {
    icmp[24] = 1;
    icmp[25] = 1;
    parseMac(p.ethSrc).copy(icmp, 26);
  }
  icmp.writeUInt16BE(icmpv6Checksum(src, dst, icmp), 2);
  const ethDst =
    p.ethDst !== undefined
      ? parseMac(p.ethDst)
      : Buffer.from([0x33, 0x33, dst[12]!, dst[13]!, dst[14]!, dst[15]!]);
  const ip6 = Buffer.alloc(40);
  ip6.writeUInt32BE(0x60000000, 0);
  ip6.writeUInt16BE(icmp.length, 4);
  ip6[6] = 58;
  ip6[7] = 255;
  src.copy(ip6, 8);
  dst.copy(ip6, 24);
  const eth = Buffer.concat([ethDst, parseMac(p.ethSrc), Buffer.from([0x86, 0xdd])]);
  return Buffer.concat([eth, ip6, icmp]);
}

/** A logger whose JSON lines (parsed) collect in `lines`. */
export function recordingLogger(level: 'info' | 'debug' = 'info'): {
  log: Logger;
  lines: { level: number; msg: string; [k: string]: unknown }[];
} {
  const lines: { level: number; msg: string }[] = [];
  const dest = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString().split('\n')) if (l.trim() !== '') lines.push(JSON.parse(l));
      done();
    },
  });
  return { log: createLogger(level, dest), lines };
}
