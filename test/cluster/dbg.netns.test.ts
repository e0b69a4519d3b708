import { it } from 'vitest';
import { ClusterWorld, now } from './world.js';
it('dbg', async () => {
  const w = await ClusterWorld.create('d');
  await Promise.all(w.nodes.map((n) => w.start(n)));
  await w.api(w.node('n1'), 'POST', '/v1/cluster/extip', { ips: ['10.78.0.240'] });
  await new Promise((r) => setTimeout(r, 3000));
  const n1 = w.node('n1');
  await w.signal(n1, 'SIGKILL');
  const t0 = now();
  await w.start(n1);
  console.log('restart ready after', now() - t0);
  console.log(
    w
      .log(n1)
      .split('\n')
      .filter((l) => !l.includes('hold set') && !l.includes('libbpf'))
      .slice(-30)
      .join('\n'),
  );
}, 120_000);
