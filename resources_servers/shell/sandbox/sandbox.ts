/**
 * Sandboxes for the shell environment, built on bubblewrap. A sandbox belongs to one session: its own unprivileged
 * host uid (so RLIMIT_NPROC, which the kernel counts per uid, is a per-session process cap), and its own work dir — a
 * size-limited tmpfs mounted on the host (the per-session disk quota), bound read-write at /work. Every operation
 * (a command, a file read/write/listing, the hidden check) is one bwrap invocation: new mount, PID, IPC, UTS, network,
 * user and cgroup namespaces (`--unshare-all`, no `--share-net`: only a private loopback), a read-only system,
 * fresh /proc and /dev, a private /tmp, a cleared environment, `--new-session`, `--die-with-parent`, and
 * `launcher.py` as PID 1, which sets the per-process rlimits, reaps the whole tree, kills whatever is left when the
 * command's shell exits, and reports exit status and CPU on fd 3. So no process ever outlives its command, the check
 * at verify runs in a fresh process tree nothing of the agent's can reach, and killing the bwrap process (wall time,
 * output cap, shutdown, or the environment dying) takes the whole tree with it. There is no unsandboxed path: when
 * bwrap, the uid switch or the mount cannot work, `openSandboxHost` refuses with an error naming what is missing.
 */
import { execFile, spawn } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, rmSync, statfsSync, writeFileSync, chownSync, chmodSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { installRoot } from '../../../src/config/index.js';
import { openMemoryCgroups, type MemoryCgroups, type SessionCgroup } from './memory-cgroup.js';
import { GymError } from '../../../src/errors.js';

const run = promisify(execFile);

export interface SandboxLimits {
  /** Per command: wall-clock seconds before the tree is killed (`timeout_secs` may ask for less, never more). */
  commandWallSecs: number;
  /** Per process of a command: CPU seconds (RLIMIT_CPU; SIGXCPU, then SIGKILL one second later). */
  commandCpuSecs: number;
  /** Per process of a command: address space bytes (RLIMIT_AS). */
  memoryBytes: number;
  /** Per session: processes alive at once, across all its commands (RLIMIT_NPROC on the session's own uid). */
  processes: number;
  /** Per command: stdout + stderr bytes; past it the command is killed and the streams are truncated. */
  outputBytes: number;
  /** Per process: largest file it may write (RLIMIT_FSIZE). */
  fileBytes: number;
  /** Per session: bytes the work dir may hold (the size of its tmpfs; also bounds inodes). */
  diskBytes: number;
  /** Per session: total seconds of command wall time. */
  sessionWallSecs: number;
  /** Per session: total CPU seconds of every command's tree. */
  sessionCpuSecs: number;
  /** Per session: total stdout + stderr bytes produced. */
  sessionOutputBytes: number;
  /** Per session: memory of all its processes together, tmpfs files included (a memory cgroup, where available). */
  sessionMemoryBytes: number;
}

export const DEFAULT_LIMITS: SandboxLimits = {
  commandWallSecs: 30,
  commandCpuSecs: 10,
  memoryBytes: 512 * 1024 * 1024,
  processes: 64,
  outputBytes: 64 * 1024,
  fileBytes: 16 * 1024 * 1024,
  diskBytes: 64 * 1024 * 1024,
  sessionWallSecs: 300,
  sessionCpuSecs: 120,
  sessionOutputBytes: 4 * 1024 * 1024,
  sessionMemoryBytes: 1024 * 1024 * 1024,
};

/** The limit a command ran into, as named in `limit_exceeded`. */
export type LimitName =
  | 'wall_time'
  | 'cpu_time'
  | 'memory'
  | 'processes'
  | 'output'
  | 'file_size'
  | 'disk'
  | 'session_wall_time'
  | 'session_cpu_time'
  | 'session_output'
  | 'session_memory';

export interface CommandResult {
  exit_code: number;
  stdout: string;
  stderr: string;
  stdout_truncated: boolean;
  stderr_truncated: boolean;
  duration_ms: number;
  /** Set when the command was killed by (or failed at) a limit; `null` otherwise. */
  limit_exceeded: LimitName | null;
  cpu_ms: number;
}

export interface SandboxUsage {
  commandsRun: number;
  wallMs: number;
  cpuMs: number;
  outputBytes: number;
}

export class SandboxUnavailableError extends GymError {
  constructor(message: string) {
    super('GYM_SANDBOX_UNAVAILABLE', 'config', message);
  }
}

