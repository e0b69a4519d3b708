// The parts of prom-client the agent uses, each required from its own file. prom-client's
// index also loads its Pushgateway (node:https, and with it tls and crypto) and its cluster
// aggregator (node:cluster, child_process): about 7 MiB of RSS for nothing the agent
// serves (measured: all of prom-client 66.0 MiB RSS, these five 59.3 MiB; docs/neighbor.md,
// "Memory"). The same classes as prom-client's own exports (the same files, one cache), so
// its types apply unchanged.
import { createRequire } from 'node:module';
import type * as Prom from 'prom-client';

const require = createRequire(import.meta.url);

export const Registry = require('prom-client/lib/registry') as typeof Prom.Registry;
export type Registry = Prom.Registry;
export const Counter = require('prom-client/lib/counter') as typeof Prom.Counter;
export type Counter<T extends string = string> = Prom.Counter<T>;
export const Gauge = require('prom-client/lib/gauge') as typeof Prom.Gauge;
export type Gauge<T extends string = string> = Prom.Gauge<T>;
export const Histogram = require('prom-client/lib/histogram') as typeof Prom.Histogram;
export type Histogram<T extends string = string> = Prom.Histogram<T>;
export const collectDefaultMetrics =
  require('prom-client/lib/defaultMetrics') as typeof Prom.collectDefaultMetrics;
