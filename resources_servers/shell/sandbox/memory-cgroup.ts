/**
 * A memory cgroup per session, where this machine lets the environment make one: the session's total memory (every
 * process of every command, and the files it writes to its tmpfs work dir) is capped, the kernel's OOM killer stops
 * the command that passes it, and the cgroup's `oom_kill` counter tells which limit it was. RLIMIT_AS alone caps
 * each process, not their sum. Cgroups v1 (a `memory` hierarchy) and v2 (a `memory` controller usable in this
 * process's cgroup) both work; the session cgroups live below this process's own cgroup, so they stay inside any
 * limit the machine already puts on the environment. Where neither is writable, `openMemoryCgroups` returns
 * undefined and the per-process RLIMIT_AS is the memory limit (the status route says which is in force).
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export interface MemoryCgroups {
  version: 1 | 2;
  /** The directory holding this host's session cgroups. */
  root: string;
  /** A new cgroup capped at `bytes`; its `procs` file is where a command's first process writes its pid. */
  create(name: string, bytes: number): SessionCgroup;
  /** Remove every session cgroup and the root. */
  close(): Promise<void>;
}

export interface SessionCgroup {
  procs: string;
  /** OOM kills in this cgroup so far. */
  oomKills(): number;
  remove(): Promise<void>;
}

interface Hierarchy {
  version: 1 | 2;
  dir: string;
}

/** This process's memory cgroup directory, for v1 (a `memory` hierarchy) or v2 (the unified one). */
function ownMemoryCgroup(): Hierarchy | undefined {
  let mountinfo: string;
  let membership: string;
  try {
    mountinfo = readFileSync('/proc/self/mountinfo', 'utf8');
    membership = readFileSync('/proc/self/cgroup', 'utf8');
  } catch {
    return undefined;
  }
  const mounts = mountinfo.split('\n').map((line) => {
    const [left, right] = line.split(' - ');
    const fields = (left ?? '').split(' ');
    const [fsType, , options] = (right ?? '').split(' ');
    return { root: fields[3] ?? '', point: fields[4] ?? '', fsType, options: options ?? '' };
  });
  const lines = membership.split('\n').map((line) => line.split(':'));
  const v1 = lines.find((parts) => parts[1]?.split(',').includes('memory'));
  const v1Mount = mounts.find((mount) => mount.fsType === 'cgroup' && mount.options.split(',').includes('memory'));
  if (v1 && v1Mount) return { version: 1, dir: below(v1Mount.point, v1Mount.root, v1[2] ?? '/') };
  const v2 = lines.find((parts) => parts[0] === '0' && parts[1] === '');
  const v2Mount = mounts.find((mount) => mount.fsType === 'cgroup2');
  if (v2 && v2Mount) return { version: 2, dir: below(v2Mount.point, v2Mount.root, v2[2] ?? '/') };
  return undefined;
}

function below(mountPoint: string, mountRoot: string, cgroupPath: string): string {
  const relative =
    mountRoot !== '/' && cgroupPath.startsWith(mountRoot) ? cgroupPath.slice(mountRoot.length) : cgroupPath;
  return path.join(mountPoint, relative);
}

/**
 * Session cgroups under `<own cgroup>/<prefix><owner>`, or undefined when this machine does not let us make them
 * (or move a process into one). Roots left by dead owners (`isStale(owner)`) are removed first.
 */
export async function openMemoryCgroups(
  prefix: string,
  owner: string,
  isStale: (owner: string) => boolean,
): Promise<MemoryCgroups | undefined> {
  const own = ownMemoryCgroup();
  if (!own) return undefined;
  try {
    for (const entry of readdirSync(own.dir, { withFileTypes: true })) {
      if (entry.isDirectory() && entry.name.startsWith(prefix) && isStale(entry.name.slice(prefix.length)))
        await removeTree(path.join(own.dir, entry.name));
    }
  } catch {
    return undefined;
  }
  const root = path.join(own.dir, `${prefix}${owner}`);
  try {
    mkdirSync(root, { recursive: true });
    // v2: children get the memory controller only if this level hands it down.
    if (own.version === 2) writeFileSync(path.join(root, 'cgroup.subtree_control'), '+memory');
    const probe = makeCgroup(own.version, path.join(root, 'probe'), 64 * 1024 * 1024);
    const moved = spawnSync('/bin/sh', ['-c', 'echo $$ > "$0"', probe.procs], { stdio: 'ignore', timeout: 5000 });
    await probe.remove();
    if (moved.status !== 0) throw new Error('cannot move a process into a memory cgroup');
  } catch {
    await removeTree(root);
    return undefined;
  }
  return {
    version: own.version,
    root,
    create: (session, bytes) => makeCgroup(own.version, path.join(root, session), bytes),
    close: () => removeTree(root),
  };
}

function makeCgroup(version: 1 | 2, dir: string, bytes: number): SessionCgroup {
  mkdirSync(dir);
  if (version === 1) {
    writeFileSync(path.join(dir, 'memory.limit_in_bytes'), String(bytes));
  } else {
    writeFileSync(path.join(dir, 'memory.max'), String(bytes));
    try {
      writeFileSync(path.join(dir, 'memory.swap.max'), '0');
    } catch {
      // No swap accounting here: nothing to cap.
    }
  }
  const counters = path.join(dir, version === 1 ? 'memory.oom_control' : 'memory.events');
  return {
    procs: path.join(dir, 'cgroup.procs'),
    oomKills: () => {
      try {
        return Number(/^oom_kill (\d+)$/m.exec(readFileSync(counters, 'utf8'))?.[1] ?? 0);
      } catch {
        return 0;
      }
    },
    remove: () => removeCgroup(dir),
  };
}

/** A cgroup and its child cgroups (cgroup dirs hold only kernel files, removed with rmdir). */
async function removeTree(dir: string): Promise<void> {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const entry of entries) if (entry.isDirectory()) await removeTree(path.join(dir, entry.name));
  await removeCgroup(dir);
}

/** rmdir a cgroup; the last processes of a killed tree can take a moment to leave it, so retry for up to a second. */
async function removeCgroup(dir: string): Promise<void> {
  for (let attempt = 0; attempt < 50; attempt++) {
    try {
      rmdirSync(dir);
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EBUSY') return;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}