/** A failure of the sandbox machinery itself (not of the command): infrastructure, never a reward of 0. */
export class SandboxError extends GymError {
  constructor(message: string) {
    super('GYM_SANDBOX_FAILED', 'retryable', message);
  }
}

const LAUNCHER = path.join(installRoot(), 'resources_servers', 'shell', 'sandbox', 'launcher.py');
const SANDBOX_PYTHON = '/usr/bin/python3';
const SANDBOX_UID = 1000;
const COMMAND_ENV = { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: '/work', LANG: 'C.UTF-8', TERM: 'dumb', TMPDIR: '/tmp', USER: 'sandbox' };
const TMP_BYTES = 16 * 1024 * 1024;
/** Where setpriv, bwrap and the mount tools are looked up (the environment's own PATH is checked at start-up). */
const SYSTEM_PATH = process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin';
/** Host uids handed to sessions: a high range no system account uses, picked at random per sandbox. */
const UID_RANGE = { min: 1_100_000_000, max: 2_100_000_000 };
const OWNER_PREFIX = 'owner-';
const CGROUP_PREFIX = 'tsgym-shell-';
/** How shells, coreutils and Python report a fork refused by RLIMIT_NPROC. */
const FORK_FAILED = /Cannot fork|can't fork|fork: (retry: )?Resource temporarily unavailable|BlockingIOError: \[Errno 11\]/i;

export interface SandboxHostOptions {
  /** This environment's own directory; every session's work dir lives under `<baseDir>/owner-<pid>/`. */
  baseDir: string;
  limits?: Partial<SandboxLimits>;
}

/** Open the sandbox host: check every prerequisite, clean what a dead previous process left, prove one sandbox works. */
export async function openSandboxHost(options: SandboxHostOptions): Promise<SandboxHost> {
  const missing = await missingPrerequisites();
  if (missing.length > 0) {
    throw new SandboxUnavailableError(
      `the shell environment cannot create its sandboxes on this machine, and it never runs commands unsandboxed: ${missing.join('; ')}.`,
    );
  }
  const limits = { ...DEFAULT_LIMITS, ...options.limits };
  const closed = firstClosedAncestor(path.resolve(options.baseDir));
  if (closed) {
    throw new SandboxUnavailableError(
      `the sandbox base dir ${options.baseDir} is below ${closed}, which other users cannot enter; bwrap runs as each session's own uid and must reach the work dir. ` +
        `Choose a sandbox_base_dir whose parents are all searchable (chmod o+x ${closed}), e.g. under /tmp.`,
    );
  }
  const removed = await removeStaleOwners(options.baseDir);
  const owner = `${OWNER_PREFIX}${process.pid}-${processStartTime(process.pid)}-${++hostsOpened}`;
  const memory = await openMemoryCgroups(CGROUP_PREFIX, owner, (name) => {
    const [pid, startTime] = name.slice(OWNER_PREFIX.length).split('-').map(Number);
    return pid === undefined || startTime === undefined || !ownerAlive(pid, startTime);
  });
  const host = new SandboxHost(options.baseDir, owner, limits, removed, memory);
  await host.selfTest();
  return host;
}

async function missingPrerequisites(): Promise<string[]> {
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

/** The nearest existing ancestor of `dir` that others cannot search (no o+x), or undefined. */
function firstClosedAncestor(dir: string): string | undefined {
  for (let current = path.dirname(dir); ; current = path.dirname(current)) {
    const stat = lstatSafe(current);
    if (stat && (stat.mode & 0o001) === 0) return current;
    if (current === path.dirname(current)) return undefined;
  }
}

async function onPath(tool: string): Promise<boolean> {
  return (process.env.PATH ?? '/usr/bin:/bin').split(':').some((dir) => dir !== '' && existsSync(path.join(dir, tool)));
}

/** Unmount and delete the owner dirs of processes that no longer run (a SIGKILLed environment leaves its mounts). */
async function removeStaleOwners(baseDir: string): Promise<number> {
  mkdirSync(baseDir, { recursive: true, mode: 0o711 });
  // bwrap runs as each session's uid and must traverse down to the work dir it binds.
  chmodSync(baseDir, 0o711);
  let removed = 0;
  for (const name of readdirSync(baseDir)) {
    if (!name.startsWith(OWNER_PREFIX)) continue;
    const [pid, startTime] = name.slice(OWNER_PREFIX.length).split('-').map(Number);
    const dir = path.join(baseDir, name);
    if (pid === undefined || startTime === undefined || ownerAlive(pid, startTime)) continue;
    // A sandbox of the dead owner that escaped --die-with-parent (killed while bwrap was still setting up) runs as
    // the uid its work dir is named after, or still names that dir in its bwrap arguments.
    const uids = new Set(readdirSync(dir).filter((entry) => /^s\d+$/.test(entry)).map((entry) => Number(entry.slice(1))));
    killProcesses((proc) => uids.has(proc.uid) || proc.cmdline.includes(`${dir}/`));
    await unmountUnder(dir);
    rmSync(dir, { recursive: true, force: true });
    removed++;
  }
  return removed;
}

/**
 * Owner dirs are named `owner-<pid>-<start time>-<n>` (one per host; a process may open several): the start time
 * keeps a recycled pid from passing for the owner.
 */
function ownerAlive(pid: number, startTime: number): boolean {
  try {
    return processStartTime(pid) === String(startTime);
  } catch {
    return false;
  }
}

let hostsOpened = 0;

function processStartTime(pid: number): string {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]!;
}

