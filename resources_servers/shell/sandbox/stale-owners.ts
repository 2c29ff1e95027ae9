/**
 * Owner dirs, and reaping the ones a dead process left. Every host keeps its sessions under
 * `<baseDir>/owner-<pid>-<start time>-<n>/` (and its memory cgroups under a root named the same way), so a later
 * start-up can tell which owners no longer run, even after a SIGKILL that gave them no chance to clean up: it kills
 * their stragglers, unmounts their work dirs and deletes them. The start time keeps a recycled pid from passing for
 * the owner; `<n>` tells apart the hosts one process opens.
 */
import { chmodSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { unmountUnder } from './mounts.js';
import { killProcesses } from './processes.js';

const OWNER_PREFIX = 'owner-';

let hostsOpened = 0;

/** The owner name of a host this process is opening now. */
export function newOwnerName(): string {
  return `${OWNER_PREFIX}${process.pid}-${processStartTime(process.pid)}-${++hostsOpened}`;
}

/** Whether a memory cgroup root named after `owner` is a dead owner's (one whose name does not parse counts as dead). */
export function cgroupOwnerGone(owner: string): boolean {
  const [pid, startTime] = owner.slice(OWNER_PREFIX.length).split('-').map(Number);
  return pid === undefined || startTime === undefined || !ownerAlive(pid, startTime);
}

/**
 * Create `baseDir` if needed, then unmount and delete the owner dirs of processes that no longer run (a SIGKILLed
 * environment leaves its mounts). Returns how many were removed.
 */
export async function removeStaleOwners(baseDir: string): Promise<number> {
  // bwrap runs as each session's uid and must traverse down to the work dir it binds.
  makeTraversable(baseDir);
  let removed = 0;
  for (const name of readdirSync(baseDir)) {
    if (!name.startsWith(OWNER_PREFIX)) continue;
    const [pid, startTime] = name.slice(OWNER_PREFIX.length).split('-').map(Number);
    const dir = path.join(baseDir, name);
    if (pid === undefined || startTime === undefined || ownerAlive(pid, startTime)) continue;
    // A sandbox of the dead owner that escaped --die-with-parent (killed while bwrap was still setting up) runs as
    // the uid its work dir is named after, or still names that dir in its bwrap arguments.
    const uids = new Set(
      readdirSync(dir)
        .filter((entry) => /^s\d+$/.test(entry))
        .map((entry) => Number(entry.slice(1))),
    );
    killProcesses((proc) => uids.has(proc.uid) || proc.cmdline.includes(`${dir}/`));
    await unmountUnder(dir);
    rmSync(dir, { recursive: true, force: true });
    removed++;
  }
  return removed;
}

function ownerAlive(pid: number, startTime: number): boolean {
  try {
    return processStartTime(pid) === String(startTime);
  } catch {
    return false;
  }
}

/** Field 22 of /proc/<pid>/stat: when the process started, in clock ticks since boot. */
function processStartTime(pid: number): string {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]!;
}

/**
 * Create `dir` and whatever of its parents is missing (the default base dir, `<tmp>/tsgym-shell/<instance>`, and the
 * owner dir below it), each traversable, not listable (0711): the sessions' uids pass through every one of them. chmod
 * too, as mkdir's mode passes through the umask (077 would lock the sessions out). A parent that already existed is
 * the user's and keeps its mode (the start-up check has named it if it is closed).
 */
export function makeTraversable(dir: string): void {
  const created = mkdirSync(dir, { recursive: true });
  if (created === undefined) {
    chmodSync(dir, 0o711);
    return;
  }
  for (let current = dir; ; current = path.dirname(current)) {
    chmodSync(current, 0o711);
    if (current === created) break;
  }
}
