// README.md's "On a real node" block, run as written: its commands are read from README.md
// (so the README cannot drift from what works) and run one after the other, each line as a
// shell command, by root in a network namespace whose eth0 is a veth to a second namespace.
// What is substituted, and nothing else:
//   - `make deps build`: skipped (the tree under test is built; rebuilding it would pull
//     dist/ from under other tests);
//   - `make install`: `make install PREFIX=$TMP/usr/local`, and the PATH is
//     root's with $TMP/usr/local/bin for /usr/local/bin (so `node` on it is the machine's
//     own, Node 20 here);
//   - `/etc/fibkeeper` is $TMP/etc/fibkeeper (which does not exist before the block runs);
//   - /run and /var/lib are empty tmpfs mounts in a private mount namespace, so the
//     agent's default socket and state file are its own, not the host's;
//   - the `fibkeeper run` line (the README runs it "in its own terminal") is started in the
//     background, and the next line waits for its control socket;
//   - `events -f` (which follows until stopped) is stopped after 3 s;
//   - on a kernel without the dummy link type (asked of the kernel), the run line gets
//     `--extip-holder-kind=bridge`, as `fibkeeper probe` tells such a node to do.
// Each command must exit 0; the external IP and the neighbor entries it asked for must be
// in the kernel as `ip` shows them.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ip, ipJson, makeNetns, privileged, vethPair } from '../helpers/netns.js';

const { skip } = privileged();
const dir = mkdtempSync(join(tmpdir(), 'fkt-readme-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The commands of README.md's "On a real node" block, comment lines left out. */
function firstDayBlock(readme: string): string[] {
  const at = readme.indexOf('\nOn a real node');
  const m = /```sh\n([\s\S]*?)```/.exec(readme.slice(at));
  if (at < 0 || !m) throw new Error('README.md has no "On a real node" ```sh block');
  return m[1]!.split('\n').filter((l) => l.trim() !== '' && !l.trim().startsWith('#'));
}

function hasDummy(ns: string): boolean {
  const r = spawnSync('ip', ['-n', ns, 'link', 'add', 'fkprobe0', 'type', 'dummy']);
  if (r.status === 0) ip(ns, 'link', 'del', 'fkprobe0');
  return r.status === 0;
}

/** The block as one script, with the substitutions above and a marker after each line. */
function script(lines: string[], dummy: boolean): string {
  const out = ['cd ' + JSON.stringify(resolve('.'))];
  lines.forEach((raw, i) => {
    let line = raw.replaceAll('/etc/fibkeeper', `${dir}/etc/fibkeeper`).replace(/\s+#\s.*$/, '');
    if (/^make deps build\b/.test(line)) line = ':';
    else if (/^make install\b/.test(line)) line = `make -s install PREFIX=${dir}/usr/local`;
    else if (/^fibkeeper run\b/.test(line)) {
      const holder = dummy ? '' : ' --extip-holder-kind=bridge';
      line = `${line}${holder} >${dir}/agent.log 2>&1 & agent=$!
        for i in $(seq 150); do [ -S /run/fibkeeper/fibkeeper.sock ] && break; sleep 0.2; done`;
    } else if (/^fibkeeper events -f\b/.test(line)) line = `timeout -s INT 3 ${line}; [ $? = 124 ]`;
    out.push(line, `echo "@@ ${i} $?"`);
  });
  // The agent still runs at the end, and stops on SIGTERM (exit 0).
  out.push('kill $agent && wait $agent; echo "@@ stop $?"');
  return out.join('\n');
}

describe.skipIf(skip)('README.md "On a real node"', () => {
  it('runs as written on a fresh node', () => {
    const lines = firstDayBlock(readFileSync('README.md', 'utf8'));
    expect(lines.some((l) => l.startsWith('fibkeeper extip add'))).toBe(true);
    const node = makeNetns('readme');
    const peer = makeNetns('readmepeer');
    vethPair(node, 'eth0', peer, 'eth1');
    ip(node, 'addr', 'add', '198.51.100.1/24', 'dev', 'eth0');
    ip(peer, 'addr', 'add', '198.51.100.7/24', 'dev', 'eth1');
    const dummy = hasDummy(node);
    console.log(`kernel has the dummy link type: ${dummy}`);
    const r = spawnSync(
      'ip',
      [
        ...['netns', 'exec', node, 'unshare', '--mount', '--propagation', 'private', 'sh', '-c'],
        `mount -t tmpfs tmpfs /run && mount -t tmpfs tmpfs /var/lib && ${script(lines, dummy)}`,
      ],
      {
        encoding: 'utf8',
        timeout: 120_000,
        env: {
          PATH: `${dir}/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`,
          HOME: dir,
          LANG: 'C.UTF-8',
        },
      },
    );
    const agentLog = () => {
      try {
        return readFileSync(join(dir, 'agent.log'), 'utf8').slice(-2000);
      } catch {
        return '(no agent log)';
      }
    };
    const codes = new Map(
      [...r.stdout.matchAll(/^@@ (\d+) (\d+)$/gm)].map((m) => [Number(m[1]), Number(m[2])]),
    );
    for (const [i, line] of lines.entries()) {
      expect(codes.get(i), `${line}\n${r.stdout}\n${r.stderr}\nagent: ${agentLog()}`).toBe(0);
    }
    // What the block asked for, in the kernel: the external IP on the holder device, the
    // on-link forwardable IP's neighbor entry written by the agent.
    const addrs = ipJson<{ addr_info: { local: string }[] }[]>(node, 'addr', 'show');
    expect(addrs.flatMap((l) => l.addr_info.map((a) => a.local))).toContain('203.0.113.5');
    const neigh = ip(node, 'neigh', 'show', '198.51.100.7', 'dev', 'eth0');
    expect(neigh).toMatch(/198\.51\.100\.7 lladdr [0-9a-f:]{17}/);
    expect(r.stdout, agentLog()).toMatch(/^@@ stop 0$/m);
    // `events -f` printed what the agent did.
    expect(r.stdout).toMatch(/extip\.assigned +203\.0\.113\.5 /);
  }, 150_000);
});
