// UDP flows through a router, for tests that move flows between nodes (active-active).
//
//   node udp-flows.mjs serve PORT NAME
//       Echo server: answers every datagram with "<datagram>|NAME" (bound to every address).
//   node udp-flows.mjs flows DST PORT COUNT INTERVAL_MS
//       COUNT flows (one socket each: its own source port), each sending "<flow>:<seq>" every
//       INTERVAL_MS. Prints "ready" once every flow has had an answer. On stdin, "mark NAME"
//       records the next sequence number under NAME and prints "marked NAME" once every flow
//       has had an answer to a datagram sent from then on (each flow's path as the router
//       takes it now is known); "stop" stops sending,
//       waits 500 ms for late answers, prints one JSON line and exits:
//       { marks: {NAME: seq}, flows: [[node or null for each seq]] }.
import dgram from 'node:dgram';

const [mode, ...args] = process.argv.slice(2);

if (mode === 'serve') {
  const [port, name] = args;
  const s = dgram.createSocket('udp4');
  s.on('message', (msg, rinfo) => s.send(`${msg}|${name}`, rinfo.port, rinfo.address));
  s.bind(Number(port), () => process.stdout.write('listening\n'));
} else if (mode === 'flows') {
  const [dst, port, count, interval] = args;
  const n = Number(count);
  const answers = Array.from({ length: n }, () => []);
  const socks = answers.map((got, f) => {
    const s = dgram.createSocket('udp4');
    s.on('message', (msg) => {
      const [head, node] = String(msg).split('|');
      const seq = Number(head.split(':')[1]);
      if (got[seq] === null) got[seq] = node;
      settle();
      if (!ready && answers.every((a) => a.some((x) => x))) {
        ready = true;
        process.stdout.write('ready\n');
      }
    });
    s.bind(0);
    s.ff = f;
    return s;
  });
  let ready = false;
  /** Marks whose flows have not all been answered since: name → first sequence number. */
  const pending = new Map();
  const settle = () => {
    for (const [name, from] of pending) {
      if (!answers.every((a) => a.slice(from).some((x) => x))) continue;
      pending.delete(name);
      process.stdout.write(`marked ${name}\n`);
    }
  };
  let seq = 0;
  const marks = {};
  const timer = setInterval(() => {
    for (const s of socks) {
      answers[s.ff][seq] = null;
      s.send(`${s.ff}:${seq}`, Number(port), dst);
    }
    seq++;
  }, Number(interval));
  let buf = '';
  process.stdin.setEncoding('utf8');
  process.stdin.on('data', (d) => {
    buf += d;
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      const [cmd, arg] = line.split(' ');
      if (cmd === 'mark') {
        marks[arg] = seq;
        pending.set(arg, seq);
      } else if (cmd === 'stop') {
        clearInterval(timer);
        setTimeout(() => {
          process.stdout.write(JSON.stringify({ marks, flows: answers }) + '\n');
          for (const s of socks) s.close();
          process.exit(0);
        }, 500);
      }
    }
  });
} else {
  process.stderr.write('usage: udp-flows.mjs serve PORT NAME | flows DST PORT COUNT INTERVAL_MS\n');
  process.exit(2);
}
