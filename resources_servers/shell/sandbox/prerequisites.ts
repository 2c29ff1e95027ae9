/**
 * Whether this machine can sandbox at all, asked before the environment says it is ready. There is no unsandboxed
 * fallback, so a missing piece (not root, no bwrap/setpriv/mount, no Python, a base dir the session uids cannot
 * reach, namespaces the kernel refuses) must fail at start-up with an error naming it, not at the first command.
 * The static checks come first; the self-test then runs one real command in one real sandbox.
 */
import { existsSync, lstatSync } from 'node:fs';
import path from 'node:path';
import { LAUNCHER, SANDBOX_PYTHON } from './bwrap-args.js';
import { SandboxUnavailableError } from './errors.js';
import type { Sandbox } from './sandbox.js';

/** What is missing for the sandboxes to work here, each as a sentence naming the fix; empty when nothing is. */
export async function missingPrerequisites(): Promise<string[]> {
  const missing: string[] = [];
  if (process.platform !== 'linux') return [`bubblewrap sandboxes need Linux (this is ${process.platform})`];
  if (process.getuid?.() !== 0) {
    missing.push('it must run as root: each session gets its own unprivileged uid (setpriv) and a size-limited tmpfs work dir (mount)');
  }
  for (const [tool, why] of [
    ['bwrap', 'bubblewrap (apt-get install bubblewrap)'],
    ['setpriv', 'setpriv (util-linux)'],
    ['mount', 'mount (util-linux)'],
    ['umount', 'umount (util-linux)'],
  ] as const) {
    if (!(await onPath(tool))) missing.push(`${why} is not installed`);
  }
  if (!existsSync(SANDBOX_PYTHON)) missing.push(`${SANDBOX_PYTHON} is missing (the sandbox's launcher and tasks run on it; apt-get install python3)`);
  if (!existsSync(LAUNCHER)) missing.push(`the launcher ${LAUNCHER} is missing from the installation`);
  return missing;
}

/**
 * The nearest existing ancestor of `dir` that others cannot search (no o+x), or undefined. bwrap runs as each
 * session's uid, so every directory above the work dirs must let that uid through.
 */
export function firstClosedAncestor(dir: string): string | undefined {
  for (let current = path.dirname(dir); ; current = path.dirname(current)) {
    let mode: number | undefined;
    try {
      mode = lstatSync(current).mode;
    } catch {
      mode = undefined;
    }
    if (mode !== undefined && (mode & 0o001) === 0) return current;
    if (current === path.dirname(current)) return undefined;
  }
}

async function onPath(tool: string): Promise<boolean> {
  return (process.env.PATH ?? '/usr/bin:/bin').split(':').some((dir) => dir !== '' && existsSync(path.join(dir, tool)));
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
    const result = await sandbox.runCommand('cat probe.txt; test -w /usr && echo writable-usr; cat /proc/net/dev | grep -c :', { timeoutSecs: 10 });
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
    throw new SandboxUnavailableError(`the sandbox self-test could not run a command in bubblewrap: ${err instanceof Error ? err.message : String(err)}`);
  } finally {
    if (sandbox && !hostClosed) await sandbox.destroy();
  }
}
