// What BGP announcement needs of the bgp.* options beyond their types and ranges: the peer
// entries, communities and the router ID in the formats the daemon takes, and the password
// files readable. `checkRunnable` applies it when bgp.enabled; src/bgp reads the peers
// through parseBgpPeer.
import { readFileSync } from 'node:fs';
import { ConfigError } from '../errors/index.js';
import { parseIp } from '../ipaddr/index.js';
import type { FibkeeperConfig } from './schema.js';

/** One entry of bgp.peers, parsed. */
export interface BgpPeer {
  address: string;
  family: 4 | 6;
  asn: number;
  port: number;
  /** Local address of the session (empty: the kernel's choice). */
  source: string;
  /** 0: directly connected (eBGP default); else the TTL of a multihop session. */
  multihop: number;
  passwordFile: string;
  bfd: boolean;
}

const PEER_SYNTAX =
  'ADDRESS as ASN [port N] [source ADDRESS] [multihop [TTL]] [password-file PATH] [bfd on|off]';

function int(text: string | undefined, what: string, min: number, max: number): number {
  if (text === undefined || !/^[0-9]+$/.test(text) || Number(text) < min || Number(text) > max) {
    throw new Error(`${what} must be a whole number from ${min} to ${max}, not "${text ?? ''}"`);
  }
  return Number(text);
}

function ipOf(text: string | undefined, what: string): { address: string; family: 4 | 6 } {
  if (text === undefined) throw new Error(`${what} is missing`);
  try {
    const ip = parseIp(text);
    return { address: ip.address, family: ip.family };
  } catch (err) {
    throw new Error(`${what} "${text}" is not an IP address (${(err as Error).message})`, {
      cause: err,
    });
  }
}

/** Parses one entry of bgp.peers; throws an Error naming what is wrong and the syntax. */
export function parseBgpPeer(entry: string): BgpPeer {
  try {
    const words = entry.trim().split(/\s+/);
    const { address, family } = ipOf(words[0], 'the peer address');
    if (words[1] !== 'as') throw new Error('the peer address must be followed by "as ASN"');
    const peer: BgpPeer = {
      address,
      family,
      asn: int(words[2], 'the AS number', 1, 4294967295),
      port: 179,
      source: '',
      multihop: 0,
      passwordFile: '',
      bfd: true,
    };
    for (let i = 3; i < words.length; i++) {
      const w = words[i];
      if (w === 'port') peer.port = int(words[++i], 'port', 1, 65535);
      else if (w === 'source') {
        const s = ipOf(words[++i], 'source');
        if (s.family !== family) throw new Error(`source ${s.address} is not IPv${family}`);
        peer.source = s.address;
      } else if (w === 'multihop') {
        const ttl = words[i + 1];
        peer.multihop =
          ttl !== undefined && /^[0-9]+$/.test(ttl) ? int(words[++i], 'multihop TTL', 1, 255) : 64;
      } else if (w === 'password-file') {
        peer.passwordFile = words[++i] ?? '';
        if (peer.passwordFile === '') throw new Error('password-file needs a path');
      } else if (w === 'bfd') {
        const v = words[++i];
        if (v !== 'on' && v !== 'off') throw new Error(`bfd must be on or off, not "${v ?? ''}"`);
        peer.bfd = v === 'on';
      } else throw new Error(`unknown word "${w}"`);
    }
    return peer;
  } catch (err) {
    throw new Error(`"${entry}": ${(err as Error).message} (syntax: ${PEER_SYNTAX})`, {
      cause: err,
    });
  }
}

/** One entry of bgp.ipAttributes, parsed: what one external IP's route carries besides
 * bgp.communities and bgp.largeCommunities. */
export interface BgpIpAttributes {
  /** Canonical text. */
  ip: string;
  communities: string[];
  largeCommunities: string[];
  /** 0: bgp.localPreference. */
  localPreference: number;
}

const ATTR_SYNTAX =
  'IP [community ASN:VALUE]... [large-community GLOBAL:LOCAL1:LOCAL2]... [local-preference N]';

