// Ethernet (EUI-48) MAC addresses: "aa:bb:cc:dd:ee:ff" ↔ 6 bytes.
import { InvalidArgumentError } from '../errors/index.js';

const HEX_PAIR: readonly string[] = Array.from({ length: 256 }, (_, i) =>
  i.toString(16).padStart(2, '0'),
);

function hexValue(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  const lower = c | 0x20;
  if (lower >= 97 && lower <= 102) return lower - 87;
  return -1;
}

/** Parses into `out` at 0; true when `text` is exactly six ':'-separated hex pairs. */
function parseMacInto(text: string, out: Uint8Array): boolean {
  if (text.length !== 17) return false;
  for (let i = 0; i < 6; i++) {
    const hi = hexValue(text.charCodeAt(3 * i));
    const lo = hexValue(text.charCodeAt(3 * i + 1));
    if (hi < 0 || lo < 0) return false;
    if (i < 5 && text.charCodeAt(3 * i + 2) !== 58) return false;
    out[i] = (hi << 4) | lo;
  }
  return true;
}

function describeMacProblem(text: string): string {
  const q = JSON.stringify(text);
  if (text.trim() === '') return 'MAC address is empty; write six hex pairs like 02:00:5e:10:00:01';
  if (/^[0-9a-f]{2}([-.])(?:[0-9a-f]{2}\1){4}[0-9a-f]{2}$/i.test(text)) {
    return `${q} uses '${text[2]}' between the pairs; write ${text.toLowerCase().replace(/[-.]/g, ':')}`;
  }
  return `${q} is not a MAC address; write six hex pairs separated by ':', like 02:00:5e:10:00:01`;
}

/** Six bytes of "aa:bb:cc:dd:ee:ff" (either case). Throws InvalidArgumentError otherwise. */
export function parseMac(text: string): Buffer {
  const out = Buffer.alloc(6);
  if (!parseMacInto(text, out)) throw new InvalidArgumentError(describeMacProblem(text));
  return out;
}

/** "aa:bb:cc:dd:ee:ff" (lowercase, as `ip -j` prints it) of the 6 bytes at `offset`. */
export function formatMac(bytes: Uint8Array, offset = 0): string {
  if (offset < 0 || offset + 6 > bytes.length) {
    throw new InvalidArgumentError(
      `a MAC address is 6 bytes; the buffer has ${bytes.length - offset} at offset ${offset}`,
    );
  }
  let s = HEX_PAIR[bytes[offset]!]!;
  for (let i = 1; i < 6; i++) s += ':' + HEX_PAIR[bytes[offset + i]!]!;
  return s;
}

/** True for 00:00:00:00:00:00. */
export function isZeroMac(mac: Uint8Array): boolean {
  return mac.length === 6 && (mac[0]! | mac[1]! | mac[2]! | mac[3]! | mac[4]! | mac[5]!) === 0;
}

/** True when the group bit (I/G, the low bit of the first byte) is set; broadcast included. */
export function isMulticastMac(mac: Uint8Array): boolean {
  return mac.length === 6 && (mac[0]! & 1) === 1;
}

/**
 * A MAC that can be a sender or neighbor address: six bytes, not all zero, not multicast or
 * broadcast. Accepts text or bytes; returns a fresh 6-byte Buffer. Throws InvalidArgumentError.
 */
export function parseUnicastMac(mac: string | Uint8Array): Buffer {
  let bytes: Buffer;
  if (typeof mac === 'string') {
    bytes = parseMac(mac);
  } else {
    if (mac.length !== 6) {
      throw new InvalidArgumentError(`a MAC address is 6 bytes; got ${mac.length}`);
    }
    bytes = Buffer.from(mac);
  }
  const text = formatMac(bytes);
  if (isZeroMac(bytes)) {
    throw new InvalidArgumentError(
      `${text} is the all-zero MAC address; give the unicast MAC of the interface`,
    );
  }
  if (isMulticastMac(bytes)) {
    const kind = text === 'ff:ff:ff:ff:ff:ff' ? 'the broadcast' : 'a multicast';
    throw new InvalidArgumentError(
      `${text} is ${kind} MAC address (the low bit of the first byte is set); give the unicast MAC of the interface`,
    );
  }
  return bytes;
}
