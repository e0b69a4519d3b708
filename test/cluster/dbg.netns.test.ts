import { it } from 'vitest';
import { ClusterWorld } from './world.js';
it('dbg', async () => {
  const w = await ClusterWorld.create('d');
  await Promise.all(w.nodes.map((n) => w.start(n)));
  await w.api(w.node('n1'), 'POST', '/v1/cluster/extip', { ips: ['10.78.0.240'] });
  await new Promise((r) => setTimeout(r, 5000));
  for (const n of w.nodes)
    console.log(
      n.name,
      w.held(n),
      JSON.stringify(await w.api(n, 'GET', '/v1/cluster/status')).slice(0, 3000),
    );
  console.log(
    w
      .log(w.node('n1'))
      .split('\n')
      .filter((l) => !l.includes('hold set'))
      .slice(-60)
      .join('\n'),
  );
}, 120_000);
