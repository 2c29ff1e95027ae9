/**
 * One session's sandbox: its own unprivileged host uid (so RLIMIT_NPROC, which the kernel counts per uid, caps the
 * session's processes) and its own tmpfs work dir, bound read-write at /work. Every operation (a command, a file
 * read/write/listing, the hidden check) is one fresh bwrap invocation (see bwrap-args.ts) whose PID 1, `launcher.py`,
 * sets the per-process rlimits, reaps the whole tree, kills whatever is left when the command's shell exits, and
 * reports exit status and CPU on fd 3. So no process outlives its command, the check at verify runs in a process
 * tree nothing of the agent's can reach, and killing the bwrap process (wall time, output cap, session end) takes
 * the whole tree with it. This file runs those invocations, keeps the per-session budgets, and names the limit a
 * command ran into.
 */
import { spawn, type SpawnOptions } from 'node:child_process';
import { chmodSync, mkdirSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { sandboxCommand, type SandboxPrograms } from './bwrap-args.js';
import { SandboxError } from './errors.js';
import { describeLimit, type LimitName, type SandboxLimits } from './limits.js';
import type { SessionCgroup } from './memory-cgroup.js';
import { killProcesses, type HostProcess } from './processes.js';
import { HOLDER_PROCESSES, type SessionHolder } from './rootless.js';

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

export const COMMAND_ENV = {
  PATH: '/usr/local/bin:/usr/bin:/bin',
  HOME: '/work',
  LANG: 'C.UTF-8',
  TERM: 'dumb',
  TMPDIR: '/tmp',
  USER: 'sandbox',
};
/** What each running operation adds to its command's processes under the session's uid: bwrap's monitor, launcher. */
const SANDBOX_PROCESSES = 2;
/**
 * Where prlimit and setpriv are looked up (the environment's own PATH is checked at start-up); bwrap goes by its
 * absolute path.
 */
const SYSTEM_PATH = process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin';
/** How shells, coreutils and Python report a fork refused by RLIMIT_NPROC. */
const FORK_FAILED =
  /Cannot fork|can't fork|fork: (retry: )?Resource temporarily unavailable|BlockingIOError: \[Errno 11\]/i;
/** How setpriv or bwrap say the processes limit kept them from starting the launcher (which reports its own). */
const START_REFUSED = /^(?:setpriv|bwrap): .*Resource temporarily unavailable$/m;

/** An operation that never reached the launcher because the session's processes were all taken (see START_REFUSED). */
function launchRefused(launched: LaunchResult, stderr: string): boolean {
  return !launched.report && !launched.killedFor && START_REFUSED.test(stderr);
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
  /** Extra read-write binds: host path → sandbox path. */
  rwBinds?: Array<[string, string]>;
}

/** A command run for the environment itself (a setup step, a check, a verifier): outside the session's budgets. */
export interface UncountedRun {
  timeoutSecs: number;
  /** Default 1 MiB of stdout + stderr. */
  outputBytes?: number;
  /** The directory it starts in (inside the sandbox). Default: where the session's commands start. */
  cwd?: string;
  /** Added to the commands' environment for this run only. */
  env?: Record<string, string>;
  roBinds?: Array<[string, string]>;
  rwBinds?: Array<[string, string]>;
}

export class Sandbox {
  readonly usage: SandboxUsage = { commandsRun: 0, wallMs: 0, cpuMs: 0, outputBytes: 0 };
  private destroyed = false;
  private readonly running = new Set<ReturnType<typeof spawn>>();
  private readonly stopping = new WeakSet<ReturnType<typeof spawn>>();
  /** The environment every command gets: the fixed one, HOME at the work dir, and what a task's ENV added. */
  private env: Record<string, string>;
  /** Where commands start (inside the work dir): the work dir, or a Harbor task's last WORKDIR. */
  private cwd: string | undefined;

  constructor(
    /** The host's limits (shared by all its sandboxes). */
    readonly limits: SandboxLimits,
    /** bwrap and the staged launcher (the host's, shared by all its sandboxes). */
    private readonly programs: SandboxPrograms,
    readonly uid: number,
    readonly dir: string,
    readonly workDir: string,
    readonly cgroup: SessionCgroup | undefined,
    /** Given back to the host once nothing runs any more: removes the cgroup, unmounts and deletes `dir`, frees `uid`. */
    private readonly release: (sandbox: Sandbox) => Promise<void>,
    /** Where the work dir appears inside the sandbox: /work, or a Harbor task's WORKDIR. */
    readonly workMount = '/work',
    /** Without root: the process holding the session's namespaces and tmpfs work dir (rootless.ts). */
    readonly holder?: SessionHolder,
  ) {
    this.env = { ...COMMAND_ENV, HOME: workMount };
  }

  /** The environment commands run with. */
  get commandEnv(): Readonly<Record<string, string>> {
    return this.env;
  }

  /** Add variables to every later command's environment (a Harbor task's ENV steps). */
  extendEnv(vars: Record<string, string>): void {
    this.env = { ...this.env, ...vars };
  }

  /** Where every later command starts (a Harbor task's last WORKDIR, inside the work dir). */
  startIn(cwd: string): void {
    this.cwd = cwd === this.workMount ? undefined : cwd;
  }

  /** Run `command` with `/bin/sh -c` in the work dir, within the per-command and the remaining per-session limits. */
  async runCommand(command: string, options: { timeoutSecs?: number } = {}): Promise<CommandResult> {
    const limits = this.limits;
    const exhausted = this.exhaustedSessionLimit();
    if (exhausted) {
      return {
        exit_code: -1,
        stdout: '',
        stderr: `sandbox: the session's ${exhausted.replace('session_', '').replace('_', ' ')} budget is used up; no more commands run in this session\n`,
        stdout_truncated: false,
        stderr_truncated: false,
        duration_ms: 0,
        limit_exceeded: exhausted,
        cpu_ms: 0,
      };
    }
    const remainingWallMs = limits.sessionWallSecs * 1000 - this.usage.wallMs;
    const askedMs = (options.timeoutSecs ?? limits.commandWallSecs) * 1000;
    const timeoutMs = Math.min(askedMs, limits.commandWallSecs * 1000, remainingWallMs);
    const wallLimit: LimitName =
      timeoutMs === remainingWallMs && remainingWallMs < Math.min(askedMs, limits.commandWallSecs * 1000)
        ? 'session_wall_time'
        : 'wall_time';
    const remainingCpuSecs = Math.ceil((limits.sessionCpuSecs * 1000 - this.usage.cpuMs) / 1000);
    const cpuSecs = Math.max(1, Math.min(limits.commandCpuSecs, remainingCpuSecs));
    const remainingOutput = limits.sessionOutputBytes - this.usage.outputBytes;
    const outputBytes = Math.min(limits.outputBytes, remainingOutput);
    const op = {
      op: 'run',
      command,
      env: this.env,
      limits: this.rlimits(cpuSecs),
      ...(this.cwd ? { cwd: this.cwd } : {}),
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
    let limit: LimitName | null = oomKilled
      ? 'session_memory'
      : launched.killedFor === 'wall_time'
        ? wallLimit
        : launched.killedFor === 'output' && outputBytes < limits.outputBytes
          ? 'session_output'
          : launched.killedFor;
    // A fork bomb floods stderr with refused forks: the processes limit is the cause worth naming, not the flood.
    if (limit === 'output' && FORK_FAILED.test(stderrText)) limit = 'processes';
    limit ??= this.inferLimit(exitCode, stderrText, cpuMs, cpuSecs, cpuSecs < limits.commandCpuSecs);
    if (launched.stopped) {
      return {
        exit_code: 137,
        stdout: launched.stdout.toString('utf8'),
        stderr: `${stderrText}\nsandbox: stopped: the session ended (verified, expired or shut down)\n`,
        stdout_truncated: launched.stdoutTruncated,
        stderr_truncated: launched.stderrTruncated,
        duration_ms: Math.round(launched.durationMs),
        limit_exceeded: null,
        cpu_ms: cpuMs,
      };
    }
    if (report.not_started === 'processes' || launchRefused(launched, stderrText)) return this.notStarted(stderrText);
    if (!launched.report && !launched.killedFor) {
      throw new SandboxError(`the sandbox did not report the command's result (stderr: ${stderrText.slice(0, 500)})`);
    }
    // A command stopped by a session budget used it up (the kernel's CPU accounting can stop a hair short of it).
    if (limit === 'session_cpu_time') this.usage.cpuMs = Math.max(this.usage.cpuMs, limits.sessionCpuSecs * 1000);
    if (limit === 'session_wall_time') this.usage.wallMs = Math.max(this.usage.wallMs, limits.sessionWallSecs * 1000);
    if (limit === 'session_output')
      this.usage.outputBytes = Math.max(this.usage.outputBytes, limits.sessionOutputBytes);
    const note = limit ? `\nsandbox: stopped by the ${describeLimit(limit, limits, timeoutMs)}\n` : '';
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

  /**
   * A command the processes limit kept from starting: the session's other commands hold every process its uid may
   * have, so setpriv, bwrap or the launcher could not fork or exec. An answer for the agent, not a server failure.
   */
  private notStarted(stderr: string): CommandResult {
    return {
      exit_code: 126,
      stdout: '',
      stderr: `${stderr}\nsandbox: not started: the session's other commands hold its whole ${describeLimit('processes', this.limits, 0)}\n`,
      stdout_truncated: false,
      stderr_truncated: false,
      duration_ms: 0,
      limit_exceeded: 'processes',
      cpu_ms: 0,
    };
  }

  /** The per-process rlimits the launcher sets on the command (the processes cap is the uid's: see launch). */
  private rlimits(cpuSecs: number) {
    const limits = this.limits;
    return { cpu_secs: cpuSecs, memory_bytes: limits.memoryBytes, file_bytes: limits.fileBytes };
  }

  /**
   * Which limit a command that ended on its own ran into. RLIMIT_CPU ends it with SIGXCPU (exit 152 from the
   * shell) or SIGKILL at the hard limit; RLIMIT_FSIZE with SIGXFSZ (153). RLIMIT_AS and RLIMIT_NPROC make the
   * allocation or the fork fail rather than kill, so those are named from the failure the program reports (its
   * stderr) — the limit itself is enforced by the kernel either way. A full work dir is seen on the tmpfs itself.
   */
  private inferLimit(
    exitCode: number,
    stderr: string,
    cpuMs: number,
    cpuSecs: number,
    sessionBound: boolean,
  ): LimitName | null {
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
      const stats = statfsSync(this.hostView(this.workDir));
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
    const stats = statfsSync(this.hostView(this.workDir));
    return (stats.blocks - stats.bfree) * stats.bsize;
  }

  async readFile(relative: string, maxBytes: number): Promise<Record<string, unknown>> {
    return this.fileOp({ op: 'read', path: relative, max_bytes: maxBytes });
  }

  async writeFile(relative: string, content: string): Promise<Record<string, unknown>> {
    return this.fileOp({ op: 'write', path: relative, content });
  }

  /** Write bytes with a mode, confined like the agent's writes (no symlink followed): the host's own late writes. */
  async writeBytes(relative: string, content: Buffer, mode: number): Promise<Record<string, unknown>> {
    return this.fileOp({ op: 'write', path: relative, content_b64: content.toString('base64'), mode });
  }

  async listDir(relative: string, maxEntries: number): Promise<Record<string, unknown>> {
    return this.fileOp({ op: 'list', path: relative, max_entries: maxEntries });
  }

  /** File operations run inside the sandbox too, as the session's uid: a path can reach nothing the commands cannot. */
  private async fileOp(op: Record<string, unknown>): Promise<Record<string, unknown>> {
    const launched = await this.launch(op, { timeoutMs: 10_000, outputBytes: 4096 });
    if (launchRefused(launched, launched.stderr.toString('utf8')))
      return {
        error: `not done: the session's running commands hold its whole ${describeLimit('processes', this.limits, 0)}`,
      };
    if (!launched.report) {
      throw new SandboxError(
        `the sandbox did not answer a ${String(op.op)} (${launched.killedFor ?? 'no report'}; stderr: ${launched.stderr.toString('utf8').slice(0, 500)})`,
      );
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
    writeReadableTree(checkDir, files);
    try {
      return await this.runUncounted(command, { timeoutSecs, roBinds: [[checkDir, '/check']] });
    } finally {
      rmSync(checkDir, { recursive: true, force: true });
    }
  }

  /**
   * Run `command` for the environment itself (a Harbor task's RUN step or its verifier, a check): under the
   * per-process limits, with its own wall time and a 1 MiB output cap, not counted against the session's budgets.
   * It does not stop the session's other commands: a caller that needs a quiet sandbox calls `stopCommands` first.
   */
  async runUncounted(command: string, run: UncountedRun): Promise<CommandResult> {
    const cwd = run.cwd ?? this.cwd;
    const op = {
      op: 'run',
      command,
      env: { ...this.env, ...run.env },
      limits: this.rlimits(this.limits.commandCpuSecs),
      ...(cwd ? { cwd } : {}),
    };
    const launched = await this.launch(op, {
      timeoutMs: run.timeoutSecs * 1000,
      outputBytes: run.outputBytes ?? 1024 * 1024,
      roBinds: run.roBinds ?? [],
      rwBinds: run.rwBinds ?? [],
    });
    const report = launched.report ?? {};
    if (!launched.report && !launched.killedFor) {
      throw new SandboxError(
        `the sandbox did not report the command's result (stderr: ${launched.stderr.toString('utf8').slice(0, 500)})`,
      );
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
  }

  /** Kill every command still running (before the check: nothing of the agent's may change files while it runs). */
  async stopCommands(): Promise<void> {
    for (const child of this.running) {
      this.stopping.add(child);
      child.kill('SIGKILL');
    }
    await Promise.all(
      [...this.running].map(
        (child) =>
          new Promise<void>((resolve) =>
            child.exitCode !== null || child.signalCode !== null ? resolve() : child.once('exit', () => resolve()),
          ),
      ),
    );
    // Every process of the session's uid (as root), or with the session's work dir mounted (without), is the session's.
    killProcesses((proc) => this.ownsProcess(proc) && proc.pid !== this.holder?.pid);
  }

  /**
   * Whether a host process belongs to this session: runs as its uid (as root), or has its work dir mounted (without
   * root; the holder itself counts as the session's too).
   */
  ownsProcess(proc: HostProcess): boolean {
    return this.holder ? this.holder.owns(proc) : proc.uid === this.uid;
  }

  /** `hostPath` as the server reaches it: through the holder without root (the work dir is the holder's tmpfs). */
  hostView(hostPath: string): string {
    return this.holder ? this.holder.view(hostPath) : hostPath;
  }

  /** Kill whatever runs, unmount and delete the work dir. Idempotent. */
  async destroy(): Promise<void> {
    if (this.destroyed) return;
    this.destroyed = true;
    await this.stopCommands();
    await this.release(this);
  }

  get isDestroyed(): boolean {
    return this.destroyed;
  }

  private launch(op: Record<string, unknown>, options: LaunchOptions): Promise<LaunchResult> {
    if (this.destroyed)
      return Promise.reject(new SandboxError('the sandbox was destroyed (session verified or expired)'));
    const started = performance.now();
    // Every process of the session's uid counts against one cap, so a command's bwrap monitor and launcher are
    // two of them: `processes` is what one command's own tree may reach.
    const [program, ...args] = sandboxCommand({
      uid: this.uid,
      // Without root the holder counts too: it lives in the session's user namespace.
      processes: this.limits.processes + SANDBOX_PROCESSES + (this.holder ? HOLDER_PROCESSES : 0),
      ...(this.holder ? { enterSession: this.holder.enter() } : {}),
      workDir: this.workDir,
      workMount: this.workMount,
      roBinds: options.roBinds ?? [],
      rwBinds: options.rwBinds ?? [],
      programs: this.programs,
    });
    // With a memory cgroup, a root shell joins it first and then becomes prlimit: every process of the command
    // starts inside the cgroup, with no window before a move. The cwd is /, as the session's uid may not be able to
    // enter the server's own (under gym env start, a directory of the installation).
    const spawnOptions: SpawnOptions = {
      stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
      env: { PATH: SYSTEM_PATH },
      cwd: '/',
    };
    const child = this.cgroup
      ? spawn(
          '/bin/sh',
          ['-c', 'echo $$ > "$0" || exit 125; exec "$@"', this.cgroup.procs, program!, ...args],
          spawnOptions,
        )
      : spawn(program!, args, spawnOptions);
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
    child.stdin!.end(JSON.stringify({ work: this.workMount, ...op }));
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
        killProcesses((proc) => this.ownsProcess(proc) && proc.ppid === 1 && proc.pid !== this.holder?.pid);
        // Whatever still holds a pipe cannot keep this call waiting.
        setTimeout(() => {
          for (const stream of [child.stdout, child.stderr, reportStream])
            (stream as NodeJS.ReadableStream & { destroy(): void }).destroy();
        }, 1000).unref();
      });
      child.once('close', () => {
        clearTimeout(timer);
        this.running.delete(child);
        let report: Record<string, unknown> | undefined;
        if (reportBytes > 0 && reportBytes <= 1024 * 1024) {
          try {
            const parsed: unknown = JSON.parse(Buffer.concat(reportChunks).toString('utf8'));
            if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed))
              report = parsed as Record<string, unknown>;
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

/**
 * Write `files` under a new directory `root` that the session's uid can read (root writes them; modes are set
 * explicitly, whatever the server's umask): a check's files, a Harbor task's tests or solution.
 */
export function writeReadableTree(root: string, files: Record<string, string | Buffer>): void {
  mkdirSync(root, { recursive: true });
  chmodSync(root, 0o755);
  for (const [relative, content] of Object.entries(files)) {
    const target = path.join(root, relative);
    for (let dir = path.dirname(target); dir !== root; dir = path.dirname(dir)) {
      mkdirSync(dir, { recursive: true });
      chmodSync(dir, 0o755);
    }
    writeFileSync(target, content);
    chmodSync(target, 0o755);
  }
}
