// Address calls, each the equivalent of an `ip addr` command.
import { InvalidArgumentError } from '../errors/index.js';
import { afOf, afOfText, ipArgText, type IpArg } from '../ipaddr/index.js';
import {
  type Address,
  type AddressOut,
  AF_INET,
  AF_INET6,
  AF_UNSPEC,
  formatAddress,
  IFA_F_NODAD,
  IFA_F_NOPREFIXROUTE,
  NLM_F_CREATE,
  NLM_F_EXCL,
  NLM_F_REPLACE,
  NLM_F_REQUEST,
  parseAddress,
  RT_SCOPE_UNIVERSE,
  RTM_DELADDR,
  RTM_GETADDR,
  RTM_NEWADDR,
} from './codec/index.js';
import type { Client } from './client.js';

/** An address to add, replace or delete. */
export interface AddressSpec {
  ifindex: number;
  /** The address itself ("192.0.2.1", "2001:db8::1"), or parsed already (not parsed again). */
  address: IpArg;
  /** Prefix length; default 32 (IPv4) or 128 (IPv6). */
  prefixlen?: number;
  /** IPv6: skip duplicate address detection (`nodad`). */
  nodad?: boolean;
  /** Do not add the prefix route (`noprefixroute`). */
  noprefixroute?: boolean;
  /** Further IFA_F_* flags. */
  flags?: number;
  /** RT_SCOPE_*; default universe. */
  scope?: number;
  label?: string;
  /** IFA_PROTO: who added it. */
  proto?: number;
}

const familyOf = (ip: IpArg): number => (typeof ip === 'string' ? afOfText(ip) : afOf(ip.family));

function toAddress(s: AddressSpec): AddressOut {
  if (!Number.isInteger(s.ifindex) || s.ifindex <= 0) {
    throw new InvalidArgumentError(`address ${ipArgText(s.address)}: bad ifindex ${s.ifindex}`);
  }
  const family = familyOf(s.address);
  const max = family === AF_INET6 ? 128 : 32;
  const prefixlen = s.prefixlen ?? max;
  if (!Number.isInteger(prefixlen) || prefixlen < 0 || prefixlen > max) {
    throw new InvalidArgumentError(
      `address ${ipArgText(s.address)}: bad prefix length ${prefixlen}`,
    );
  }
  const a: AddressOut = {
    family,
    prefixlen,
    flags:
      (s.flags ?? 0) | (s.nodad ? IFA_F_NODAD : 0) | (s.noprefixroute ? IFA_F_NOPREFIXROUTE : 0),
    scope: s.scope ?? RT_SCOPE_UNIVERSE,
    index: s.ifindex,
    local: s.address,
    address: s.address,
  };
  if (s.label !== undefined) a.label = s.label;
  if (s.proto !== undefined) a.proto = s.proto;
  return a;
}

const describe = (verb: string, s: AddressSpec): string =>
  `${verb} ${ipArgText(s.address)}/${s.prefixlen ?? (familyOf(s.address) === AF_INET ? 32 : 128)} dev ${s.ifindex}`;

/** addrList — like `ip addr show [dev DEV]`, optionally one family (AF_INET/AF_INET6). */
export async function addrList(
  c: Client,
  filter: { family?: number; ifindex?: number } = {},
): Promise<Address[]> {
  const req: Address = {
    family: filter.family ?? AF_UNSPEC,
    prefixlen: 0,
    flags: 0,
    scope: 0,
    index: filter.ifindex ?? 0,
  };
  const all = await c.dump(
    (w) => formatAddress(w, RTM_GETADDR, NLM_F_REQUEST, req),
    parseAddress,
    'addrList',
  );
  // The kernel filters too, but only with strict checking: filter here as well.
  return all.filter(
    (a) =>
      (filter.family === undefined || a.family === filter.family) &&
      (filter.ifindex === undefined || a.index === filter.ifindex),
  );
}

/** addrAdd — like `ip addr add ADDR/PLEN dev DEV [nodad] [noprefixroute]`. EEXIST if present. */
export function addrAdd(c: Client, spec: AddressSpec): Promise<void> {
  const a = toAddress(spec);
  return c.ack(
    (w) => formatAddress(w, RTM_NEWADDR, NLM_F_REQUEST | NLM_F_CREATE | NLM_F_EXCL, a),
    describe('addrAdd', spec),
  );
}

/** addrReplace — like `ip addr replace ADDR/PLEN dev DEV ...`: adds, or updates in place. */
export function addrReplace(c: Client, spec: AddressSpec): Promise<void> {
  const a = toAddress(spec);
  return c.ack(
    (w) => formatAddress(w, RTM_NEWADDR, NLM_F_REQUEST | NLM_F_CREATE | NLM_F_REPLACE, a),
    describe('addrReplace', spec),
  );
}

/** addrDel — like `ip addr del ADDR/PLEN dev DEV`. EADDRNOTAVAIL when absent. */
export function addrDel(c: Client, spec: AddressSpec): Promise<void> {
  const a = toAddress(spec);
  return c.ack((w) => formatAddress(w, RTM_DELADDR, NLM_F_REQUEST, a), describe('addrDel', spec));
}