async function unmountUnder(dir: string): Promise<void> {
  const mounts = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter((point): point is string => point !== undefined && (point === dir || point.startsWith(`${dir}/`)))
    .map((point) => point.replace(/\\(\d{3})/g, (_m, octal: string) => String.fromCharCode(parseInt(octal, 8))))
    .sort((a, b) => b.length - a.length);
  for (const point of mounts) await run('umount', ['-l', point]).catch(() => undefined);
}

export class SandboxHost {
  readonly ownerDir: string;
  private readonly sandboxes = new Set<Sandbox>();
  private readonly uids = new Set<number>();
  private closed = false;

  constructor(
    readonly baseDir: string,
    owner: string,
    readonly limits: SandboxLimits,
    /** Owner dirs of dead previous processes removed at start-up. */
    readonly staleRemoved: number,
    /** Per-session memory cgroups, when this machine allows them. */
    readonly memory: MemoryCgroups | undefined,
  ) {
    this.ownerDir = path.join(baseDir, owner);
    mkdirSync(this.ownerDir, { recursive: true, mode: 0o711 });
  }

  /** What enforces the session memory limit here. */
  get sessionMemoryMechanism(): string {
    return this.memory ? `memory cgroup (v${this.memory.version})` : 'none: no writable memory cgroup, RLIMIT_AS per process only';
  }

  get live(): number {
    return this.sandboxes.size;
  }

  /** A new sandbox whose work dir holds `files` (paths relative to the work dir, already validated by the caller). */
  async create(files: Record<string, string> = {}): Promise<Sandbox> {
    if (this.closed) throw new SandboxError('the sandbox host is shut down');
    let uid: number;
    do uid = randomInt(UID_RANGE.min, UID_RANGE.max);
    while (this.uids.has(uid));
    this.uids.add(uid);
    const dir = path.join(this.ownerDir, `s${uid}`);
    const work = path.join(dir, 'work');
    let cgroup: SessionCgroup | undefined;
    try {
      // Traversable, not listable: bwrap runs as the session's uid and must reach the work dir to bind it.
      mkdirSync(dir, { mode: 0o711 });
      mkdirSync(work, { mode: 0o700 });
      const inodes = Math.max(1024, Math.floor(this.limits.diskBytes / 4096));
      await run('mount', ['-t', 'tmpfs', '-o', `size=${this.limits.diskBytes},nr_inodes=${inodes},mode=0755,uid=${uid},gid=${uid},nosuid,nodev`, 'tsgym-shell', work]);
      // The work dir is new and empty: nothing untrusted can have planted a symlink in it yet.
      for (const [relative, content] of Object.entries(files)) {
        const target = path.join(work, relative);
        mkdirSync(path.dirname(target), { recursive: true });
        writeFileSync(target, content, { mode: relative.endsWith('.sh') ? 0o755 : 0o644 });
      }
      chownTree(work, uid);
      cgroup = this.memory?.create(`s${uid}`, this.limits.sessionMemoryBytes);
    } catch (err) {
      await cgroup?.remove();
      await unmountUnder(dir);
      rmSync(dir, { recursive: true, force: true });
      this.uids.delete(uid);
      throw new SandboxError(`could not create a sandbox work dir: ${err instanceof Error ? err.message : String(err)}`);
    }
    const sandbox = new Sandbox(this, uid, dir, work, cgroup);
    this.sandboxes.add(sandbox);
    return sandbox;
  }

