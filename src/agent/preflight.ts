// What the agent checks before it changes anything: the capabilities its configuration
// needs (read from CapEff — the kernel feature probes would misread a missing capability as
// a missing feature and give the wrong fix), and that a `netns` other than its own can be
// entered. Pure apart from reading /proc. And what a verifier refusal of the XDP program
// says, for the start's error.
import { statSync } from 'node:fs';
import type { FibkeeperConfig } from '../config/index.js';
import { NotSupportedError } from '../errors/index.js';
import { isVerifierError } from '../native/index.js';
import type { Logger } from '../log/index.js';
import {
  buildReport,
  CAPS,
  effectiveCaps,
  probeKernel,
  type FeatureResult,
  type ProbeReport,
} from '../probe/index.js';
import { netnsPath } from './lock.js';

type CapName = keyof typeof CAPS;

interface Need {
  /** Any one of these will do (CAP_SYS_ADMIN stands in for CAP_BPF and CAP_PERFMON). */
  anyOf: CapName[];
  why: string;
  /** The option that turns off what needs it. */
  off: string;
}

/** Whether `netns` names a namespace other than the one this process is in. */
function foreignNetns(netns: string): boolean {
  if (netns === '') return false;
  try {
    const theirs = statSync(netnsPath(netns));
    const ours = statSync('/proc/self/ns/net');
    return theirs.ino !== ours.ino || theirs.dev !== ours.dev;
  } catch {
    return true; // the lock reports a namespace that cannot be opened
  }
}

/** The capabilities a configuration needs, with what needs them. */
export function neededCapabilities(cfg: FibkeeperConfig): Need[] {
  const needs: Need[] = [];
  if (cfg.neighbor.enabled || cfg.extip.enabled || cfg.xdp.enabled) {
    needs.push({
      anyOf: ['CAP_NET_ADMIN'],
      why: 'neighbor entries, addresses, links and the XDP attach are rtnetlink writes',
      off: 'nothing: every job needs it',
    });
  }
  if (cfg.extip.enabled) {
    needs.push({
      anyOf: ['CAP_NET_RAW'],
      why: 'gratuitous ARP and unsolicited NA go out of a packet socket',
      off: 'extip.enabled: false',
    });
  }
  if (cfg.xdp.enabled) {
    needs.push(
      {
        anyOf: ['CAP_BPF', 'CAP_SYS_ADMIN'],
        why: 'loading the XDP program and its maps (CAP_SYS_ADMIN before Linux 5.8)',
        off: 'xdp.enabled: false',
      },
      {
        anyOf: ['CAP_PERFMON', 'CAP_SYS_ADMIN'],
        why: 'the verifier allows the pointer arithmetic the XDP program does only with it',
        off: 'xdp.enabled: false',
      },
    );
  }
  if (foreignNetns(cfg.netns)) {
    needs.push({
      anyOf: ['CAP_SYS_ADMIN'],
      why: `entering the network namespace ${cfg.netns} (setns)`,
      off: 'netns: "" with the agent started inside the namespace',
    });
  }
  return needs;
}

/**
 * Throws NotSupportedError naming every capability the configuration needs and the process
 * lacks, why, and the fix (grant it, or turn off what needs it). `capEff` is for tests.
 */
export function checkCapabilities(cfg: FibkeeperConfig, capEff: bigint = effectiveCaps()): void {
  const held = (c: CapName) => ((capEff >> BigInt(CAPS[c])) & 1n) === 1n;
  const missing = neededCapabilities(cfg).filter((n) => !n.anyOf.some(held));
  if (missing.length === 0) return;
  const names = missing.map((n) => n.anyOf[0] as CapName);
  const what = missing.map((n) => `${n.anyOf.join(' or ')} (${n.why}; or set ${n.off})`);
  const list = names.join(' ');
  const short = names.map((n) => n.replace(/^CAP_/, '')).join(', ');
  throw new NotSupportedError(
    names.map((n) => n.toLowerCase()).join(','),
    `the agent lacks capabilities this configuration needs: ${what.join('; ')}. ` +
      `Fix: run as root, or grant them — systemd: add ${list} to AmbientCapabilities= and CapabilityBoundingSet=; ` +
      `Kubernetes: securityContext.capabilities.add: [${short}]. Nothing was changed (kernel features were not probed)`,
  );
}

/** The verifier's last line when `err` (or a cause of it) is a verifier refusal. */
export function verifierRefusal(err: unknown): string | undefined {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 8; depth++, e = e.cause) {
    if (isVerifierError(e)) {
      const lines = e.verifierLog.trim().split('\n');
      return lines.filter((l) => !/^processed \d+ insns/.test(l)).pop() ?? e.message;
    }
  }
  return undefined;
}

/**
 * The kernel probe of a start: the features this configuration needs (`probe`: tests' table
 * instead of probing). Logs what is assumed from the kernel's version.
 */
export async function probeForStart(
  cfg: FibkeeperConfig,
  netns: string | undefined,
  log: Logger,
  probe?: () => Promise<FeatureResult[]>,
): Promise<ProbeReport> {
  const features = probe
    ? await probe()
    : await probeKernel({ ...(netns ? { netns } : {}), pinDir: cfg.xdp.pinDir });
  const report = buildReport(features, cfg);
  for (const f of report.assumed) {
    log.warn(
      { feature: f.name, detail: f.detail },
      `assuming ${f.title} from kernel ${report.kernel}`,
    );
  }
  return report;
}

/** Throws NotSupportedError naming each feature the kernel lacks, with its fix. */
export function refuseMissing(report: ProbeReport): void {
  if (report.missing.length === 0) return;
  const lines = report.missing.map((f) => `${f.title}: ${f.detail} (fix: ${f.fix})`);
  throw new NotSupportedError(
    report.missing.map((f) => f.name).join(','),
    `the kernel lacks what this configuration needs:\n  ${lines.join('\n  ')}`,
  );
}
