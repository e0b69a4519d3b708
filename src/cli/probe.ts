import { loadConfig } from '../config/index.js';
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
    if (flag(args, 'json')) {
      io.out(JSON.stringify(report, null, 2) + '\n');
    } else {
      io.out(formatFeatureTable(report.features, new Set(report.needed)));
      if (report.missing.length + report.assumed.length > 0) io.out('\n' + formatMissing(report));
    }
    return report.missing.length > 0 ? EXIT_FAILED : EXIT_OK;
  },
};