  /** @internal Called by Sandbox.destroy. */
  async release(sandbox: Sandbox): Promise<void> {
    await sandbox.cgroup?.remove();
    await unmountUnder(sandbox.dir);
    rmSync(sandbox.dir, { recursive: true, force: true });
    this.sandboxes.delete(sandbox);
    this.uids.delete(sandbox.uid);
  }

  /** Destroy every sandbox and the owner dir (environment shutdown). */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.sandboxes].map((sandbox) => sandbox.destroy()));
    await unmountUnder(this.ownerDir);
    rmSync(this.ownerDir, { recursive: true, force: true });
    await this.memory?.close();
  }

  /** One real sandbox, end to end, before the environment says it is ready: a broken machine fails at start-up. */
  async selfTest(): Promise<void> {
    let sandbox: Sandbox | undefined;
    try {
      sandbox = await this.create({ 'probe.txt': 'probe\n' });
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
      await this.close();
      if (err instanceof SandboxUnavailableError) throw err;
      throw new SandboxUnavailableError(`the sandbox self-test could not run a command in bubblewrap: ${err instanceof Error ? err.message : String(err)}`);
    } finally {
      if (sandbox && !this.closed) await sandbox.destroy();
    }
  }
}

function chownTree(dir: string, uid: number): void {
  chownSync(dir, uid, uid);
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const child = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      chmodSync(child, 0o755);
      chownTree(child, uid);
    } else chownSync(child, uid, uid);
  }
}

interface LaunchResult {
  report: Record<string, unknown> | undefined;
  stdout: Buffer;
  stderr: Buffer;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  killedFor: LimitName | null;
  /** Killed because its session ended (verify, expiry, shutdown), not by a limit. */
  stopped: boolean;
  durationMs: number;
}

interface LaunchOptions {
  timeoutMs: number;
  outputBytes: number;
  /** Extra read-only binds: host path → sandbox path. */
  roBinds?: Array<[string, string]>;
}

export class Sandbox {
  readonly usage: SandboxUsage = { commandsRun: 0, wallMs: 0, cpuMs: 0, outputBytes: 0 };
  private destroyed = false;
  private readonly running = new Set<ReturnType<typeof spawn>>();
  private readonly stopping = new WeakSet<ReturnType<typeof spawn>>();

  constructor(
    private readonly host: SandboxHost,
    readonly uid: number,
    readonly dir: string,
    readonly workDir: string,
    readonly cgroup: SessionCgroup | undefined,
  ) {}

  get limits(): SandboxLimits {
    return this.host.limits;
  }

