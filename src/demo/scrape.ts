// Reading the agent's metrics endpoint: the fib_lookup counters per result.
export type Scrape = Map<string, number>;

/** Every sample line "name{labels} value" of the exposition, keyed by "name{labels}". */
export async function scrape(url: string): Promise<Scrape> {
  const res = await fetch(`${url}/metrics`);
  if (!res.ok) throw new Error(`scrape ${url}/metrics: HTTP ${res.status}`);
  return parseExposition(await res.text());
}

export function parseExposition(text: string): Scrape {
  const out: Scrape = new Map();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    out.set(line.slice(0, i), Number(line.slice(i + 1)));
  }
  return out;
}

/** fibkeeper_xdp_fib_lookup_packets_total summed over devices, per result. */
export function countersByResult(s: Scrape): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of s) {
    if (!k.startsWith('fibkeeper_xdp_fib_lookup_packets_total{')) continue;
    const result = /result="([^"]+)"/.exec(k)?.[1];
    if (result) out[result] = (out[result] ?? 0) + v;
  }
  return out;
}

/** fibkeeper_xdp_actions_total summed over devices, per action (redirect, pass, ...). */
export function countersByAction(s: Scrape): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of s) {
    if (!k.startsWith('fibkeeper_xdp_actions_total{')) continue;
    const action = /action="([^"]+)"/.exec(k)?.[1];
    if (action) out[action] = (out[action] ?? 0) + v;
  }
  return out;
}
