// Who owns a foreign XDP program: its name (from the kernel), whether a bpf_link holds it,
// and which processes hold a descriptor of it or of that link (from /proc/*/fdinfo).
// Best effort: read-only, bounded, never throws.
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { basename } from 'node:path';
import { BpfProgram, xdpLinksOn } from '../native/index.js';

export interface ForeignProgram {
  progId: number;
  /** The program's name as the kernel knows it ("" when it could not be read). */
  name: string;
  /** The bpf_link that attached it, if it was attached with one. */
  linkId: number | undefined;
  /** Processes holding the program or its link ("xdp-loader[1234]"), possibly empty. */
  holders: string[];
  /** One line for errors and status: "program 42 (xdp_dispatcher), link 7, held by ...". */
  owner: string;
}

/** Processes scanned at most (a host with more is only partly searched). */
const MAX_PROCS = 4096;

/**
 * The name of the program a process runs: its executable's file name ("node", "xdp-loader"),
 * else its main thread's name (Node 24 names that thread "MainThread").
 */
function processName(pid: string): string {
  try {
    return basename(readlinkSync(`/proc/${pid}/exe`));
  } catch {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  }
}

function holdersOf(progId: number, linkId: number | undefined): string[] {
  const wanted = [`prog_id:\t${progId}`];
  if (linkId !== undefined) wanted.push(`link_id:\t${linkId}`);
  const out: string[] = [];
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  } catch {
    return out;
  }
  for (const pid of pids.slice(0, MAX_PROCS)) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fdinfo`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        if (!readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith('anon_inode:bpf-')) continue;
        const info = readFileSync(`/proc/${pid}/fdinfo/${fd}`, 'utf8');
        if (!wanted.some((w) => info.includes(`${w}\n`))) continue;
        out.push(`${processName(pid)}[${pid}]`);
        break;
      } catch {
        /* the process or descriptor went away */
      }
    }
    if (out.length >= 8) break;
  }
  return out;
}

/** Describes program `progId` attached to `ifindex` in `netns` (not ours). */
export function describeForeign(
  progId: number,
  ifindex: number,
  netns: string | undefined,
): ForeignProgram {
  let name = '';
  try {
    const p = BpfProgram.fromId(progId);
    name = p.name;
    p.close();
  } catch {
    /* gone, or no CAP_SYS_ADMIN */
  }
  let linkId: number | undefined;
  try {
    linkId = xdpLinksOn(ifindex, netns === undefined ? {} : { netns }).find(
      (l) => l.progId === progId,
    )?.id;
  } catch {
    /* best effort */
  }
  const holders = holdersOf(progId, linkId);
  const parts = [`program ${progId}${name ? ` (${name})` : ''}`];
  parts.push(linkId === undefined ? 'attached without a link' : `link ${linkId}`);
  if (holders.length > 0) parts.push(`held by ${holders.join(', ')}`);
  else parts.push(linkId === undefined ? 'held by no process' : 'held by no process (pinned link)');
  return { progId, name, linkId, holders, owner: parts.join(', ') };
}