  /** Run `command` with `/bin/sh -c` in the work dir, within the per-command and the remaining per-session limits. */
  async runCommand(command: string, options: { timeoutSecs?: number } = {}): Promise<CommandResult> {
    const limits = this.limits;
    const exhausted = this.exhaustedSessionLimit();
    if (exhausted) {
      return { exit_code: -1, stdout: '', stderr: `sandbox: the session's ${exhausted.replace('session_', '').replace('_', ' ')} budget is used up; no more commands run in this session\n`, stdout_truncated: false, stderr_truncated: false, duration_ms: 0, limit_exceeded: exhausted, cpu_ms: 0 };
    }
    const remainingWallMs = limits.sessionWallSecs * 1000 - this.usage.wallMs;
    const askedMs = (options.timeoutSecs ?? limits.commandWallSecs) * 1000;
    const timeoutMs = Math.min(askedMs, limits.commandWallSecs * 1000, remainingWallMs);
    const wallLimit: LimitName = timeoutMs === remainingWallMs && remainingWallMs < Math.min(askedMs, limits.commandWallSecs * 1000) ? 'session_wall_time' : 'wall_time';
    const remainingCpuSecs = Math.ceil((limits.sessionCpuSecs * 1000 - this.usage.cpuMs) / 1000);
    const cpuSecs = Math.max(1, Math.min(limits.commandCpuSecs, remainingCpuSecs));
    const remainingOutput = limits.sessionOutputBytes - this.usage.outputBytes;
    const outputBytes = Math.min(limits.outputBytes, remainingOutput);
    const op = {
      op: 'run',
      command,
      env: COMMAND_ENV,
      limits: this.rlimits(cpuSecs),
    };
    const oomBefore = this.cgroup?.oomKills() ?? 0;
    const launched = await this.launch(op, { timeoutMs, outputBytes });
    const oomKilled = (this.cgroup?.oomKills() ?? 0) > oomBefore;
    const report = launched.report ?? {};
    const cpuMs = typeof report.cpu_ms === 'number' ? report.cpu_ms : 0;
    const exitCode = typeof report.exit_code === 'number' ? report.exit_code : launched.killedFor ? 137 : -1;
    this.usage.commandsRun++;
    this.usage.wallMs += launched.durationMs;
    this.usage.cpuMs += cpuMs;
    this.usage.outputBytes += launched.stdout.length + launched.stderr.length;
    const stderrText = launched.stderr.toString('utf8');
    let limit: LimitName | null = oomKilled ? 'session_memory' : launched.killedFor === 'wall_time' ? wallLimit : launched.killedFor === 'output' && outputBytes < limits.outputBytes ? 'session_output' : launched.killedFor;
    // A fork bomb floods stderr with refused forks: the processes limit is the cause worth naming, not the flood.
    if (limit === 'output' && FORK_FAILED.test(stderrText)) limit = 'processes';
    limit ??= this.inferLimit(exitCode, stderrText, cpuMs, cpuSecs, cpuSecs < limits.commandCpuSecs);
    if (launched.stopped) {
      return { exit_code: 137, stdout: launched.stdout.toString('utf8'), stderr: `${stderrText}\nsandbox: stopped: the session ended (verified, expired or shut down)\n`, stdout_truncated: launched.stdoutTruncated, stderr_truncated: launched.stderrTruncated, duration_ms: Math.round(launched.durationMs), limit_exceeded: null, cpu_ms: cpuMs };
    }
    if (!launched.report && !launched.killedFor) {
      throw new SandboxError(`the sandbox did not report the command's result (stderr: ${stderrText.slice(0, 500)})`);
    }
    // A command stopped by a session budget used it up (the kernel's CPU accounting can stop a hair short of it).
    if (limit === 'session_cpu_time') this.usage.cpuMs = Math.max(this.usage.cpuMs, limits.sessionCpuSecs * 1000);
    if (limit === 'session_wall_time') this.usage.wallMs = Math.max(this.usage.wallMs, limits.sessionWallSecs * 1000);
    if (limit === 'session_output') this.usage.outputBytes = Math.max(this.usage.outputBytes, limits.sessionOutputBytes);
    const note = limit ? `\nsandbox: stopped by the ${limitText(limit, limits, timeoutMs)}\n` : '';
    return {
      exit_code: exitCode,
      stdout: launched.stdout.toString('utf8'),
      stderr: stderrText + note,
      stdout_truncated: launched.stdoutTruncated,
      stderr_truncated: launched.stderrTruncated,
      duration_ms: Math.round(launched.durationMs),
      limit_exceeded: limit,
      cpu_ms: cpuMs,
    };
  }

  /** The launcher's rlimits. NPROC counts every process of the uid: bwrap's monitor and the launcher are two more. */
  private rlimits(cpuSecs: number) {
    const limits = this.limits;
    return { cpu_secs: cpuSecs, memory_bytes: limits.memoryBytes, file_bytes: limits.fileBytes, processes: limits.processes + 2 };
  }

  /**
   * Which limit a command that ended on its own ran into. RLIMIT_CPU ends it with SIGXCPU (exit 152 from the
   * shell) or SIGKILL at the hard limit; RLIMIT_FSIZE with SIGXFSZ (153). RLIMIT_AS and RLIMIT_NPROC make the
   * allocation or the fork fail rather than kill, so those are named from the failure the program reports (its
   * stderr) — the limit itself is enforced by the kernel either way. A full work dir is seen on the tmpfs itself.
   */
  private inferLimit(exitCode: number, stderr: string, cpuMs: number, cpuSecs: number, sessionBound: boolean): LimitName | null {
    if (FORK_FAILED.test(stderr)) return 'processes';
    if (exitCode === 0) return null;
    const cpu: LimitName = sessionBound ? 'session_cpu_time' : 'cpu_time';
    if (exitCode === 152 || (exitCode === 137 && cpuMs >= cpuSecs * 1000 * 0.9)) return cpu;
    if (exitCode === 153) return 'file_size';
    if (this.workDirFull()) return 'disk';
    if (/MemoryError|Cannot allocate memory|out of memory|std::bad_alloc/i.test(stderr)) return 'memory';
    if (/File too large/.test(stderr)) return 'file_size';
    return null;
  }

