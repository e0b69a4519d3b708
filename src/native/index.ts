// The native layer: netlink and packet sockets, network namespaces, BPF (libbpf), and
// systemd's readiness notification.
// Everything here is synchronous except the libuv polls that deliver received data.
export type { SystemError } from './binding.js';
export {
  NetlinkSocket,
  type NetlinkSocketOptions,
  type NetlinkReceiver,
} from './netlink-socket.js';
export {
  PacketSocket,
  ETH_P_ALL,
  ETH_P_ARP,
  ETH_P_IP,
  ETH_P_IPV6,
  bpfInsn,
  type PacketSocketOptions,
  type PacketReceiver,
  type PacketType,
  type FrameInfo,
} from './packet-socket.js';
export { runInNetns, mountBpffs, unmount, isBpffs, flockFd } from './netns.js';
export { sdNotify } from './notify.js';
export { exitAfter, trimHeap } from './process.js';
export {
  configureFaults,
  faultCounts,
  parseFaultSpec,
  FAULT_CLASSES,
  type FaultClass,
  type FaultSpec,
} from './faults.js';
export {
  BpfObject,
  isVerifierError,
  type BpfObjectOpenOptions,
  type RodataVariable,
  type VerifierError,
} from './bpf-object.js';
export {
  BpfProgram,
  XdpAction,
  BPF_F_TEST_RUN_ON_CPU,
  BPF_F_TEST_XDP_LIVE_FRAMES,
  xdpMd,
  type XdpActionValue,
  type BpfProgramInfo,
  type TestRunOptions,
  type TestRunResult,
} from './bpf-program.js';
export { BpfMap, BPF_ANY, BPF_NOEXIST, BPF_EXIST, type BpfMapInfo } from './bpf-map.js';
export {
  BpfLink,
  xdpAttachLegacy,
  xdpDetachLegacy,
  xdpQuery,
  xdpLinks,
  xdpLinksOn,
  type XdpMode,
  type XdpAttachMode,
  type XdpQueryResult,
  type BpfLinkInfo,
} from './bpf-link.js';
export {
  setLibbpfLogger,
  possibleCpus,
  progTypeNames,
  mapTypeNames,
  helperNames,
  probeProgType,
  probeMapType,
  probeHelper,
  btfVmlinuxPresent,
  type LibbpfLogger,
  type LibbpfLogLevel,
} from './bpf-system.js';
export { tcxQuery, iptablesTable } from './node-policy.js';
export { openTun, udpSocketIn, attachTcx, closeFd } from './cluster-io.js';
