// Regenerates the generated parts of README.md (the option and metric tables) and
// deploy/fibkeeper.example.yaml from src/config and src/metrics. Run after `make ts`.
import { readFileSync, writeFileSync } from 'node:fs';
import { exampleConfigYaml, optionsMarkdown } from '../dist/config/index.js';
import { metricsMarkdown } from '../dist/agent/index.js';

const root = new URL('../', import.meta.url);
const readmeUrl = new URL('README.md', root);
const readme = readFileSync(readmeUrl, 'utf8');
const next = readme.replace(
  /<!-- options:begin -->\n[\s\S]*?<!-- options:end -->/,
  `<!-- options:begin -->\n${optionsMarkdown()}\n<!-- options:end -->`,
);
const withMetrics = next.replace(
  /<!-- metrics:begin -->\n[\s\S]*?<!-- metrics:end -->/,
  `<!-- metrics:begin -->\n${await metricsMarkdown()}\n<!-- metrics:end -->`,
);
writeFileSync(readmeUrl, withMetrics);
writeFileSync(new URL('deploy/fibkeeper.example.yaml', root), exampleConfigYaml());
console.log('README.md option and metric tables and deploy/fibkeeper.example.yaml regenerated');
