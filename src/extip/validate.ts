// The check every external IP passes before anything is applied: a unicast address of a
// host (not loopback, multicast, link-local, unspecified, broadcast, IPv4-mapped, no zone),
// not an address of this node on another device, and of a family the external interface
// can announce. Pure.
import { InvalidArgumentError } from '../errors/index.js';
import { validateUnicastIp, type IpArg, type ParsedIp } from '../ipaddr/index.js';

export interface ExternalIpContext {
  /** The node's addresses on devices other than the holder: canonical IP → device name. */
  nodeAddresses: ReadonlyMap<string, string>;
  /** IPv6 is enabled on the external interface. */
  ipv6: boolean;
  interfaceName: string;
}

/**
 * Every IP of `ips`, parsed (those parsed already, by the API, are checked from their bytes,
 * not parsed again); or InvalidArgumentError for the first bad one, naming it and why
 * (`verb` says which call: "assign: external IP ...").
 */
export function validateExternalIps(
  ips: readonly IpArg[],
  verb: string,
  ctx: ExternalIpContext,
): ParsedIp[] {
  if (!Array.isArray(ips)) throw new InvalidArgumentError(`${verb}: expected a list of IPs`);
  const out: ParsedIp[] = [];
  for (const arg of ips as readonly unknown[]) {
    const parsed = typeof arg === 'object' && arg !== null ? (arg as ParsedIp) : undefined;
    const text = parsed?.address ?? arg;
    if (typeof text !== 'string') {
      throw new InvalidArgumentError(`${verb}: ${JSON.stringify(text)} is not an IP address`);
    }
    let ip: ParsedIp;
    try {
      ip = validateUnicastIp(parsed ?? text, { nodeAddresses: ctx.nodeAddresses });
    } catch (err) {
      throw new InvalidArgumentError(
        `${verb}: external IP ${JSON.stringify(text)}: ${(err as Error).message}`,
        { cause: err },
      );
    }
    if (ip.family === 6 && !ctx.ipv6) {
      throw new InvalidArgumentError(
        `${verb}: external IP ${ip.address} is IPv6, but IPv6 is disabled on the external interface ${ctx.interfaceName}, so it could not be announced or answered for`,
      );
    }
    out.push(ip);
  }
  return out;
}
