// What the client sees on the segment, for bench/cluster: its own echo replies from the IP
// (`ping -i 0.01`, with the replying MAC), and ARP: every 10 ms it asks who has the IP (a
// broadcast request) and records every reply with its MAC. An ARP round answered by two MACs
// is a dual answer at the ARP level; the IP level is src/lab/answers.ts (AnswerProbe).
import { spawn } from 'node:child_process';
import { buildArp, decodeFrame } from '../../dist/extip/index.js';
import { ETH_P_ALL, PacketSocket } from '../../dist/native/index.js';
import { monotonicClock } from '../../dist/sched/index.js';

const now = () => monotonicClock.now();

export class ClientWire {
  replies = []; // { at, mac } echo replies from the IP to the client
  arp = []; // { at, mac } ARP replies for the IP (to the client's requests)
  asks = []; // monotonic ms of each ARP request sent

  constructor({ lab, ip, ifindex, reaper }) {
    this.ip = ip;
    const c = lab.client;
    this.sock = PacketSocket.open({ ifindex, netns: c.netns, protocol: ETH_P_ALL });
    this.sock.receive({
      onFrame: (f, info) => {
        if (info.pktType === 'outgoing') return;
        const at = now();
        const mac = [...f.subarray(6, 12)].map((b) => b.toString(16).padStart(2, '0')).join(':');
        if (f.readUInt16BE(12) === 0x0806) {
          const d = decodeFrame(Buffer.from(f));
          // Answers to the client's requests (not gratuitous ARP, which answers no one).
          if (d.kind === 'arp' && d.senderIp === ip && d.op === 2 && !d.gratuitous) {
            this.arp.push({ at, mac: d.senderMac });
          }
          return;
        }
        if (f.readUInt16BE(12) !== 0x0800 || f[23] !== 1 || f[34] !== 0) return;
        if (`${f[26]}.${f[27]}.${f[28]}.${f[29]}` === ip) this.replies.push({ at, mac });
      },
      onError() {},
    });
    const request = buildArp({
      op: 1,
      ethDst: 'ff:ff:ff:ff:ff:ff',
      senderMac: c.mac,
      senderIp: c.v4,
      targetMac: '00:00:00:00:00:00',
      targetIp: ip,
    });
    this.asker = setInterval(() => {
      this.asks.push(now());
      try {
        this.sock.send(request);
      } catch {
        // a full queue: one request fewer
      }
    }, 10);
    this.pinger = spawn('ip', ['netns', 'exec', c.netns, 'ping', '-q', '-i', '0.01', ip], {
      stdio: 'ignore',
    });
    reaper.child(this.pinger);
  }

  /**
   * The MAC that alone answered the client's pings for the last `forMs` (at least a reply
   * every 30 ms, the last within 50 ms), if one did: the settled holder.
   */
  answering(forMs = 300) {
    const t = now();
    const last = this.replies.at(-1);
    if (!last || t - last.at > 50) return undefined;
    const recent = [];
    for (let i = this.replies.length - 1; i >= 0 && this.replies[i].at > t - forMs; i--) {
      recent.push(this.replies[i]);
    }
    if (recent.length < forMs / 30 || recent.some((r) => r.mac !== last.mac)) return undefined;
    return last.mac;
  }

  /** The first echo reply after `t0` from a MAC other than `oldMac`. */
  firstReplyFromOther(t0, oldMac) {
    return this.replies.find((r) => r.at > t0 && r.mac !== oldMac);
  }

  /**
   * ARP rounds (10 ms between two requests) in [from, to) answered by two or more MACs,
   * merged into intervals: [{ from, to, macs }].
   */
  arpDuals(from, to) {
    const out = [];
    const asks = this.asks.filter((t) => t >= from && t < to);
    let j = 0;
    const replies = this.arp.filter((r) => r.at >= from && r.at < to + 20);
    for (let i = 0; i < asks.length; i++) {
      const start = asks[i];
      const end = asks[i + 1] ?? start + 10;
      const macs = new Set();
      while (j < replies.length && replies[j].at < start) j++;
      for (let k = j; k < replies.length && replies[k].at < end; k++) macs.add(replies[k].mac);
      if (macs.size < 2) continue;
      const last = out.at(-1);
      if (last && start - last.to <= 20) {
        last.to = end;
        for (const m of macs) if (!last.macs.includes(m)) last.macs.push(m);
      } else out.push({ from: start, to: end, macs: [...macs] });
    }
    return out;
  }

  close() {
    clearInterval(this.asker);
    if (this.pinger.exitCode === null) this.pinger.kill('SIGKILL');
    this.sock.close();
  }
}
