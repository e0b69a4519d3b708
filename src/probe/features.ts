// The kernel features fibkeeper uses, each with the first kernel that has it and a probe
// that tries the real thing (in a scratch namespace where it must create objects).
import { existsSync, readFileSync } from 'node:fs';
import { release } from 'node:os';
import { describeError, errnoCode } from '../errors/index.js';
import {
  BpfLink,
  BpfProgram,
  btfVmlinuxPresent,
  isBpffs,
  probeHelper,
  probeMapType,
  runInNetns,
  XdpAction,
} from '../native/index.js';
import { NUD_NONE, NUD_PERMANENT, NTF_EXT_LEARNED, isManaged } from '../netlink/index.js';
import type { Scratch } from './scratch.js';
import type { FeatureSpec, ProbeOutcome } from './table.js';

export interface ProbeContext {
  /** Undefined when a scratch namespace could not be made (no privilege): those probes are inconclusive. */
  scratch: Scratch | undefined;
  scratchError: string | undefined;
  /** The namespace fibkeeper manages (sysctls are read there); undefined = our own. */
  netns: string | undefined;
  /** Where XDP links and maps are pinned. */
  pinDir: string;
}

/** NDA_PROTOCOL value the probes write (any value works; the probe entry is deleted with its namespace). */
const PROBE_PROTOCOL = 0xfb;

const yes = (detail: string, value?: string | number): ProbeOutcome => ({
  outcome: 'supported',
  detail,
  ...(value === undefined ? {} : { value }),
});
const no = (detail: string): ProbeOutcome => ({ outcome: 'not supported', detail });
const unsure = (detail: string): ProbeOutcome => ({ outcome: 'inconclusive', detail });

/** Runs `fn` with the scratch namespace, or reports why there is none. */
async function inScratch(
  ctx: ProbeContext,
  fn: (s: Scratch) => Promise<ProbeOutcome>,
): Promise<ProbeOutcome> {
  if (!ctx.scratch)
    return unsure(`needs a scratch network namespace: ${ctx.scratchError ?? 'unavailable'}`);
  return fn(ctx.scratch);
}

/** A kernel that does not know an attribute or flag answers with one of these. */
function isUnsupportedErrno(err: unknown): boolean {
  const code = errnoCode(err);
  return (
    code === 'EINVAL' || code === 'EOPNOTSUPP' || code === 'ENOTSUP' || code === 'EPROTONOSUPPORT'
  );
}

// CapEff bits (include/uapi/linux/capability.h).
export const CAPS = {
  CAP_NET_ADMIN: 12,
  CAP_NET_RAW: 13,
  CAP_SYS_ADMIN: 21,
  CAP_PERFMON: 38,
  CAP_BPF: 39,
} as const;

export function effectiveCaps(status = readFileSync('/proc/self/status', 'utf8')): bigint {
  const m = /^CapEff:\s*([0-9a-f]+)$/m.exec(status);
  return m ? BigInt(`0x${m[1]}`) : 0n;
}

function capFeature(
  name: keyof typeof CAPS,
  why: string,
  minKernel?: string,
): FeatureSpec<ProbeContext> {
  return {
    name: name.toLowerCase(),
    title: `Capability ${name}`,
    ...(minKernel ? { minKernel } : {}),
    fix: `run as root, or grant ${name} (systemd AmbientCapabilities=, Kubernetes securityContext.capabilities.add)`,
    async probe() {
      const held = (effectiveCaps() >> BigInt(CAPS[name])) & 1n;
      return held ? yes(`held (${why})`) : no(`not held (${why})`);
    },
  };
}

/**
 * Reads a sysctl in the managed namespace, or, for `global` ones, in the initial one: the
 * neighbor table's defaults (neigh.default.*, gc_thresh*) exist only there and apply to
 * every namespace.
 */
function readSysctl(ctx: ProbeContext, key: string, global: boolean): string {
  const path = `/proc/sys/${key.replace(/\./g, '/')}`;
  const read = () => readFileSync(path, 'utf8').trim();
  return ctx.netns && !global ? runInNetns(ctx.netns, read) : read();
}

function sysctlFeature(
  name: string,
  key: string,
  want: ((v: string) => boolean) | undefined,
  fix: string,
  about: string,
  global = false,
): FeatureSpec<ProbeContext> {
  return {
    name,
    title: `sysctl ${key}`,
    fix,
    async probe(ctx) {
      let v: string;
      try {
        v = readSysctl(ctx, key, global);
      } catch (err) {
        return unsure(`cannot read: ${describeError(err)}`);
      }
      const num = /^\d+$/.test(v) ? Number(v) : v;
      if (want && !want(v))
        return { outcome: 'not supported', detail: `${v} (${about})`, value: num };
      return yes(`${v} (${about})`, num);
    },
  };
}

