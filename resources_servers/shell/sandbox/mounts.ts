/**
 * The sessions' work dirs as mounts: each is a tmpfs of its own, so its size is the session's disk quota (and its
 * inode count is bounded with it), owned by the session's uid. Unmounting goes by what /proc/self/mountinfo lists
 * under a dir, which also finds the mounts a killed previous process left behind.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Mount a fresh tmpfs of `diskBytes` at `workDir`, owned by `uid`. */
export async function mountWorkDir(workDir: string, diskBytes: number, uid: number): Promise<void> {
  const inodes = Math.max(1024, Math.floor(diskBytes / 4096));
  await run('mount', [
    '-t',
    'tmpfs',
    '-o',
    `size=${diskBytes},nr_inodes=${inodes},mode=0755,uid=${uid},gid=${uid},nosuid,nodev`,
    'tsgym-shell',
    workDir,
  ]);
}

/** Lazily unmount every mount at or below `dir`, deepest first; a mount that refuses to go is skipped. */
export async function unmountUnder(dir: string): Promise<void> {
  const mounts = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter((point): point is string => point !== undefined && (point === dir || point.startsWith(`${dir}/`)))
    .map((point) => point.replace(/\\(\d{3})/g, (_m, octal: string) => String.fromCharCode(parseInt(octal, 8))))
    .sort((a, b) => b.length - a.length);
  for (const point of mounts) await run('umount', ['-l', point]).catch(() => undefined);
}
