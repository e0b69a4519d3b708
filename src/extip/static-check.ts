// extip.static against the node, read-only: before `run` changes anything, and from
// `fibkeeper config check` when it can see the node. The same rules as the running
// subsystem's validate() (validate.ts): not an address of this node on another device than
// the holder, IPv6 only where the external interface has it.
import { ConfigError } from '../errors/index.js';
import type { Address, Link, NetlinkHandle } from '../netlink/index.js';
import { findExternal, readExternalSysctls } from './external.js';
import type { ExternalIpConfig } from './options.js';
import { validateExternalIps } from './validate.js';

/** The node's addresses on every device but `holderName`: canonical IP → device name. */
export function nodeAddressMap(
  links: readonly Link[],
  addrs: readonly Address[],
  holderName: string,
): Map<string, string> {
  const names = new Map(links.map((l) => [l.index, l.name ?? '']));
  const out = new Map<string, string>();
  for (const a of addrs) {
    const ip = a.local ?? a.address;
    const dev = names.get(a.index) ?? '';
    if (ip !== undefined && dev !== holderName) out.set(ip, dev);
  }
  return out;
}

/**
 * Throws ConfigError('extip.static') when the node would refuse one of the config's external
 * IPs. Reads links, addresses and (when the external interface is found) its IPv6 setting;
 * changes nothing. A missing external interface is not an error here (the agent waits for
 * it and reports it); the node-address rule still applies.
 */
export async function checkStaticExternalIps(
  nl: NetlinkHandle,
  cfg: Pick<ExternalIpConfig, 'interface' | 'nodeIP' | 'holderName'> & {
    static: readonly string[];
  },
  netns: string | undefined,
): Promise<void> {
  if (cfg.static.length === 0) return;
  const [links, addrs] = [await nl.linkList(), await nl.addrList()];
  let ipv6 = true;
  let interfaceName = cfg.interface;
  try {
    const ext = await findExternal(nl, cfg.interface, cfg.nodeIP, cfg.holderName);
    interfaceName = ext.name;
    ipv6 = readExternalSysctls(netns, ext.name).ipv6;
  } catch {
    /* not found (yet): the running agent reports it */
  }
  try {
    validateExternalIps(cfg.static, 'extip.static', {
      nodeAddresses: nodeAddressMap(links, addrs, cfg.holderName),
      ipv6,
      interfaceName,
    });
  } catch (err) {
    throw new ConfigError('extip.static', (err as Error).message.replace(/^extip\.static: /, ''), {
      cause: err,
    });
  }
}
