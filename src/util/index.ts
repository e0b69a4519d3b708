// Helpers below every subsystem, with no domain of their own. Each exists once here so that
// netlink, neighbor and the rest do not each keep a copy.

/**
 * A shallow copy of `o` without the own keys whose value is undefined: `{ a: 1, b: undefined }`
 * → `{ a: 1 }`. For options spread over defaults (`{ ...defaults(), ...stripUndefined(opts) }`,
 * where a present-but-undefined key would overwrite the default) and for messages whose
 * absent fields must not appear at all. `o` itself is not changed.
 */
export function stripUndefined<T extends object>(o: T): T {
  const out: Partial<T> = {};
  for (const k of Object.keys(o) as (keyof T)[]) if (o[k] !== undefined) out[k] = o[k];
  return out as T;
}

export { createServer, request } from './http.js';
export {
  i32be,
  i32le,
  u16be,
  u16le,
  u32be,
  u32le,
  w16be,
  w16le,
  w32be,
  w32le,
  wi32le,
} from './bytes.js';
