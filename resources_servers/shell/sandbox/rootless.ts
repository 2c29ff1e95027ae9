/**
 * Sandboxes without root (README, "Without root"). As root, each session gets its own host uid, and RLIMIT_NPROC —
 * which the kernel counts per user namespace and uid — caps the session's processes on that uid; its work dir is a
 * tmpfs mounted on the host. An unprivileged environment has one uid for everything, so each session gets instead
 * a **holder**: a process that sits in a user namespace and mount namespace of the session's own (made with
 * util-linux's `unshare`, as the namespace's root), where it mounted the session's size-limited tmpfs work dir over
 * the session's host dir. Every operation then joins the holder's two namespaces (`nsenter`) before bubblewrap builds
 * its sandbox inside them, so:
 *
 * - the work dir a command sees is the holder's tmpfs: the disk limit holds, and only the session reaches it (the
 *   host sees an empty dir; the server reaches the files through the holder, `/proc/<holder>/root/…`);
 * - every process of the session is charged to the holder's user namespace: since Linux 5.14 RLIMIT_NPROC is counted
 *   per namespace, level by level, so the limit set on each operation (prlimit, as it creates its own nested
 *   namespace) caps all the session's processes together, whatever other sessions or the server run;
 * - the holder has `PR_SET_PDEATHSIG`, so a killed environment takes every session's namespace with it.
 *
 * Everything else — new PID, network, IPC and UTS namespaces per operation, the read-only system, the launcher's
 * per-process rlimits — is the sandbox root builds too.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import os from 'node:os';
import { SandboxError } from './errors.js';
import type { HostProcess } from './processes.js';

/** The one process a holder adds to its session's count (the holder itself), which operations' limits make room for. */
export const HOLDER_PROCESSES = 1;
const READY = 'tsgym-holder-ready';
const HOLDER_START_MS = 60_000;

/** This environment runs without root: sessions are held in namespaces of their own (this file) instead of uids. */
export function runsRootless(): boolean {
  return process.getuid?.() !== 0;
}

/** A kernel setting read from /proc/sys, or undefined where this kernel has no such switch. */
function sysctl(name: string): string | undefined {
  const file = `/proc/sys/${name.replaceAll('.', '/')}`;
  return existsSync(file) ? readFileSync(file, 'utf8').trim() : undefined;
}

/** What keeps this kernel from holding sessions without root, each as a sentence naming the setting and the fix. */
export function rootlessBlockers(): string[] {
  const blockers: string[] = [];
  const [major = 0, minor = 0] = os.release().split('.').map(Number);
  if (major < 5 || (major === 5 && minor < 14)) {
    blockers.push(
      `without root it needs Linux 5.14 or later (this is ${os.release()}): older kernels count the processes limit per uid across all namespaces, so one session's limit could not be kept apart from another's; run it as root, or on a newer kernel`,
    );
  }
  if (sysctl('kernel.unprivileged_userns_clone') === '0') {
    blockers.push(
      'unprivileged user namespaces are switched off (kernel.unprivileged_userns_clone=0); allow them with sudo sysctl -w kernel.unprivileged_userns_clone=1, or run the environment as root',
    );
  }
  if (sysctl('user.max_user_namespaces') === '0') {
    blockers.push(
      'user namespaces are disabled (user.max_user_namespaces=0); allow them with sudo sysctl -w user.max_user_namespaces=15000, or run the environment as root',
    );
  }
  if (sysctl('kernel.apparmor_restrict_unprivileged_userns') === '1') {
    blockers.push(
      'AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns=1, as on Ubuntu 23.10 and later); allow them with sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0, or give bwrap, unshare and nsenter an AppArmor profile with "userns,", or run the environment as root',
    );
  }
  return blockers;
}

/** One session's namespaces, kept alive by the holder process; its tmpfs is the session's work dir. */
export class SessionHolder {
  private constructor(
    private readonly child: ChildProcess,
    readonly pid: number,
    /** The work dir's filesystem as the session's processes have it mounted (`major:minor` in mountinfo). */
    readonly workDevice: string,
  ) {}

  /**
   * Start the holder: a user namespace where it is root (mapped to this process's uid) and a private mount namespace
   * where a tmpfs of `diskBytes` covers `workDir`. Resolves once the mount is there.
   */
  static async start(workDir: string, diskBytes: number): Promise<SessionHolder> {
    const inodes = Math.max(1024, Math.floor(diskBytes / 4096));
    const script = `mount -t tmpfs -o size=${diskBytes},nr_inodes=${inodes},mode=0755,nosuid,nodev tsgym-shell "$0" && echo ${READY} && exec sleep infinity`;
    const child = spawn(
      'setpriv',
      [
        '--pdeathsig',
        'KILL',
        '--',
        'unshare',
        '--user',
        '--map-root-user',
        '--mount',
        '--propagation',
        'private',
        '--',
        '/bin/sh',
        '-c',
        script,
        workDir,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env.PATH ?? '/usr/bin:/bin' }, cwd: '/' },
    );
    await waitReady(child);
    return new SessionHolder(child, child.pid!, deviceOf(viewThrough(child.pid!, workDir)));
  }

  /** Where the server reaches `hostPath` as the session's processes see it (the work dir's tmpfs, chiefly). */
  view(hostPath: string): string {
    return viewThrough(this.pid, hostPath);
  }

  /** The command prefix that runs a program inside the session's namespaces. */
  enter(): string[] {
    return ['nsenter', '--target', String(this.pid), '--user', '--mount', '--preserve-credentials', '--'];
  }

  /**
   * Whether a host process is one of this session's: same uid as this server, and the session's work dir mounted
   * (every operation binds it; nothing else on the host has that filesystem). The holder itself is included.
   */
  owns(proc: HostProcess): boolean {
    if (proc.uid !== process.getuid?.() || proc.pid === process.pid) return false;
    if (proc.pid === this.pid) return true;
    try {
      return readFileSync(`/proc/${proc.pid}/mountinfo`, 'utf8').includes(` ${this.workDevice} `);
    } catch {
      return false;
    }
  }

  /** Kill the holder: the namespaces and the tmpfs go once the session's last process has gone. */
  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    this.child.kill('SIGKILL');
    await exited;
  }
}

/** `hostPath` as process `pid` sees it: through its root, in its mount namespace. */
function viewThrough(pid: number, hostPath: string): string {
  return `/proc/${pid}/root${hostPath}`;
}

/** `major:minor` of the filesystem holding `file`, as /proc/<pid>/mountinfo writes it. */
function deviceOf(file: string): string {
  const dev = statSync(file).dev;
  // Linux's dev_t encoding, as glibc's major()/minor() read it.
  const major = ((dev >> 8) & 0xfff) | (Math.floor(dev / 2 ** 32) & ~0xfff);
  const minor = (dev & 0xff) | ((dev >> 12) & 0xfff00);
  return `${major}:${minor}`;
}

function waitReady(child: ChildProcess): Promise<void> {
  return new Promise((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    const fail = (why: string): void => {
      clearTimeout(timer);
      child.kill('SIGKILL');
      reject(new SandboxError(`could not start the session's namespace holder (unshare): ${why}`));
    };
    const timer = setTimeout(() => fail(`no answer within ${HOLDER_START_MS / 1000} s`), HOLDER_START_MS);
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      if (stderr.length < 4096) stderr += chunk;
    });
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      if (stdout.includes(READY)) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('error', (err) => fail(err.message));
    child.once('exit', (code, signal) => {
      if (!stdout.includes(READY)) fail(`it exited (${signal ?? `code ${code}`}): ${stderr.trim().slice(0, 500)}`);
    });
  });
}
