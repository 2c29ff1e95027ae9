/**
 * Whether this machine can sandbox at all, asked before the environment says it is ready. There is no unsandboxed
 * fallback, so a missing piece (no bwrap or util-linux tool, no Python, a base dir the session uids cannot reach, a
 * kernel that refuses unprivileged user namespaces) must fail at start-up with an error naming it, not at the first command.
 * The static checks come first; the self-test then runs one real command in one real sandbox.
 */
import { accessSync, constants, existsSync, realpathSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SANDBOX_PYTHON, systemBinds } from './bwrap-args.js';
import { SandboxUnavailableError } from './errors.js';
import type { Sandbox } from './sandbox.js';
import { rootlessBlockers, runsRootless } from './rootless.js';
import { PACKAGED_LAUNCHER } from './staged-launcher.js';

/** What is missing for the sandboxes to work here, each as a sentence naming the fix; empty when nothing is. */
export function missingPrerequisites(): string[] {
  const missing: string[] = [];
  if (process.platform !== 'linux') return [`bubblewrap sandboxes need Linux (this is ${process.platform})`];
  // As root each session gets a uid of its own (setpriv) and a tmpfs mounted on the host (mount); without root, a
  // holder process keeps the session's namespaces (unshare) and every operation joins them (nsenter): rootless.ts.
  const tools: Array<readonly [string, string]> = runsRootless()
    ? [
        ['bwrap', 'bubblewrap (apt-get install bubblewrap)'],
        ['unshare', 'unshare (util-linux)'],
        ['nsenter', 'nsenter (util-linux)'],
        ['setpriv', 'setpriv (util-linux)'],
        ['prlimit', 'prlimit (util-linux)'],
      ]
    : [
        ['bwrap', 'bubblewrap (apt-get install bubblewrap)'],
        ['setpriv', 'setpriv (util-linux)'],
        ['prlimit', 'prlimit (util-linux)'],
        ['mount', 'mount (util-linux)'],
        ['umount', 'umount (util-linux)'],
      ];
  for (const [tool, why] of tools) {
    if (!findOnPath(tool)) missing.push(`${why} is not installed`);
  }
  if (runsRootless()) missing.push(...rootlessBlockers());
  const python = existsSync(SANDBOX_PYTHON) ? realpathSync(SANDBOX_PYTHON) : undefined;
  if (!python)
    missing.push(`${SANDBOX_PYTHON} is missing (the sandbox's launcher and tasks run on it; apt-get install python3)`);
  else if (!systemBinds().some((dir) => python.startsWith(`${dir}/`))) {
    missing.push(
      `${SANDBOX_PYTHON} resolves to ${python}, outside the system dirs a sandbox sees (${systemBinds().join(', ')}); install the distribution's python3`,
    );
  }
  if (!existsSync(PACKAGED_LAUNCHER))
    missing.push(`the launcher ${PACKAGED_LAUNCHER} is missing from the installation`);
  return missing;
}

/** The first executable file named `tool` on this process's PATH, or undefined. */
export function findOnPath(tool: string): string | undefined {
  for (const dir of (process.env.PATH ?? '/usr/bin:/bin').split(':')) {
    if (dir === '') continue;
    const candidate = path.join(dir, tool);
    try {
      accessSync(candidate, constants.X_OK);
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // not here; keep looking
    }
  }
  return undefined;
}

/**
 * Why the sessions' uids could not get to something bwrap must reach, as one paragraph naming the directory, its
 * mode and the fix; undefined when they can. bwrap runs as each session's own unprivileged uid (not root), so it
 * gets through a directory only if others may search it (o+x): the base dir's parents (it binds the work dirs and
 * the staged launcher below it; the base dir itself the host opens to 0711), bwrap itself (setpriv execs it as
 * that uid), and the system dirs it binds. Asked before anything is created, so a refusal leaves nothing behind.
 */
