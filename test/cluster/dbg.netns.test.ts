import { it } from 'vitest';
import { ClusterWorld, now, until } from './world.js';
it('dbg', async () => {
  const w = await ClusterWorld.create('d');
  await Promise.all(w.nodes.map((n) => w.start(n)));
  const ip = '10.78.0.240';
  await w.api(w.node('n1'), 'POST', '/v1/cluster/extip', { ips: [ip] });
  await until(() => w.holdersOf(ip).length === 1, 10000, 'held');
  await new Promise((r) => setTimeout(r, 1500));
  const old = w.node(w.holdersOf(ip)[0]!);
  const t0 = now();
  const wall0 = Date.now();
  const exited = new Promise<number>((r) => old.proc!.once('exit', () => r(now() - t0)));
  await w.signal(old, (process.env.SIG ?? 'SIGKILL') as NodeJS.Signals);
  console.log('exit seen after', await exited);
  await until(() => w.nodes.some((n) => n !== old && w.held(n).includes(ip)), 5000, 'moved');
  console.log('moved after', now() - t0);
  await new Promise((r) => setTimeout(r, 500));
  for (const n of w.nodes) {
    for (const l of w.logLines(n)) {
      if ((l.time as number) < wall0 - 50) continue;
      if (String(l.msg).includes('libbpf')) continue;
      console.log(
        n.name,
        (l.time as number) - wall0,
        l.msg,
        l.at ? (l.at as number) - t0 : '',
        JSON.stringify(l.ips ?? l.reason ?? ''),
      );
    }
  }
}, 120_000);
