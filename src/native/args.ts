// Argument checks shared by the wrappers: each throws InvalidArgumentError naming the option.
import { InvalidArgumentError } from '../errors/index.js';

export function checkUint(name: string, v: unknown, max = 0xffff_ffff, min = 0): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
    throw new InvalidArgumentError(
      `${name} must be an integer in [${min}, ${max}], got ${String(v)}`,
    );
  }
  return v;
}

export function checkBool(name: string, v: unknown): boolean {
  if (typeof v !== 'boolean') throw new InvalidArgumentError(`${name} must be a boolean`);
  return v;
}

export function checkBuffer(name: string, v: unknown): Buffer {
  if (!Buffer.isBuffer(v)) throw new InvalidArgumentError(`${name} must be a Buffer`);
  return v;
}

export function checkFunction(name: string, v: unknown): void {
  if (typeof v !== 'function') throw new InvalidArgumentError(`${name} must be a function`);
}

export function checkPath(name: string, v: unknown): string {
  if (typeof v !== 'string' || !v.startsWith('/') || v.includes('\0')) {
    throw new InvalidArgumentError(`${name} must be an absolute path, got ${String(v)}`);
  }
  return v;
}

/**
 * A network namespace: a name under /run/netns ("blue") or an absolute path to a netns file
 * ("/proc/1234/ns/net").
 */
export function checkNetns(name: string, v: unknown): string {
  if (typeof v === 'string' && v.startsWith('/') && !v.includes('\0')) return v;
  if (typeof v === 'string' && /^[A-Za-z0-9_.@:+-]{1,255}$/.test(v) && v !== '.' && v !== '..') {
    return v;
  }
  throw new InvalidArgumentError(
    `${name} must be a namespace name under /run/netns or an absolute path, got ${String(v)}`,
  );
}

/** A receiver of a socket: an object whose `callbacks` are functions. */
export function checkReceiver(receiver: unknown, callbacks: readonly string[]): void {
  if (typeof receiver !== 'object' || receiver === null) {
    throw new InvalidArgumentError('receive: receiver must be an object');
  }
  const r = receiver as Record<string, unknown>;
  for (const name of callbacks) checkFunction(`receiver.${name}`, r[name]);
}