/** Parses one entry of bgp.ipAttributes; throws an Error naming what is wrong and the syntax. */
export function parseBgpIpAttributes(entry: string): BgpIpAttributes {
  try {
    const words = entry.trim().split(/\s+/);
    const a: BgpIpAttributes = {
      ip: ipOf(words[0], 'the external IP').address,
      communities: [],
      largeCommunities: [],
      localPreference: 0,
    };
    for (let i = 1; i < words.length; i++) {
      const w = words[i];
      const v = words[++i];
      if (w === 'community' || w === 'large-community') {
        const large = w === 'large-community';
        if (v === undefined) throw new Error(`${w} needs a value`);
        parseCommunity(v, large);
        (large ? a.largeCommunities : a.communities).push(v);
      } else if (w === 'local-preference') {
        a.localPreference = int(v, 'local-preference', 1, 4294967295);
      } else throw new Error(`unknown word "${w}"`);
    }
    if (words.length < 3) throw new Error('name at least one attribute after the IP');
    return a;
  } catch (err) {
    throw new Error(`"${entry}": ${(err as Error).message} (syntax: ${ATTR_SYNTAX})`, {
      cause: err,
    });
  }
}

/** "65000:100" -> [65000, 100]; throws naming the community. */
export function parseCommunity(text: string, large: boolean): number[] {
  const parts = text.split(':');
  const n = large ? 3 : 2;
  const max = large ? 4294967295 : 65535;
  const form = large ? 'GLOBAL:LOCAL1:LOCAL2' : 'ASN:VALUE';
  if (parts.length !== n || parts.some((p) => !/^[0-9]+$/.test(p) || Number(p) > max)) {
    throw new Error(
      `"${text}" is not a ${large ? 'large ' : ''}community (${form}, each 0-${max})`,
    );
  }
  return parts.map(Number);
}

/** The TCP MD5 secret: the file's first line (the daemon's config quotes it). */
export function readPasswordFile(path: string): string {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new Error(`password file ${path}: ${(err as Error).message}`, { cause: err });
  }
  const secret = text.split('\n')[0]!.replace(/\r$/, '');
  if (secret === '' || secret.length > 80 || /["\\]/.test(secret)) {
    throw new Error(
      `password file ${path}: the first line must hold the secret (1-80 characters, no " or \\)`,
    );
  }
  return secret;
}

function as<T>(option: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    throw new ConfigError(option, (err as Error).message, { cause: err });
  }
}

/** Every bgp.* rule; throws ConfigError naming the option. */
export function checkBgpOptions(cfg: FibkeeperConfig): BgpPeer[] {
  const b = cfg.bgp;
  if (!cfg.extip.enabled) {
    throw new ConfigError('bgp.enabled', 'BGP announces external IPs: set extip.enabled: true');
  }
  if (b.asn === 0) {
    throw new ConfigError('bgp.asn', "set the node's AS number (1-4294967295)");
  }
  if (b.routerId !== '') {
    as('bgp.routerId', () => {
      if (ipOf(b.routerId, 'the router ID').family !== 4) {
        throw new Error(`"${b.routerId}" is not an IPv4 address`);
      }
    });
  }
  if (b.peers.length === 0) {
    throw new ConfigError('bgp.peers', 'list at least one peer, e.g. "10.0.0.1 as 65000"');
  }
  const peers = b.peers.map((e) => as('bgp.peers', () => parseBgpPeer(e)));
  const seen = new Set<string>();
  for (const p of peers) {
    if (seen.has(p.address)) throw new ConfigError('bgp.peers', `${p.address} is listed twice`);
    seen.add(p.address);
    if (p.passwordFile !== '') as('bgp.peers', () => readPasswordFile(p.passwordFile));
  }
  b.communities.forEach((c) => as('bgp.communities', () => parseCommunity(c, false)));
  b.largeCommunities.forEach((c) => as('bgp.largeCommunities', () => parseCommunity(c, true)));
  const ips = new Set<string>();
  for (const e of b.ipAttributes) {
    const a = as('bgp.ipAttributes', () => parseBgpIpAttributes(e));
    if (ips.has(a.ip)) throw new ConfigError('bgp.ipAttributes', `${a.ip} is listed twice`);
    ips.add(a.ip);
  }
  if (b.holdTime % 1000 !== 0) {
    throw new ConfigError('bgp.holdTime', 'must be whole seconds (BGP counts in seconds)');
  }
  if (b.gracefulRestart % 1000 !== 0) {
    throw new ConfigError('bgp.gracefulRestart', 'must be whole seconds (BGP counts in seconds)');
  }
  if (b.runDir === '' || !b.runDir.startsWith('/')) {
    throw new ConfigError('bgp.runDir', 'must be an absolute directory path');
  }
  return peers;
}