  private workDirFull(): boolean {
    try {
      const stats = statfsSync(this.workDir);
      return stats.bavail * stats.bsize < 64 * 1024 || stats.ffree < 8;
    } catch {
      return false;
    }
  }

  private exhaustedSessionLimit(): LimitName | null {
    const limits = this.limits;
    if (this.usage.wallMs >= limits.sessionWallSecs * 1000) return 'session_wall_time';
    if (this.usage.cpuMs >= limits.sessionCpuSecs * 1000) return 'session_cpu_time';
    if (this.usage.outputBytes >= limits.sessionOutputBytes) return 'session_output';
    return null;
  }

  /** Bytes the work dir holds now (what the disk quota counts). */
  diskUsedBytes(): number {
    const stats = statfsSync(this.workDir);
    return (stats.blocks - stats.bfree) * stats.bsize;
  }

  async readFile(relative: string, maxBytes: number): Promise<Record<string, unknown>> {
    return this.fileOp({ op: 'read', path: relative, max_bytes: maxBytes });
  }

  async writeFile(relative: string, content: string): Promise<Record<string, unknown>> {
    return this.fileOp({ op: 'write', path: relative, content });
  }

  async listDir(relative: string, maxEntries: number): Promise<Record<string, unknown>> {
    return this.fileOp({ op: 'list', path: relative, max_entries: maxEntries });
  }

  /** File operations run inside the sandbox too, as the session's uid: a path can reach nothing the commands cannot. */
  private async fileOp(op: Record<string, unknown>): Promise<Record<string, unknown>> {
    const launched = await this.launch(op, { timeoutMs: 10_000, outputBytes: 4096 });
    if (!launched.report) {
      throw new SandboxError(`the sandbox did not answer a ${String(op.op)} (${launched.killedFor ?? 'no report'}; stderr: ${launched.stderr.toString('utf8').slice(0, 500)})`);
    }
    return launched.report;
  }

  /**
   * Run a hidden check: every command still running is killed first; `files` are written to a directory outside the
   * work dir, bound read-only at /check only for this invocation (the agent's commands never see it), and `command`
   * runs in the work dir like any command.
   */
  async runCheck(files: Record<string, string>, command: string, timeoutSecs: number): Promise<CommandResult> {
    await this.stopCommands();
    const checkDir = path.join(this.dir, 'check');
    rmSync(checkDir, { recursive: true, force: true });
    mkdirSync(checkDir, { mode: 0o755 });
    for (const [relative, content] of Object.entries(files)) {
      const target = path.join(checkDir, relative);
      mkdirSync(path.dirname(target), { recursive: true, mode: 0o755 });
      writeFileSync(target, content, { mode: 0o755 });
    }
    try {
      const op = {
        op: 'run',
        command,
        env: COMMAND_ENV,
        limits: this.rlimits(this.limits.commandCpuSecs),
      };
      const launched = await this.launch(op, { timeoutMs: timeoutSecs * 1000, outputBytes: 1024 * 1024, roBinds: [[checkDir, '/check']] });
      const report = launched.report ?? {};
      if (!launched.report && !launched.killedFor) {
        throw new SandboxError(`the sandbox did not report the check's result (stderr: ${launched.stderr.toString('utf8').slice(0, 500)})`);
      }
      return {
        exit_code: typeof report.exit_code === 'number' ? report.exit_code : 137,
        stdout: launched.stdout.toString('utf8'),
        stderr: launched.stderr.toString('utf8'),
        stdout_truncated: launched.stdoutTruncated,
        stderr_truncated: launched.stderrTruncated,
        duration_ms: Math.round(launched.durationMs),
        limit_exceeded: launched.killedFor,
        cpu_ms: typeof report.cpu_ms === 'number' ? report.cpu_ms : 0,
      };
    } finally {
      rmSync(checkDir, { recursive: true, force: true });
    }
  }

  /** Kill every command still running (before the check: nothing of the agent's may change files while it runs). */
  async stopCommands(): Promise<void> {
    for (const child of this.running) {
      this.stopping.add(child);
      child.kill('SIGKILL');
    }
    await Promise.all([...this.running].map((child) => new Promise<void>((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve() : child.once('exit', () => resolve())))));
    // Every process of the session's uid is the session's.
    killProcesses((proc) => proc.uid === this.uid);
  }

