// The config's static lists against the node, read-only: what only the node can tell (its
// own addresses, IPv6 on the external interface). `run` checks this before its first kernel
// change, and `fibkeeper config check` does when it can see the node.
import type { FibkeeperConfig } from '../config/index.js';
import { ConfigError } from '../errors/index.js';
import { checkStaticExternalIps, nodeAddressMap } from '../extip/index.js';
import { validateUnicastIp } from '../ipaddr/index.js';
import type { NetlinkHandle } from '../netlink/index.js';

/** Throws ConfigError naming the list and the IP the node would refuse. Changes nothing. */
export async function checkStaticsOnNode(
  nl: NetlinkHandle,
  cfg: FibkeeperConfig,
  netns: string | undefined,
): Promise<void> {
  if (cfg.neighbor.enabled && cfg.forwardable.static.length > 0) {
    const node = nodeAddressMap(await nl.linkList(), await nl.addrList(), cfg.extip.holderName);
    for (const ip of cfg.forwardable.static) {
      try {
        validateUnicastIp(ip, { nodeAddresses: node });
      } catch (err) {
        throw new ConfigError('forwardable.static', `${ip}: ${(err as Error).message}`, {
          cause: err,
        });
      }
    }
  }
  if (cfg.extip.enabled) {
    await checkStaticExternalIps(nl, { ...cfg.extip, holderName: cfg.extip.holderName }, netns);
  }
}
