import { loadConfig, type FibkeeperConfig } from '../config/index.js';
import { describeError } from '../errors/index.js';
import { inspectNodePolicy, type PolicyInspection } from '../fib/index.js';
import { buildReport, formatFeatureTable, formatMissing, probeKernel } from '../probe/index.js';
import { EXIT_FAILED, EXIT_OK, flag, str, type Command } from './command.js';

export const probeCommand: Command = {
  name: 'probe',
  summary: 'Report the kernel features fibkeeper uses and which of them are missing',
  usage: '[--json] [--config FILE] [--netns NAME]',
  help: [
    'Options:',
    '  --json          machine-readable output',
    '  --config FILE   judge what is needed by this configuration (default: the defaults)',
    '  --netns NAME    read sysctls in this network namespace (default: config netns or ours)',
    '',
    'Exit code 1 when a feature the configuration needs is missing. Needs root (or',
    'CAP_NET_ADMIN and CAP_BPF) for the probes that create objects in a scratch namespace.',
  ].join('\n'),
  options: {
    json: { type: 'boolean' },
    config: { type: 'string' },
    netns: { type: 'string' },
  },
  async run(args, io) {
    const cfg = loadConfig(str(args, 'config'));
    const netns = str(args, 'netns') ?? (cfg.netns || undefined);
    const features = await probeKernel({ netns, pinDir: cfg.xdp.pinDir });
    const report = buildReport(features, cfg);
    const policy = cfg.xdp.enabled ? await nodePolicy(cfg, netns) : undefined;
    if (flag(args, 'json')) {
      io.out(
        JSON.stringify({ ...report, ...(policy ? { nodePolicy: policy } : {}) }, null, 2) + '\n',
      );
    } else {
      io.out(formatFeatureTable(report.features, new Set(report.needed)));
      if (report.missing.length + report.assumed.length > 0) io.out('\n' + formatMissing(report));
      if (policy !== undefined) io.out('\n' + formatNodePolicy(policy));
    }
    return report.missing.length > 0 ? EXIT_FAILED : EXIT_OK;
  },
};

/** The node's policy as the forwarder would see it, or why it could not be read. */
async function nodePolicy(
  cfg: FibkeeperConfig,
  netns: string | undefined,
): Promise<PolicyInspection | { mode: string; error: string }> {
  try {
    return await inspectNodePolicy({
      netns,
      selection: { devices: cfg.devices, holderName: cfg.extip.holderName },
      mode: cfg.xdp.nodePolicy,
    });
  } catch (err) {
    return { mode: cfg.xdp.nodePolicy, error: describeError(err) };
  }
}

/** xdp.nodePolicy, and per selected device what of the node's policy acts on its traffic. */
export function formatNodePolicy(p: PolicyInspection | { mode: string; error: string }): string {
  const head =
    p.mode === 'bypass'
      ? "xdp.nodePolicy: bypass (XDP forwards past the node's netfilter, tc and xfrm policy)"
      : "xdp.nodePolicy: respect (traffic the node's netfilter, tc or xfrm policy acts on goes to the kernel)";
  if ('error' in p) return `${head}\n  the node's policy could not be read: ${p.error}\n`;
  const lines = [head];
  if (p.devices.length === 0) lines.push('  (no selected device)');
  for (const d of p.devices) {
    for (const dir of ['ipv4', 'ipv6', 'egress'] as const) {
      const hits = d.policy[dir];
      const what =
        hits.length === 0
          ? 'forwarded in XDP'
          : `${p.mode === 'bypass' ? 'bypassed' : 'to the kernel'}: ${hits
              .slice(0, 3)
              .map((h) => `${h.reason}: ${h.what}`)
              .join('; ')}${hits.length > 3 ? ` (+${hits.length - 3} more)` : ''}`;
      lines.push(`  ${d.name} ${dir}: ${what}`);
    }
  }
  return lines.join('\n') + '\n';
}
