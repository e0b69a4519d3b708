// The native layer: netlink and packet sockets, network namespaces, and BPF (libbpf).
// Everything here is synchronous except the libuv polls that deliver received data.
export type { SystemError } from './binding.js';
export {
  NetlinkSocket,
  type NetlinkSocketOptions,
  type NetlinkReceiver,
} from './netlink-socket.js';
export { runInNetns, mountBpffs, unmount, isBpffs } from './netns.js';
