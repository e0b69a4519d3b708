// docs/decisions.md quotes benchmark figures as evidence; each must be the one in the
// results file it names, so that a new run of the benchmark that changes a figure fails
// here until the decision is read again and its text brought up to date.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/imports.js';

interface Figure {
  name: string;
  value: number;
  reference?: number;
  ratio?: number;
}

const doc = readFileSync(join(ROOT, 'docs/decisions.md'), 'utf8').replace(/\s+/g, ' ');

function figure(file: string, name: string): Figure {
  const r = JSON.parse(readFileSync(join(ROOT, 'bench/results', file), 'utf8')) as {
    figures: Figure[];
  };
  const f = r.figures.find((x) => x.name === name);
  if (f === undefined) throw new Error(`no figure ${name} in bench/results/${file}`);
  return f;
}

/** 425807 → "425,807"; 5.24 stays "5.24". */
const grouped = (v: number) =>
  Number.isInteger(v) ? v.toLocaleString('en-US') : String(Math.round(v * 100) / 100);

describe('docs/decisions.md', () => {
  it('quotes the netlink write rates of bench/results/netlink-neigh.json', () => {
    const f = figure('netlink-neigh.json', 'write_100000');
    expect(doc).toContain(
      `${grouped(f.value)} entries/s against \`ip -batch\` at ${grouped(f.reference!)}/s in the same run (${f.ratio}×`,
    );
    expect(doc).toContain(`10,000 entries: ${figure('netlink-neigh.json', 'write_10000').ratio}×`);
  });

  it('quotes the soak of bench/results/neighbor-soak.json', () => {
    expect(doc).toContain(`only ${figure('neighbor-soak.json', 'soak_managed_usable_min_pct').value}% stayed usable`);
    expect(figure('neighbor-soak.json', 'soak_legacy_usable_min_pct').value).toBe(100);
    expect(figure('neighbor-soak.json', 'soak_auto_usable_min_pct').value).toBe(100);
    const legacy = Math.round(figure('neighbor-soak.json', 'soak_legacy_requests_per_s_max').value);
    const auto = Math.round(figure('neighbor-soak.json', 'soak_auto_requests_per_s_max').value);
    expect(doc).toContain(`no more than ${grouped(legacy)} ARP requests/s`);
    expect(doc).toContain(`at no more than ${grouped(auto)} (`);
  });
});
