// Regenerates the generated parts of README.md (the option table) and
// deploy/fibkeeper.example.yaml from the option table in src/config. Run after `make ts`.
import { readFileSync, writeFileSync } from 'node:fs';
import { exampleConfigYaml, optionsMarkdown } from '../dist/config/index.js';

const root = new URL('../', import.meta.url);
const readmeUrl = new URL('README.md', root);
const readme = readFileSync(readmeUrl, 'utf8');
const next = readme.replace(
  /<!-- options:begin -->\n[\s\S]*?<!-- options:end -->/,
  `<!-- options:begin -->\n${optionsMarkdown()}\n<!-- options:end -->`,
);
writeFileSync(readmeUrl, next);
writeFileSync(new URL('deploy/fibkeeper.example.yaml', root), exampleConfigYaml());
console.log('README.md option table and deploy/fibkeeper.example.yaml regenerated');
