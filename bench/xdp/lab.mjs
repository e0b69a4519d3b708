// The namespaces and frames of bench/xdp/run.mjs: client — router — server over two veth
// pairs, the server's s0 dropping in XDP, and the IPv4 / IPv6 frames the client would send.
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';

const tag = randomBytes(3).toString('hex');
export const NS = {
  client: `fkb-xdp-c-${tag}`,
  router: `fkb-xdp-r-${tag}`,
  server: `fkb-xdp-s-${tag}`,
};
export const MAC = {
  client: '02:00:00:0b:01:02',
  r1: '02:00:00:0b:01:01',
  r2: '02:00:00:0b:02:01',
  server: '02:00:00:0b:02:02',
};

/** Deletes the namespaces (best effort: also after a failed setup). */
export function deleteNamespaces() {
  for (const ns of Object.values(NS)) spawnSync('ip', ['netns', 'del', ns]);
}

function ip(ns, ...argv) {
  const r = spawnSync('ip', ['-n', ns, ...argv], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`ip -n ${ns} ${argv.join(' ')}: ${r.stderr.trim()}`);
  return r.stdout;
}
const sysctl = (ns, kv) => execFileSync('ip', ['netns', 'exec', ns, 'sysctl', '-qw', kv]);
const ifindex = (ns, dev) => JSON.parse(ip(ns, '-j', 'link', 'show', 'dev', dev))[0].ifindex;

/**
 * Builds the three namespaces; s0 drops in XDP with the program `native` loads (its closers
 * go to `closers`). Returns the router's ifindexes.
 */
export function topology(native, closers) {
  const { BpfProgram, BpfLink, XdpAction } = native;
  for (const ns of Object.values(NS)) {
    execFileSync('ip', ['netns', 'add', ns]);
    ip(ns, 'link', 'set', 'lo', 'up');
    sysctl(ns, 'net.ipv6.conf.all.accept_dad=0');
    sysctl(ns, 'net.ipv6.conf.default.accept_dad=0');
  }
  sysctl(NS.router, 'net.ipv4.ip_forward=1');
  sysctl(NS.router, 'net.ipv6.conf.all.forwarding=1');
  const pair = (a, da, ma, b, db, mb) => {
    ip(
      a,
      'link',
      'add',
      da,
      'address',
      ma,
      'type',
      'veth',
      'peer',
      'name',
      db,
      'address',
      mb,
      'netns',
      b,
    );
    ip(a, 'link', 'set', da, 'up');
    ip(b, 'link', 'set', db, 'up');
  };
  pair(NS.client, 'c0', MAC.client, NS.router, 'r1', MAC.r1);
  pair(NS.server, 's0', MAC.server, NS.router, 'r2', MAC.r2);
  const addrs = [
    [NS.client, 'c0', '10.61.1.2/24', 'fd61:1::2/64'],
    [NS.router, 'r1', '10.61.1.1/24', 'fd61:1::1/64'],
    [NS.router, 'r2', '10.61.2.1/24', 'fd61:2::1/64'],
    [NS.server, 's0', '10.61.2.2/24', 'fd61:2::2/64'],
  ];
  for (const [ns, dev, v4, v6] of addrs) {
    ip(ns, 'addr', 'add', v4, 'dev', dev);
    ip(ns, 'addr', 'add', v6, 'dev', dev, 'nodad');
  }
  for (const [dst, mac] of [
    ['10.61.2.2', MAC.server],
    ['fd61:2::2', MAC.server],
  ]) {
    ip(NS.router, 'neigh', 'replace', dst, 'lladdr', mac, 'dev', 'r2', 'nud', 'permanent');
  }
  ip(NS.router, 'route', 'add', '10.9.6.0/24', 'via', '10.61.2.3'); // no neighbor: NO_NEIGH
  // s0 drops in XDP: the receiving side costs the same for both ways of forwarding, and a
  // veth only takes redirected frames when its peer runs XDP
  const drop = BpfProgram.loadXdpAction(XdpAction.DROP, 'fkb_drop');
  const link = BpfLink.attachXdp(drop, ifindex(NS.server, 's0'), { netns: NS.server });
  closers.push(
    () => link.close(),
    () => drop.close(),
  );
  return { r1: ifindex(NS.router, 'r1'), r2: ifindex(NS.router, 'r2') };
}

/** Frames that reached the server's s0 (its XDP program drops them): any side's delivery. */
export function serverRx() {
  const out = execFileSync('ip', ['-n', NS.server, '-s', '-j', 'link', 'show', 's0'], {
    encoding: 'utf8',
  });
  return JSON.parse(out)[0].stats64.rx.packets;
}

/** The router's forwarded-datagram counter (IPv4 ForwDatagrams or Ip6OutForwDatagrams). */
export function snmpForw(v6) {
  const text = execFileSync(
    'ip',
    ['netns', 'exec', NS.router, 'cat', v6 ? '/proc/net/snmp6' : '/proc/net/snmp'],
    { encoding: 'utf8' },
  );
  if (v6) return Number(/^Ip6OutForwDatagrams\s+(\d+)/m.exec(text)[1]);
  const [keys, vals] = text.split('\n').filter((l) => l.startsWith('Ip:'));
  return Number(vals.split(/\s+/)[keys.split(/\s+/).indexOf('ForwDatagrams')]);
}

// ---- frames -------------------------------------------------------------------------------
function mac(s) {
  return Buffer.from(s.split(':').map((x) => parseInt(x, 16)));
}
function csum(b) {
  let s = 0;
  for (let i = 0; i < b.length; i += 2) s += b.readUInt16BE(i);
  while (s > 0xffff) s = (s & 0xffff) + (s >>> 16);
  return ~s & 0xffff;
}

/** UDP from the client to `dst` through r1: 60 bytes (64 with the FCS, the smallest). */
export function v4frame(dst) {
  const f = Buffer.alloc(64); // 60 + FCS on the wire: the smallest Ethernet frame
  mac(MAC.r1).copy(f, 0);
  mac(MAC.client).copy(f, 6);
  f.writeUInt16BE(0x0800, 12);
  const ip4 = f.subarray(14, 34);
  ip4[0] = 0x45;
  ip4.writeUInt16BE(64 - 14, 2);
  ip4.writeUInt16BE(0x4000, 6);
  ip4[8] = 64;
  ip4[9] = 17;
  Buffer.from([10, 61, 1, 2]).copy(ip4, 12);
  Buffer.from(dst.split('.').map(Number)).copy(ip4, 16);
  ip4.writeUInt16BE(csum(ip4), 10);
  f.writeUInt16BE(4000, 34);
  f.writeUInt16BE(9, 36); // discard
  f.writeUInt16BE(64 - 34, 38);
  return f;
}

/** UDP from the client to fd61:2::2 through r1. */
export function v6frame() {
  const f = Buffer.alloc(78);
  mac(MAC.r1).copy(f, 0);
  mac(MAC.client).copy(f, 6);
  f.writeUInt16BE(0x86dd, 12);
  f.writeUInt32BE(0x60000000, 14);
  f.writeUInt16BE(78 - 54, 18);
  f[20] = 17;
  f[21] = 64;
  Buffer.from('fd610001000000000000000000000002', 'hex').copy(f, 22);
  Buffer.from('fd610002000000000000000000000002', 'hex').copy(f, 38);
  f.writeUInt16BE(4000, 54);
  f.writeUInt16BE(9, 56);
  f.writeUInt16BE(78 - 54, 58);
  return f;
}
