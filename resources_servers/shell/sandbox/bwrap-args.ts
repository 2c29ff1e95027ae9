/**
 * The command line every sandbox operation runs: prlimit caps the processes of the session's uid, setpriv drops
 * from root to that uid, then bubblewrap builds the sandbox and starts `launcher.py` as its PID 1. Kept apart from
 * the code that runs it so the whole confinement can be read in one place: which namespaces are new (all of them,
 * network included, so only a private loopback exists), what of the host is visible (read-only: /usr, /etc and the
 * top-level bin and lib dirs), what is fresh (/proc, /dev, a small private /tmp), what is writable (the work dir and
 * /tmp only), and how it is tied to its caller (a cleared environment, a new session, and death with its parent).
 *
 * Why the process cap is set before bwrap rather than by the launcher: the kernel counts RLIMIT_NPROC per user
 * namespace and uid, and each invocation has a user namespace of its own. A limit set inside would cap each command
 * apart (two fork bombs in one session would hold twice the limit) and not count bwrap's monitor, which stays
 * outside. Set on bwrap, which creates the namespace, it becomes that namespace's ceiling on the host uid's count, so
 * every process of the session — each command's tree, launcher and monitor — counts against one limit.
 */
import { lstatSync, readlinkSync } from 'node:fs';

/** The interpreter that runs the launcher (and the tasks' Python) inside the sandbox: a system path, visible there. */
export const SANDBOX_PYTHON = '/usr/bin/python3';
/** The uid a command sees inside its user namespace, whatever host uid its session has. */
const SANDBOX_UID = 1000;
const TMP_BYTES = 16 * 1024 * 1024;
const TOP_LEVEL_DIRS = ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];

/** The host files every invocation starts, fixed when the host opens. */
export interface SandboxPrograms {
  /** bubblewrap's absolute path: setpriv execs it as the session's uid, so that uid never searches the server's PATH. */
  bwrap: string;
  /** The launcher's staged copy (staged-launcher.ts), bound read-only at /.tsgym/launcher.py. */
  launcher: string;
}

/** What one invocation needs: who it runs as, which work dir it binds, and any extra read-only binds. */
export interface BwrapTarget {
  /** The session's host uid. */
  uid: number;
  /** RLIMIT_NPROC for that uid: every process of the session at once, sandbox machinery included. */
  processes: number;
  /** The session's work dir on the host, bound read-write at `workMount`. */
  workDir: string;
  /** Where the work dir appears inside: /work, or a Harbor task's WORKDIR (checked by the caller: see harbor/). */
  workMount: string;
  /** Extra read-only binds: host path → sandbox path. */
  roBinds: Array<[string, string]>;
  /** Extra read-write binds (a Harbor verifier's /logs/verifier): host path → sandbox path. */
  rwBinds?: Array<[string, string]>;
  programs: SandboxPrograms;
  /**
   * Without root (rootless.ts): the command that enters the session holder's namespaces, in place of setpriv. bwrap
   * then runs as the root of the session's user namespace, and the work dir it binds is the holder's tmpfs.
   */
  enterSession?: string[];
}

/**
 * The host's system dirs every sandbox binds read-only at the same path (top-level ones that are symlinks, as
 * on merged-/usr systems, are recreated as symlinks instead). The start-up checks look at the same list.
 */
export function systemBinds(): string[] {
  return ['/usr', ...TOP_LEVEL_DIRS.filter((top) => lstatSafe(top)?.isDirectory() === true), '/etc'];
}

/**
 * The whole command line, from prlimit: cap the session's processes, become the session (its uid as root; its
 * namespaces without root), then run bwrap around the launcher.
 */
export function sandboxCommand(target: BwrapTarget): string[] {
  const limit = `--nproc=${target.processes}:${target.processes}`;
  const bwrap = [target.programs.bwrap, ...bwrapArgs(target)];
  if (target.enterSession) return ['prlimit', limit, '--', ...target.enterSession, ...bwrap];
  const uid = String(target.uid);
  return ['prlimit', limit, '--', 'setpriv', '--reuid', uid, '--regid', uid, '--clear-groups', '--', ...bwrap];
}

/** bubblewrap's own arguments: the namespaces, what of the host is visible, the work dir, and the launcher. */
function bwrapArgs(target: BwrapTarget): string[] {
  const { workDir, workMount, roBinds, programs } = target;
  const args = [
    '--unshare-all',
    '--unshare-user',
    '--die-with-parent',
    '--new-session',
    '--as-pid-1',
    '--clearenv',
    '--disable-userns',
  ];
  for (const dir of systemBinds()) args.push('--ro-bind', dir, dir);
  for (const top of TOP_LEVEL_DIRS) {
    if (lstatSafe(top)?.isSymbolicLink()) args.push('--symlink', readlinkSync(top), top);
  }
  args.push('--proc', '/proc', '--dev', '/dev', '--size', String(TMP_BYTES), '--tmpfs', '/tmp');
  args.push('--bind', workDir, workMount, '--ro-bind', programs.launcher, '/.tsgym/launcher.py');
  for (const [from, to] of roBinds) args.push('--ro-bind', from, to);
  for (const [from, to] of target.rwBinds ?? []) args.push('--bind', from, to);
  // The root bwrap builds is a tmpfs: make it read-only too, so the work dir (and the private /tmp) is all a command can write.
  args.push('--remount-ro', '/');
  args.push('--chdir', workMount, '--uid', String(SANDBOX_UID), '--gid', String(SANDBOX_UID), '--hostname', 'sandbox');
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
