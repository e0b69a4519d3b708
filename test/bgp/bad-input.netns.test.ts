// Bad input: a peer whose TCP MD5 password differs, a peer that refuses the session (another
// AS than configured), a peer nobody has — each shows in `bgp status` with its session state
// and the daemon's last error, and nothing else breaks: an external IP is still assigned. A
// malformed community is refused before anything starts, naming the option.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ip, makeNetns, privileged, waitFor } from '../helpers/netns.js';
import { BIN, makeRouter, nodeV4, routerV4, routerV6, startAgent } from './lab.js';

const { skip } = privileged();

interface Peer {
  address: string;
  session: string;
  state: string;
  lastError: string;
}

/** A counter of the router namespace's kernel (nstat -a: absolute values). */
function nstat(ns: string, name: string): number {
  const out = spawnSync('ip', ['netns', 'exec', ns, 'nstat', '-az', name], {
    encoding: 'utf8',
  }).stdout;
  const m = new RegExp(`^${name}\\s+(\\d+)`, 'm').exec(out);
  return m ? Number(m[1]) : 0;
}

describe.skipIf(skip)('BGP with bad input', () => {
  it('wrong password, refused session, unreachable peer: status says so; the agent goes on', async () => {
    const node = makeNetns('bgbn');
    const client = makeNetns('bgbc');
    const router = await makeRouter([node], client, {
      nodes: 1,
      neighborExtra: (_i, a) => (a === nodeV4(1) ? ['password right-secret'] : []),
    });
    const pw = join(router.dir, 'wrong.pw');
    writeFileSync(pw, 'wrong-secret\n');
    const agent = await startAgent(node, 1, [], {
      peers: [
        `${routerV4(1)} as 65000 password-file ${pw}`,
        `${routerV6(1)} as 65099`,
        '10.77.1.99 as 65000 bfd off',
      ],
    });
    const peers = (): Peer[] =>
      (JSON.parse(agent.cli('bgp', 'status', '--json').stdout) as { peers: Peer[] }).peers;
    // the router's kernel refused our segments for their MD5 signature
    await waitFor(() => nstat(router.ns, 'TcpExtTCPMD5Failure') > 0, {
      timeoutMs: 15_000,
      what: 'the router kernel counting a bad MD5 signature',
    });
    await waitFor(() => /Bad peer AS/i.test(peers()[1]?.lastError ?? ''), {
      timeoutMs: 15_000,
      what: () => `the refused session's error: ${JSON.stringify(peers())}`,
    });
    await waitFor(() => (peers()[2]?.lastError ?? '') !== '', {
      timeoutMs: 15_000,
      what: () => `the unreachable peer's error: ${JSON.stringify(peers())}`,
    });
    const p = peers();
    expect(p.map((x) => x.session)).not.toContain('Established');
    const text = agent.cli('bgp', 'status').stdout;
    expect(text).toMatch(/fd77:1::1\s+65099\s+fk_peer1\s+\S+\s+\S+.*Bad peer AS/i);
    // /healthz names each peer that is not established (for alerts), and the reason
    await waitFor(
      async () => {
        const r = await fetch(`http://127.0.0.1:${agent.port}/healthz`);
        const body = await r.text();
        return (
          r.status === 503 &&
          /bgp: peer 10\.77\.1\.99 Active: Socket: No route to host/.test(body) &&
          /bgp: peer fd77:1::1 \w+: BGP Error: Bad peer AS/.test(body)
        );
      },
      { timeoutMs: 10_000, what: 'bgp reasons in /healthz' },
    );
    // nothing else broke: an external IP is assigned
    expect(agent.cli('extip', 'add', '192.0.2.50').status).toBe(0);
    expect(ip(node, '-j', 'addr', 'show', 'dev', 'fkh0')).toContain('192.0.2.50');
    expect(router.bgpRoutes(4)).toEqual({});

    // a second agent (another namespace) given the same bgp.runDir refuses to start, and the
    // first one's daemon keeps its control socket
    const ns2 = makeNetns('bgbo');
    ip(ns2, 'link', 'add', 'ext0', 'type', 'veth', 'peer', 'name', 'ext1');
    ip(ns2, 'link', 'set', 'ext0', 'up');
    const other = await startAgent(ns2, 1, [], {
      wait: false,
      runDir: join(agent.dir, 'bgp'),
    });
    const code = await new Promise((r) => other.proc.once('exit', r));
    expect(code).not.toBe(0);
    expect(other.log()).toContain(
      `a BIRD already answers on ${join(agent.dir, 'bgp', 'bird.ctl')}`,
    );
    expect(agent.cli('bgp', 'status', '--json').status).toBe(0);
  });

  it('refuses a malformed community before anything starts, naming the option', () => {
    const yaml = [
      'extip:\n  enabled: true\n  interface: eth0',
      'bgp:\n  enabled: true\n  asn: 65001\n  peers: ["10.0.0.1 as 65000"]',
      '  communities: ["65000:70000"]',
    ].join('\n');
    const r = spawnSync('node', [BIN, 'config', 'check', '-'], { input: yaml, encoding: 'utf8' });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(
      /bgp\.communities: "65000:70000" is not a community \(ASN:VALUE, each 0-65535\)/,
    );
  });
});
