/**
 * The command line every sandbox operation runs: setpriv drops from root to the session's own host uid, then
 * bubblewrap builds the sandbox and starts `launcher.py` as its PID 1. Kept apart from the code that runs it so the
 * whole confinement can be read in one place: which namespaces are new (all of them, network included, so only a
 * private loopback exists), what of the host is visible (read-only: /usr, /etc and the top-level bin and lib
 * dirs), what is fresh (/proc, /dev, a small private /tmp), what is writable (the work dir and /tmp only), and how
 * it is tied to its caller (a cleared environment, a new session, and death with its parent).
 */
import { lstatSync, readlinkSync } from 'node:fs';
import path from 'node:path';
import { installRoot } from '../../../src/config/index.js';

/** The sandbox's PID 1 on the host; bound read-only into every sandbox. */
export const LAUNCHER = path.join(installRoot(), 'resources_servers', 'shell', 'sandbox', 'launcher.py');
/** The interpreter that runs the launcher (and the tasks' Python) inside the sandbox. */
export const SANDBOX_PYTHON = '/usr/bin/python3';
/** The uid a command sees inside its user namespace, whatever host uid its session has. */
const SANDBOX_UID = 1000;
const TMP_BYTES = 16 * 1024 * 1024;

/** What one invocation needs: who it runs as, which work dir it binds, and any extra read-only binds. */
export interface BwrapTarget {
  /** The session's host uid. */
  uid: number;
  /** The session's work dir on the host, bound read-write at /work. */
  workDir: string;
  /** Extra read-only binds: host path → sandbox path. */
  roBinds: Array<[string, string]>;
}

/** setpriv's arguments: become `uid`, then run bwrap around the launcher. */
export function bwrapArgs({ uid, workDir, roBinds }: BwrapTarget): string[] {
  const args = ['--reuid', String(uid), '--regid', String(uid), '--clear-groups', '--', 'bwrap'];
  args.push('--unshare-all', '--unshare-user', '--die-with-parent', '--new-session', '--as-pid-1', '--clearenv', '--disable-userns');
  args.push('--ro-bind', '/usr', '/usr');
  for (const top of ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32']) {
    const stat = lstatSafe(top);
    if (!stat) continue;
    if (stat.isSymbolicLink()) args.push('--symlink', readlinkSync(top), top);
    else if (stat.isDirectory()) args.push('--ro-bind', top, top);
  }
  args.push('--ro-bind', '/etc', '/etc', '--proc', '/proc', '--dev', '/dev', '--size', String(TMP_BYTES), '--tmpfs', '/tmp');
  args.push('--bind', workDir, '/work', '--ro-bind', LAUNCHER, '/.tsgym/launcher.py');
  for (const [from, to] of roBinds) args.push('--ro-bind', from, to);
  // The root bwrap builds is a tmpfs: make it read-only too, so the work dir (and the private /tmp) is all a command can write.
  args.push('--remount-ro', '/');
  args.push('--chdir', '/work', '--uid', String(SANDBOX_UID), '--gid', String(SANDBOX_UID), '--hostname', 'sandbox');
  args.push('--', SANDBOX_PYTHON, '-I', '-S', '/.tsgym/launcher.py');
  return args;
}

function lstatSafe(file: string) {
  try {
    return lstatSync(file);
  } catch {
    return undefined;
  }
}
