/**
 * The shell sandbox's limits: what each one caps and its default, the names a result gives the limit a command ran
 * into (`limit_exceeded`), and the sentence the sandbox appends to a command's stderr so the agent can tell why it
 * was stopped. Shared by the host (which fixes the limits at start-up), the sandbox (which enforces and names them)
 * and the environment's config.
 */

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

/** The limit `limit` and its value, in words (`timeoutMs` is the wall time this command was actually given). */
export function describeLimit(limit: LimitName, limits: SandboxLimits, timeoutMs: number): string {
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
