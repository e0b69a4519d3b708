// sdNotify sends what systemd-notify(1) sends, to a path or an abstract socket.
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sdNotify } from '../../src/native/index.js';
import { notifyReceiver } from '../helpers/notify.js';

const dir = mkdtempSync(join(tmpdir(), 'fkt-notify-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('sdNotify', () => {
  it('sends the datagram systemd-notify sends, to a path', async () => {
    const r = await notifyReceiver(join(dir, 'notify'));
    const ref = spawnSync('systemd-notify', ['--ready', '--status=fibkeeper: ready'], {
      env: { ...process.env, NOTIFY_SOCKET: r.socket },
      encoding: 'utf8',
    });
    expect(ref.status, ref.stderr).toBe(0);
    const theirs = await r.next((m) => m.startsWith('READY=1'));
    sdNotify(r.socket, { READY: 1, STATUS: 'fibkeeper: ready' });
    const ours = await r.next((m) => m.startsWith('READY=1'), {
      from: r.messages.indexOf(theirs) + 1,
    });
    expect(ours).toBe(theirs);
    expect(ours).toBe('READY=1\nSTATUS=fibkeeper: ready');
  });

  it('reaches an abstract socket (@name)', async () => {
    const r = await notifyReceiver(`@fkt-notify-${randomBytes(4).toString('hex')}`);
    sdNotify(r.socket, { STOPPING: 1 });
    expect(await r.next((m) => m === 'STOPPING=1')).toBe('STOPPING=1');
  });

  it('fails with the errno when nobody listens, and refuses bad input', () => {
    expect(() => sdNotify(join(dir, 'nobody'), { READY: 1 })).toThrow(
      expect.objectContaining({ code: 'ENOENT', syscall: 'sendto' }),
    );
    expect(() => sdNotify('relative/path', { READY: 1 })).toThrow(/absolute path nor @name/);
    expect(() => sdNotify(join(dir, 'x'), { STATUS: 'two\nlines' })).toThrow(/one line/);
  });
});
