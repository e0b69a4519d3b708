// Error path only: explain why a text is not an IP address, and how to fix it. The hot-path
// parser (parse.ts) only says "no"; this module is run afterwards to find the reason, so it
// may be slow and use regular expressions.
import { parseIpInto, parseV4 } from './parse.js';

const EXAMPLE = 'give an IPv4 address like 192.0.2.1 or an IPv6 address like 2001:db8::1';
const IPV6_SHAPE =
  "an IPv6 address has 8 groups of 1 to 4 hex digits separated by ':', and one '::' may stand for a run of zero groups";

function quote(text: string): string {
  return JSON.stringify(text);
}

function isValidIp(text: string): boolean {
  return parseIpInto(text, new Uint8Array(16), 0) !== 0;
}

/** Problems that look the same in IPv4 and IPv6 text: whitespace, brackets, a zone, a prefix. */
function describeCommon(text: string): string | undefined {
  const q = quote(text);
  if (text.trim() === '') return `IP address is empty; ${EXAMPLE}`;
  if (/\s/.test(text)) return `${q} contains whitespace; remove it`;
  if (text.startsWith('[') || text.endsWith(']')) {
    const inner = text.replace(/^\[/, '').replace(/\]$/, '');
    if (isValidIp(inner)) return `${q} is in brackets; write the address without them: ${inner}`;
  }
  const zone = text.indexOf('%');
  if (zone >= 0) {
    const addr = text.slice(0, zone);
    const fix = isValidIp(addr) ? `write ${addr} and select the device separately` : EXAMPLE;
    return `${q} has a zone ID (${text.slice(zone)}); zone IDs are not accepted here: ${fix}`;
  }
  const slash = text.indexOf('/');
  if (slash >= 0) {
    const addr = text.slice(0, slash);
    if (isValidIp(addr)) {
      return `${q} is a prefix, but a single address is expected here; drop ${quote(text.slice(slash))} and write ${addr}`;
    }
    return `${q} contains '/'; ${EXAMPLE}`;
  }
  return undefined;
}

/** Why `text` (without ':') is not a dotted-decimal IPv4 address. */
export function describeIpv4Problem(text: string, whole: string = text): string {
  const q = quote(whole);
  if (/[^0-9.]/.test(text)) {
    const bad = /[^0-9.]/.exec(text)?.[0] ?? '';
    if (/^[0-9a-z.-]+$/i.test(text) && /[a-z]/i.test(text)) {
      return `${q} is not an IP address (host names are not resolved here); ${EXAMPLE}`;
    }
    return `${q} is not an IP address: ${quote(bad)} is not a digit or '.'; ${EXAMPLE}`;
  }
  const octets = text.split('.');
  if (octets.length !== 4) {
    return `${q} has ${octets.length} ${octets.length === 1 ? 'part' : 'octets'}; an IPv4 address has exactly 4 decimal octets separated by '.', like 192.0.2.1`;
  }
  if (octets.some((o) => o === ''))
    return `${q} has an empty octet; write 4 octets, like 192.0.2.1`;
  const big = octets.find((o) => Number(o) > 255);
  if (big !== undefined)
    return `${q} is not a valid IPv4 address: octet ${big} is greater than 255`;
  const padded = octets.find((o) => o.length > 1 && o.startsWith('0'));
  if (padded !== undefined) {
    const decimal = octets.map((o) => String(Number(o))).join('.');
    return `${q} has the octet ${quote(padded)} with a leading zero, which some tools read as octal; write ${decimal} if you mean decimal`;
  }
  return `${q} is not a valid IPv4 address; ${EXAMPLE}`;
}

/** Why `text` (with ':') is not an IPv6 address. */
function describeIpv6Problem(text: string): string {
  const q = quote(text);
  const bad = /[^0-9a-f:.]/i.exec(text)?.[0];
  if (bad !== undefined) {
    return `${q} is not an IP address: ${quote(bad)} is not a hex digit, ':' or '.'; ${EXAMPLE}`;
  }
  if (text.includes(':::')) return `${q} has ':::'; ${IPV6_SHAPE}`;
  const first = text.indexOf('::');
  if (first >= 0 && text.indexOf('::', first + 1) >= 0) {
    return `${q} has more than one '::'; ${IPV6_SHAPE}`;
  }
  if (/^:[^:]/.test(text)) return `${q} starts with a single ':'; ${IPV6_SHAPE}`;
  if (/[^:]:$/.test(text)) return `${q} ends with a single ':'; ${IPV6_SHAPE}`;
  const parts = text.split(':').filter((p) => p !== '');
  const dotted = parts.findIndex((p) => p.includes('.'));
  if (dotted >= 0) {
    if (dotted !== parts.length - 1) {
      return `${q} has a dotted IPv4 part that is not at the end; it may only stand for the last 32 bits`;
    }
    const v4 = parts[dotted] ?? '';
    if (!parseV4(v4, 0, v4.length, new Uint8Array(4), 0)) {
      return `${q} has an invalid dotted IPv4 part: ${describeIpv4Problem(v4)}`;
    }
  }
  const long = parts.find((p) => !p.includes('.') && p.length > 4);
  if (long !== undefined) return `${q} has the group ${quote(long)} with more than 4 hex digits`;
  const groups = parts.length + (dotted >= 0 ? 1 : 0);
  if (first < 0) {
    return `${q} has ${groups} groups; an IPv6 address without '::' has exactly 8 (like 2001:db8:0:0:0:0:0:1, or 2001:db8::1 with '::')`;
  }
  if (groups >= 8) {
    return `${q} has ${groups} groups and a '::', which must stand for at least one zero group; ${IPV6_SHAPE}`;
  }
  return `${q} is not a valid IPv6 address; ${IPV6_SHAPE}`;
}

/** A message saying why `text` is not an IP address and what to write instead. */
export function describeIpProblem(text: string): string {
  const common = describeCommon(text);
  if (common !== undefined) return common;
  return text.includes(':') ? describeIpv6Problem(text) : describeIpv4Problem(text);
}