export const FEATURES: readonly FeatureSpec<ProbeContext>[] = [
  {
    name: 'kernel',
    title: 'Kernel version',
    fix: 'use Linux 5.16 or newer for every feature',
    async probe() {
      return yes(`Linux ${release()}`, release());
    },
  },
  {
    name: 'extern_learn',
    title: 'Neighbor flag extern_learn (NTF_EXT_LEARNED)',
    minKernel: '4.15',
    fix: 'use Linux 4.15 or newer',
    probe: (ctx) =>
      inScratch(ctx, async (s) => {
        const ifindex = await s.veth();
        await s.nl.neighSet({
          ifindex,
          dst: '192.0.2.1',
          lladdr: '02:00:00:00:00:01',
          state: NUD_PERMANENT,
          externLearned: true,
        });
        const n = await s.nl.neighGet({ ifindex, dst: '192.0.2.1' });
        return n.flags & NTF_EXT_LEARNED
          ? yes('entries keep the flag; exempt from garbage collection')
          : no('the kernel dropped the flag');
      }),
  },
  {
    name: 'neigh_protocol',
    title: 'Neighbor protocol attribute (NDA_PROTOCOL)',
    minKernel: '5.2',
    fix: 'use Linux 5.2 or newer (fibkeeper marks its own entries with it)',
    probe: (ctx) =>
      inScratch(ctx, async (s) => {
        const ifindex = await s.veth();
        await s.nl.neighSet({
          ifindex,
          dst: '192.0.2.2',
          lladdr: '02:00:00:00:00:02',
          state: NUD_PERMANENT,
          externLearned: true,
          protocol: PROBE_PROTOCOL,
        });
        const n = await s.nl.neighGet({ ifindex, dst: '192.0.2.2' });
        return n.protocol === PROBE_PROTOCOL
          ? yes('entries keep their protocol value')
          : no('the kernel does not store NDA_PROTOCOL');
      }),
  },
  {
    name: 'managed_neighbors',
    title: 'Managed neighbor entries (NTF_EXT_MANAGED)',
    minKernel: '5.16',
    fix: 'use Linux 5.16 or newer, or set neighbor.refresh to legacy (fibkeeper refreshes stale entries itself)',
    probe: (ctx) =>
      inScratch(ctx, async (s) => {
        const ifindex = await s.veth();
        try {
          await s.nl.neighSet({
            ifindex,
            dst: '192.0.2.3',
            state: NUD_NONE,
            externLearned: true,
            managed: true,
          });
        } catch (err) {
          if (isUnsupportedErrno(err))
            return no(`the kernel refused a managed entry: ${describeError(err)}`);
          throw err;
        }
        const n = await s.nl.neighGet({ ifindex, dst: '192.0.2.3' });
        return isManaged(n)
          ? yes('the kernel keeps managed entries resolved')
          : no('the kernel dropped the managed flag');
      }),
  },
  {
    name: 'dummy_link',
    title: 'Link type dummy',
    fix: 'load the dummy module (CONFIG_DUMMY), or set extip.holderKind to bridge or ifb',
    probe: (ctx) =>
      inScratch(ctx, async (s) => {
        try {
          await s.nl.linkAdd({ name: 'probedummy', kind: 'dummy' });
        } catch (err) {
          if (isUnsupportedErrno(err))
            return no(`the kernel has no dummy link type (${describeError(err)})`);
          throw err;
        }
        await s.nl.linkDel('probedummy');
        return yes('dummy links can be created');
      }),
  },
  {
    name: 'bpffs',
    title: 'BPF filesystem (bpffs)',
    minKernel: '4.4',
    fix: 'mount it: mount -t bpf bpf /sys/fs/bpf (fibkeeper mounts it at xdp.pinDir when allowed)',
    async probe(ctx) {
      const known = readFileSync('/proc/filesystems', 'utf8')
        .split('\n')
        .some((l) => l.trim().endsWith('bpf'));
      if (!known) return no('the kernel has no bpf filesystem');
      for (
        let dir = ctx.pinDir;
        dir !== '/' && dir !== '';
        dir = dir.slice(0, dir.lastIndexOf('/')) || '/'
      ) {
        if (existsSync(dir)) {
          return isBpffs(dir)
            ? yes(`mounted at ${dir}`)
            : yes(`available; ${dir} is not a bpffs (fibkeeper mounts one at ${ctx.pinDir})`);
        }
      }
      return yes(`available; not mounted (fibkeeper mounts one at ${ctx.pinDir})`);
    },
  },
  {
    name: 'btf',
    title: 'Kernel BTF (/sys/kernel/btf/vmlinux)',
    minKernel: '5.4',
    fix: 'use a kernel built with CONFIG_DEBUG_INFO_BTF=y',
    async probe() {
      return btfVmlinuxPresent() ? yes('present') : no('absent');
    },
  },
  {
    name: 'xdp_link',
    title: 'XDP attachment through bpf_link',
    minKernel: '5.9',
    fix: 'use Linux 5.9 or newer (older kernels get the netlink attach, which does not survive as well)',
    probe: (ctx) =>
      inScratch(ctx, async (s) => {
        const prog = BpfProgram.loadXdpPass();
        try {
          const link = BpfLink.attachXdp(prog, 1, { mode: 'generic', netns: s.netns });
          link.close();
          return yes('attached and detached an XDP link on lo in a scratch namespace');
        } catch (err) {
          if (isUnsupportedErrno(err)) return no(`bpf_link_create refused: ${describeError(err)}`);
          throw err;
        } finally {
          prog.close();
        }
      }),
  },
  {
    name: 'fib_lookup',
    title: 'Helper bpf_fib_lookup for XDP',
    minKernel: '4.18',
    fix: 'use Linux 4.18 or newer',
    async probe() {
      return probeHelper('xdp', 'fib_lookup') ? yes('available to XDP programs') : no('missing');
    },
  },
  {
    name: 'devmap_hash',
    title: 'Map type devmap_hash',
    minKernel: '5.4',
    fix: 'use Linux 5.4 or newer',
    async probe() {
      return probeMapType('devmap_hash') ? yes('available') : no('missing');
    },
  },
  {
    name: 'xdp_live_frames',
    title: 'XDP test run with live frames',
    minKernel: '5.18',
    fix: 'use Linux 5.18 or newer (only the benchmarks need it)',
    probe: (ctx) =>
      inScratch(ctx, async (s) => {
        // XDP_DROP: the probe frame goes nowhere, in a namespace of its own.
        const prog = BpfProgram.loadXdpAction(XdpAction.DROP);
        try {
          runInNetns(s.netns, () =>
            prog.testRun({
              dataIn: Buffer.alloc(64),
              liveFrames: true,
              repeat: 1,
              xdpCtx: { ingressIfindex: 1 },
            }),
          );
          return yes('BPF_F_TEST_XDP_LIVE_FRAMES accepted');
        } catch (err) {
          if (isUnsupportedErrno(err)) return no(`refused: ${describeError(err)}`);
          throw err;
        } finally {
          prog.close();
        }
      }),
  },
  capFeature('CAP_NET_ADMIN', 'neighbors, addresses, links, XDP attach'),
  capFeature('CAP_BPF', 'loading BPF programs and maps', '5.8'),
  capFeature('CAP_NET_RAW', 'sending gratuitous ARP and neighbor advertisements'),
  capFeature('CAP_PERFMON', 'BPF programs that read kernel memory', '5.8'),
  capFeature('CAP_SYS_ADMIN', 'mounting bpffs; BPF on kernels before 5.8'),
  sysctlFeature(
    'ip_forward',
    'net.ipv4.ip_forward',
    (v) => v === '1',
    'sysctl -w net.ipv4.ip_forward=1 (in the managed namespace)',
    'IPv4 forwarding; bpf_fib_lookup answers FWD_DISABLED without it',
  ),
  sysctlFeature(
    'ipv6_forwarding',
    'net.ipv6.conf.all.forwarding',
    (v) => v === '1',
    'sysctl -w net.ipv6.conf.all.forwarding=1 (in the managed namespace)',
    'IPv6 forwarding',
  ),
  sysctlFeature(
    'gc_thresh3',
    'net.ipv4.neigh.default.gc_thresh3',
    undefined,
    'raise it if plain (non-fibkeeper) entries hit it',
    'hard limit of neighbor entries that are not extern_learn, shared by every namespace',
    true,
  ),
  sysctlFeature(
    'base_reachable_time_ms',
    'net.ipv4.neigh.default.base_reachable_time_ms',
    undefined,
    '',
    'default time an entry stays REACHABLE before STALE; per device under neigh.DEV',
    true,
  ),
];
