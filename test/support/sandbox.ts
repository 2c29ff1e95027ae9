/**
 * Helpers the shell environment's tests share: whether this machine can run the sandboxes at all (bwrap, and root or
 * what the environment needs without it),
 * the processes that run under a uid or mention a path, mount points under a dir, and the live-sandbox gauge.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { missingPrerequisites } from '../../resources_servers/shell/sandbox/prerequisites.js';
import { hostProcesses } from '../../resources_servers/shell/sandbox/processes.js';
import { request } from '../../src/http/client.js';

/**
 * Why the sandbox tests cannot run here, or undefined when they can: as root with bwrap, or as any other user where
 * the environment itself would start (user namespaces allowed, the util-linux tools there: rootless.ts).
 */
export function sandboxTestsUnavailable(): string | undefined {
  if (process.platform !== 'linux') return 'bubblewrap sandboxes need Linux';
  try {
    execFileSync('bwrap', ['--version'], { stdio: 'ignore' });
  } catch {
    if (process.env.TSGYM_TEST_REQUIRE_SANDBOX === '1') throw new Error('bubblewrap (bwrap) is not installed');
    return 'bubblewrap (bwrap) is not installed';
  }
  if (process.getuid?.() === 0) return undefined;
  const missing = missingPrerequisites();
  if (missing.length === 0) return undefined;
  const why = `this user cannot run the sandboxes: ${missing.join('; ')}`;
  // test/run.sh's unprivileged pass exists to run these tests: there a skip would be a pass that tested nothing.
  if (process.env.TSGYM_TEST_REQUIRE_SANDBOX === '1') throw new Error(why);
  return why;
}

/** Pids of the processes running as host uid `uid`. */
export function pidsOfUid(uid: number): number[] {
  return hostProcesses()
    .filter((proc) => proc.uid === uid)
    .map((proc) => proc.pid);
}

/** Pids of the processes whose command line mentions `text` (a sandbox's bwrap names its work dir). */
export function pidsMentioning(text: string): number[] {
  return hostProcesses()
    .filter((proc) => proc.cmdline.includes(text) && proc.pid !== process.pid)
    .map((proc) => proc.pid);
}

/** Mount points at or under `dir`. */
export function mountsUnder(dir: string): string[] {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[4] ?? '')
    .filter((point) => point === dir || point.startsWith(`${dir}/`));
}

/** Whether a process runs exactly `command` (its argv joined by spaces). */
export function processRunning(command: string): boolean {
  return hostProcesses().some((proc) => proc.cmdline.trim() === command);
}

/** `gym_shell_sandboxes`, as a shell environment's `GET /metrics` (Prometheus text, a gauge) reports it. */
export async function sandboxesGauge(url: string): Promise<number> {
  const text = (await request(`${url}/metrics`, { timeoutMs: 5000 })).text();
  assert.match(text, /^# TYPE gym_shell_sandboxes gauge$/m);
  return Number(/^gym_shell_sandboxes (\S+)$/m.exec(text)?.[1]);
}

/**
 * A PATH directory (others may enter it) holding the tools the shell environment needs without root, but not
 * `missing`: how a test provokes the start-up refusal that names a missing tool, as an unprivileged user.
 */
export function pathWithout(missing: string, dir: string): string {
  chmodSync(dir, 0o755);
  for (const tool of ['bwrap', 'unshare', 'nsenter', 'setpriv', 'prlimit', 'sh']) {
    if (tool === missing) continue;
    const found = ['/usr/bin', '/bin', '/usr/sbin', '/sbin']
      .map((bin) => `${bin}/${tool}`)
      .find((file) => existsSync(file));
    if (found) symlinkSync(found, path.join(dir, tool));
  }
  return dir;
}
