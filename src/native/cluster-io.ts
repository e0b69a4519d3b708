// Cluster mode's kernel objects that end with the process (native/cluster_io.cc): the TUN
// holder of the cluster IPs, UDP sockets in the managed namespace, tcx links. Each is a
// plain file descriptor with O_CLOEXEC; the caller owns it.
import { closeSync } from 'node:fs';
import { checkNetns, checkUint } from './args.js';
import { binding } from './binding.js';
import { InvalidArgumentError } from '../errors/index.js';

/**
 * Creates a TUN device named `name` in `netns` that the kernel deletes (with every address
 * on it) when the returned descriptor closes: at close(), or when the process ends in any
 * way, SIGKILL included. Like `ip tuntap add NAME mode tun` without `persist`, owned by this
 * process. Throws EBUSY when another process holds a device of that name.
 */
export function openTun(name: string, netns?: string): { fd: number; name: string } {
  if (!/^[A-Za-z0-9_.-]{1,15}$/.test(name)) {
    throw new InvalidArgumentError(`openTun: "${name}" is not a device name (1-15 characters)`);
  }
  if (netns !== undefined) checkNetns('netns', netns);
  return binding().openTun(name, netns);
}

/**
 * A UDP socket bound to `address`:`port` (0: any port) in `netns`, for dgram's
 * `bind({ fd })`: Node creates its own sockets in the process's namespace.
 */
export function udpSocketIn(family: 4 | 6, address: string, port: number, netns?: string): number {
  if (family !== 4 && family !== 6) throw new InvalidArgumentError('udpSocketIn: family 4 or 6');
  checkUint('port', port, 65535);
  if (netns !== undefined) checkNetns('netns', netns);
  return binding().udpSocket(family, address, port, netns);
}

/**
 * Attaches a SCHED_CLS program to `ifindex`'s tcx ingress or egress hook (kernel 6.6) with a
 * link that lasts as long as the returned descriptor: the process. Like `bpftool net attach
 * tcx_ingress`, without pinning.
 */
export function attachTcx(
  progFd: number,
  ifindex: number,
  direction: 'ingress' | 'egress',
  netns?: string,
): number {
  checkUint('ifindex', ifindex, 0x7fff_ffff);
  if (netns !== undefined) checkNetns('netns', netns);
  return binding().attachTcx(progFd, ifindex, direction, netns);
}

/** Closes a descriptor from this file; closing one twice is the caller's bug. */
export function closeFd(fd: number): void {
  closeSync(fd);
}
