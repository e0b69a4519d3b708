// IP and MAC address handling: parsing with explained errors, canonical text (as `ip -j`
// prints it), fast byte conversions for the netlink codec, classification and validation of
// forwardable/external IPs, prefixes, and an index of IPs by prefix.
//
// Keys: the canonical text (ParsedIp.address, IpPrefix.text) is the key to use in maps and
// tables; two spellings of one address ("2001:DB8::0:1", "2001:db8::1") give one key.

export {
  AF_INET,
  AF_INET6,
  afOf,
  afOfText,
  canonicalIp,
  familyName,
  familyOfAf,
  ipArgText,
  ipFamilyOf,
  ipFromBytes,
  ipToBytes,
  parseIp,
  writeIp,
  type IpArg,
  type IpFamily,
  type ParsedIp,
  type ParseIpOptions,
} from './address.js';
export {
  classifyIp,
  isCanonicalUnicast,
  isUnicastIp,
  markCanonicalUnicast,
  validateUnicastIp,
  type IpClass,
  type UnicastIpOptions,
} from './classify.js';
export {
  hostPrefix,
  parsePrefix,
  prefixContains,
  prefixCovers,
  prefixFromBytes,
  type IpPrefix,
  type ParsePrefixOptions,
} from './prefix.js';
export { IpRangeIndex } from './range-index.js';
export { formatV4Number } from './format.js';
export { parseDottedQuad, parseDottedQuadI32 } from './v4.js';
export {
  formatLinkAddr,
  formatMac,
  formatMacHalves,
  isMulticastMac,
  isZeroMac,
  linkAddrLength,
  MAX_ADDR_LEN,
  parseMac,
  parseUnicastMac,
  writeLinkAddr,
} from './mac.js';
export {
  formatHostPort,
  parseHostPort,
  type HostPort,
  type ParseHostPortOptions,
} from './hostport.js';
