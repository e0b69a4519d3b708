import { describe, expect, it } from 'vitest';
import type { ControlHandlers } from '../api/index.js';
import { ClosedError } from '../errors/index.js';
import { HANDLERS, handlersFor } from './handlers.js';
import type { AgentView } from './view.js';

/** An agent that is still starting: every call that needs it running is refused. */
function starting(): AgentView {
  return {
    assertRunning: () => {
      throw new ClosedError('the agent is starting; try again when it is ready');
    },
  } as unknown as AgentView;
}

describe('the API handlers', () => {
  it('bind one handler per operation to the agent', () => {
    const h = handlersFor(starting());
    expect(Object.keys(h).sort()).toEqual(Object.keys(HANDLERS).sort());
    for (const f of Object.values(h)) expect(typeof f).toBe('function');
  });

  it('answer 503 (ClosedError) to every change and read but status and events until the agent runs', async () => {
    const h = handlersFor(starting());
    const calls: [keyof ControlHandlers, () => unknown][] = [
      ['forwardableAdd', () => h.forwardableAdd('ops', [])],
      ['forwardableDelete', () => h.forwardableDelete('ops', [])],
      ['forwardableSetOwner', () => h.forwardableSetOwner('ops', [])],
      ['forwardableList', () => h.forwardableList()],
      ['extipAdd', () => h.extipAdd([])],
      ['extipDelete', () => h.extipDelete([])],
      ['extipList', () => h.extipList()],
      ['xdpMisses', () => h.xdpMisses(10)],
      ['probe', () => h.probe()],
      ['xdpDetach', () => h.xdpDetach()],
      ['bgpStatus', () => h.bgpStatus()],
      ['clusterStatus', () => h.clusterStatus()],
      ['clusterExtipList', () => h.clusterExtipList()],
      ['clusterExtipAdd', () => h.clusterExtipAdd([], { nodes: [], labels: {} })],
      ['clusterExtipDelete', () => h.clusterExtipDelete([])],
      ['clusterDrain', () => h.clusterDrain('n1')],
      ['clusterUncordon', () => h.clusterUncordon('n1')],
    ];
    expect(calls.map(([name]) => name).sort()).toEqual(
      Object.keys(HANDLERS)
        .filter((n) => n !== 'status' && n !== 'events')
        .sort(),
    );
    for (const [name, call] of calls) {
      await expect(Promise.resolve().then(call), name).rejects.toBeInstanceOf(ClosedError);
    }
  });
});
