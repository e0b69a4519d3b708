// The neighbor subsystem on the agent's shared route feed: it follows route changes from the
// feed's events, and a device dump that changed nothing (the XDP forwarder's and the external
// IP subsystem's periodic checks make one every 30 s) dumps no route — at 100,000 routes such
// a dump cost seconds of CPU, for every listener of the feed. Time is a FakeClock: the redump
// timers run only when it is advanced, so "no dump" is checked after they had their turn.
import { describe, expect, it, onTestFinished } from 'vitest';
import { silentLogger } from '../../src/log/index.js';
import { NeighborSubsystem } from '../../src/neighbor/index.js';
import { DeviceFeed, NetlinkHandle, RouteFeed } from '../../src/netlink/index.js';
import { FakeClock } from '../../src/sched/testing.js';
import { ip, privileged, waitFor } from '../helpers/netns.js';
import { buildLab, config, entry } from './lab.js';

const { skip } = privileged();

describe.skipIf(skip)('neighbor subsystem on a shared route feed', () => {
  it('follows a route change from the feed, and dumps no route after a device dump that changed nothing', async () => {
    const lab = buildLab('shr');
    const log = silentLogger();
    const clock = new FakeClock();
    const nl = NetlinkHandle.open({ netns: lab.r });
    const devices = new DeviceFeed({ nl, log, clock });
    const routes = new RouteFeed({ nl, log, devices, clock });
    onTestFinished(() => {
      routes.stop();
      devices.stop();
      nl.close();
    });
    await devices.start();
    const n = new NeighborSubsystem({
      netns: lab.r,
      netlink: nl,
      devices,
      routes,
      config: config({ refresh: 'managed' }),
      managedSupported: true,
      log,
      clock,
    });
    onTestFinished(() => n.stop());
    await n.start();
    n.setOwner('t', ['10.9.0.5']);
    const step = () => clock.advanceAsync(100);
    await waitFor(
      async () => {
        await step();
        return entry(lab.r, '10.1.0.2', 'ra0') !== undefined;
      },
      { what: 'the entry of the gateway 10.1.0.2' },
    );
    const dumps = routes.dumps;
    for (let i = 0; i < 3; i++) {
      await devices.refresh();
      await clock.advanceAsync(1000); // past routeRedumpDelayMs and the feed's own delay
      await routes.idle();
    }
    expect(routes.dumps).toBe(dumps);
    // the route feed's events reach the subsystem: the entry follows the new gateway
    ip(lab.r, 'route', 'replace', '10.9.0.0/24', 'via', '10.1.0.3');
    await waitFor(
      async () => {
        await step();
        return entry(lab.r, '10.1.0.3', 'ra0') !== undefined;
      },
      { what: 'the entry of the new gateway 10.1.0.3' },
    );
    // the redump timers do run when a link goes down (IPv4 drops its routes silently)
    ip(lab.r, 'link', 'set', 'rb0', 'down');
    await waitFor(
      async () => {
        await step();
        return routes.dumps > dumps;
      },
      { what: 'a route dump after a link went down' },
    );
    expect(routes.dumps).toBe(dumps + 1); // the subsystem's request joined the feed's own
  });
});