  /** Kill whatever runs, unmount and delete the work dir. Idempotent. */
  async destroy(): Promise<void> {
    if (this.destroyed) return;
    this.destroyed = true;
    await this.stopCommands();
    await this.host.release(this);
  }

  get isDestroyed(): boolean {
    return this.destroyed;
  }

  private bwrapArgs(roBinds: Array<[string, string]>): string[] {
    const args = ['--reuid', String(this.uid), '--regid', String(this.uid), '--clear-groups', '--', 'bwrap'];
    args.push('--unshare-all', '--unshare-user', '--die-with-parent', '--new-session', '--as-pid-1', '--clearenv', '--disable-userns');
    args.push('--ro-bind', '/usr', '/usr');
    for (const top of ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32']) {
      const stat = lstatSafe(top);
      if (!stat) continue;
      if (stat.isSymbolicLink()) args.push('--symlink', readlinkSync(top), top);
      else if (stat.isDirectory()) args.push('--ro-bind', top, top);
    }
    args.push('--ro-bind', '/etc', '/etc', '--proc', '/proc', '--dev', '/dev', '--size', String(TMP_BYTES), '--tmpfs', '/tmp');
    args.push('--bind', this.workDir, '/work', '--ro-bind', LAUNCHER, '/.tsgym/launcher.py');
    for (const [from, to] of roBinds) args.push('--ro-bind', from, to);
    // The root bwrap builds is a tmpfs: make it read-only too, so the work dir (and the private /tmp) is all a command can write.
    args.push('--remount-ro', '/');
    args.push('--chdir', '/work', '--uid', String(SANDBOX_UID), '--gid', String(SANDBOX_UID), '--hostname', 'sandbox');
    args.push('--', SANDBOX_PYTHON, '-I', '-S', '/.tsgym/launcher.py');
    return args;
  }

  private launch(op: Record<string, unknown>, options: LaunchOptions): Promise<LaunchResult> {
    if (this.destroyed) return Promise.reject(new SandboxError('the sandbox was destroyed (session verified or expired)'));
    const started = performance.now();
    const args = this.bwrapArgs(options.roBinds ?? []);
    // With a memory cgroup, a root shell joins it first and then becomes setpriv: every process of the command
    // starts inside the cgroup, with no window before a move.
    const child = this.cgroup
      ? spawn('/bin/sh', ['-c', 'echo $$ > "$0" || exit 125; exec setpriv "$@"', this.cgroup.procs, ...args], { stdio: ['pipe', 'pipe', 'pipe', 'pipe'], env: { PATH: SYSTEM_PATH } })
      : spawn('setpriv', args, { stdio: ['pipe', 'pipe', 'pipe', 'pipe'], env: { PATH: SYSTEM_PATH } });
    this.running.add(child);
    const stdout = new CappedBuffer();
    const stderr = new CappedBuffer();
    const reportChunks: Buffer[] = [];
    let reportBytes = 0;
    let killedFor: LimitName | null = null;
    const kill = (reason: LimitName): void => {
      if (killedFor === null) killedFor = reason;
      child.kill('SIGKILL');
    };
    const onOutput = (into: CappedBuffer) => (chunk: Buffer) => {
      into.push(chunk, options.outputBytes - stdout.stored - stderr.stored);
      if (stdout.seen + stderr.seen > options.outputBytes) kill('output');
    };
    child.stdout!.on('data', onOutput(stdout));
    child.stderr!.on('data', onOutput(stderr));
    const reportStream = child.stdio[3] as NodeJS.ReadableStream;
    reportStream.on('data', (chunk: Buffer) => {
      reportBytes += chunk.length;
      if (reportBytes <= 1024 * 1024) reportChunks.push(chunk);
    });
    child.stdin!.on('error', () => undefined);
    child.stdin!.end(JSON.stringify(op));
    const timer = setTimeout(() => kill('wall_time'), options.timeoutMs);
    return new Promise((resolve, reject) => {
      child.once('error', (err) => {
        clearTimeout(timer);
        this.running.delete(child);
        reject(new SandboxError(`could not start bubblewrap: ${err.message}`));
      });
      child.once('exit', () => {
        clearTimeout(timer);
        if (killedFor === null && !this.stopping.has(child)) return;
        // Killed while bwrap was still setting up, its child can miss --die-with-parent's signal and live on as an
        // orphan (host parent pid 1) holding our pipes. Sandbox processes only ever have host parent 1 that way.
        killProcesses((proc) => proc.uid === this.uid && proc.ppid === 1);
        // Whatever still holds a pipe cannot keep this call waiting.
        setTimeout(() => {
          for (const stream of [child.stdout, child.stderr, reportStream]) (stream as NodeJS.ReadableStream & { destroy(): void }).destroy();
        }, 1000).unref();
      });
      child.once('close', () => {
        clearTimeout(timer);
        this.running.delete(child);
        let report: Record<string, unknown> | undefined;
        if (reportBytes > 0 && reportBytes <= 1024 * 1024) {
          try {
            const parsed: unknown = JSON.parse(Buffer.concat(reportChunks).toString('utf8'));
            if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) report = parsed as Record<string, unknown>;
          } catch {
            report = undefined;
          }
        }
        resolve({
          report,
          stdout: stdout.bytes(),
          stderr: stderr.bytes(),
          stdoutTruncated: stdout.truncated,
          stderrTruncated: stderr.truncated,
          killedFor,
          stopped: killedFor === null && this.stopping.has(child),
          durationMs: performance.now() - started,
        });
      });
    });
  }
}