export function unreachableForSessions(baseDir: string, bwrap: string): string | undefined {
  const base = closedOnTheWay(baseDir);
  if (base) {
    return (
      `the sandbox base dir ${baseDir} is out of reach of the sessions: ${base.dir} has mode ${octal(base.mode)}, so other users may not enter it, ` +
      "and bubblewrap, which runs as each session's own unprivileged uid, must pass through it to bind the session's work dir. " +
      `Set sandbox_base_dir to a directory whose every parent others may enter (the default is under the system temp dir, ${os.tmpdir()}, so check TMPDIR), ` +
      `or let others pass through with chmod o+x ${shellQuoted(base.dir)}.`
    );
  }
  const binary = closedOnTheWay(bwrap, true);
  if (binary) {
    return (
      `bubblewrap at ${bwrap} cannot be run by the sessions' uids: ${binary.dir} has mode ${octal(binary.mode)}, and setpriv starts bwrap as each session's own unprivileged uid. ` +
      `Install bubblewrap system-wide (apt-get install bubblewrap) and put it first on PATH, or let others through with chmod o+x ${shellQuoted(binary.dir)}.`
    );
  }
  for (const dir of systemBinds()) {
    const closed = closedOnTheWay(dir, true);
    if (closed) {
      return (
        `the system dir ${dir}, which every sandbox binds read-only, is out of reach of the sessions' uids: ${closed.dir} has mode ${octal(closed.mode)}. ` +
        `Let others through with chmod o+x ${shellQuoted(closed.dir)}.`
      );
    }
  }
  return undefined;
}

/**
 * The first directory from / down to `target` (its parents, and `target` itself with `includeTarget`) that others
 * may not search, with its mode; undefined when there is none. A component that does not exist yet is no obstacle
 * (the host creates it); symlinks count twice, as the path names them and as they resolve, since the kernel walks both.
 */
function closedOnTheWay(target: string, includeTarget = false): { dir: string; mode: number } | undefined {
  const walks = [path.resolve(target)];
  try {
    walks.push(realpathSync(walks[0]!));
  } catch {
    walks.push(resolvedExisting(walks[0]!));
  }
  for (const walk of walks) {
    const parts = walk.split('/').filter(Boolean);
    const last = includeTarget ? parts.length : parts.length - 1;
    for (let i = 0; i <= last; i++) {
      const dir = `/${parts.slice(0, i).join('/')}`;
      let mode: number;
      try {
        mode = statSync(dir).mode;
      } catch {
        break;
      }
      if ((mode & 0o001) === 0) return { dir, mode };
    }
  }
  return undefined;
}

/** `file` with its longest existing prefix resolved through symlinks. */
function resolvedExisting(file: string): string {
  for (let prefix = path.dirname(file); ; prefix = path.dirname(prefix)) {
    try {
      return path.join(realpathSync(prefix), path.relative(prefix, file));
    } catch {
      if (prefix === path.dirname(prefix)) return file;
    }
  }
}

function octal(mode: number): string {
  return `0${(mode & 0o7777).toString(8).padStart(3, '0')}`;
}

/** A path as it can be pasted into a shell. */
function shellQuoted(file: string): string {
  return /^[\w./@%+=:,-]+$/.test(file) ? file : `'${file.replace(/'/g, `'\\''`)}'`;
}

/** What the self-test needs of a host: one sandbox to try, and a way to shut the host down when the try fails. */
export interface SelfTestHost {
  create(files: Record<string, string>): Promise<Sandbox>;
  close(): Promise<void>;
}

/**
 * One real sandbox, end to end: it must read its work dir, find /usr read-only and see only a loopback interface.
 * On failure the host is closed and the error says what to check; on success the probe sandbox is destroyed.
 */
export async function selfTest(host: SelfTestHost): Promise<void> {
  let sandbox: Sandbox | undefined;
  let hostClosed = false;
  try {
    sandbox = await host.create({ 'probe.txt': 'probe\n' });
    const result = await sandbox.runCommand(
      'cat probe.txt; test -w /usr && echo writable-usr; cat /proc/net/dev | grep -c :',
      { timeoutSecs: 10 },
    );
    const [content, interfaces] = result.stdout.trim().split('\n');
    if (result.exit_code !== 0 || content !== 'probe' || interfaces !== '1') {
      throw new SandboxUnavailableError(
        `the sandbox self-test failed (exit ${result.exit_code}): expected to read the work dir, a read-only /usr and only a loopback interface; ` +
          `got stdout ${JSON.stringify(result.stdout.slice(0, 300))}, stderr ${JSON.stringify(result.stderr.slice(0, 300))}. ` +
          'Check that bubblewrap can create user, PID and network namespaces here (kernel.unprivileged_userns_clone=1, user.max_user_namespaces > 0).',
      );
    }
  } catch (err) {
    hostClosed = true;
    await host.close();
    if (err instanceof SandboxUnavailableError) throw err;
    throw new SandboxUnavailableError(
      `the sandbox self-test could not run a command in bubblewrap: ${err instanceof Error ? err.message : String(err)}`,
    );
  } finally {
    if (sandbox && !hostClosed) await sandbox.destroy();
  }
}