export interface HostProcess {
  pid: number;
  ppid: number;
  uid: number;
  cmdline: string;
}

/** Every process on the host (this PID namespace), read from /proc. */
export function hostProcesses(): HostProcess[] {
  const found: HostProcess[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const status = readFileSync(`/proc/${name}/status`, 'utf8');
      const uid = Number(/^Uid:\s+(\d+)/m.exec(status)?.[1]);
      const ppid = Number(/^PPid:\s+(\d+)/m.exec(status)?.[1]);
      found.push({ pid: Number(name), ppid, uid, cmdline: readFileSync(`/proc/${name}/cmdline`, 'utf8').replaceAll('\0', ' ') });
    } catch {
      // It ended while we looked.
    }
  }
  return found;
}

/** SIGKILL every host process `match` selects, until none is left (bounded: a fork bomb is capped by its NPROC). */
function killProcesses(match: (proc: HostProcess) => boolean): void {
  for (let round = 0; round < 20; round++) {
    const targets = hostProcesses().filter((proc) => proc.pid !== process.pid && match(proc));
    if (targets.length === 0) return;
    for (const proc of targets) {
      try {
        process.kill(proc.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
  }
}

function lstatSafe(file: string) {
  try {
    return lstatSync(file);
  } catch {
    return undefined;
  }
}

/** Keeps at most what the shared budget still allows; counts everything it was offered. */
class CappedBuffer {
  private readonly chunks: Buffer[] = [];
  stored = 0;
  seen = 0;
  truncated = false;

  push(chunk: Buffer, room: number): void {
    this.seen += chunk.length;
    const keep = Math.max(0, Math.min(chunk.length, room));
    if (keep < chunk.length) this.truncated = true;
    if (keep > 0) {
      this.chunks.push(keep === chunk.length ? chunk : chunk.subarray(0, keep));
      this.stored += keep;
    }
  }

  bytes(): Buffer {
    return Buffer.concat(this.chunks);
  }
}

function limitText(limit: LimitName, limits: SandboxLimits, timeoutMs: number): string {
  const mib = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(0)} MiB`;
  switch (limit) {
    case 'wall_time':
      return `wall_time limit (the command ran past its ${timeoutMs / 1000} s timeout; at most ${limits.commandWallSecs} s per command)`;
    case 'cpu_time':
      return `cpu_time limit (${limits.commandCpuSecs} CPU seconds per process)`;
    case 'memory':
      return `memory limit (${mib(limits.memoryBytes)} of address space per process)`;
    case 'processes':
      return `processes limit (${limits.processes} processes per session)`;
    case 'output':
      return `output limit (${limits.outputBytes} bytes of stdout + stderr per command)`;
    case 'file_size':
      return `file_size limit (${mib(limits.fileBytes)} per file)`;
    case 'disk':
      return `disk limit (${mib(limits.diskBytes)} in the work dir)`;
    case 'session_wall_time':
      return `session_wall_time limit (${limits.sessionWallSecs} s of commands per session)`;
    case 'session_cpu_time':
      return `session_cpu_time limit (${limits.sessionCpuSecs} CPU seconds per session)`;
    case 'session_output':
      return `session_output limit (${limits.sessionOutputBytes} bytes of output per session)`;
    case 'session_memory':
      return `session_memory limit (${mib(limits.sessionMemoryBytes)} for all the session's processes and files; the kernel's OOM killer stopped the command)`;
  }
}
