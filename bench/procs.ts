import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';

/**
 * Child processes for the benchmark and what Linux says about them. Every process the bench starts is registered
 * here, so `stopAll()` can end them however a run ends; every wait has a deadline.
 */

/** One reading of /proc/<pid>: CPU so far and memory. */
export interface ProcSample {
  /** utime + stime, in milliseconds. */
  cpuMs: number;
  /** Peak resident set size (VmHWM), in MiB. */
  peakRssMiB: number;
  /** Bytes moved through read/write syscalls (sockets and files), from /proc/<pid>/io. */
  ioBytes: number;
}

const TICK_MS = 1000 / 100; // CLK_TCK is 100 on every Linux the bench targets

export function sampleProc(pid: number | 'self'): ProcSample {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) may hold spaces: fields are counted after its closing parenthesis.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const cpuTicks = Number(fields[11]) + Number(fields[12]); // fields 14 and 15: utime, stime
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const hwm = /^VmHWM:\s+(\d+) kB/m.exec(status);
  let ioBytes = 0;
  try {
    const io = readFileSync(`/proc/${pid}/io`, 'utf8');
    ioBytes = Number(/^rchar: (\d+)/m.exec(io)?.[1] ?? 0) + Number(/^wchar: (\d+)/m.exec(io)?.[1] ?? 0);
  } catch {
    // /proc/<pid>/io can be hidden by the kernel's ptrace policy; byte counts are then reported as 0.
  }
  return { cpuMs: cpuTicks * TICK_MS, peakRssMiB: hwm ? Number(hwm[1]) / 1024 : 0, ioBytes };
}

export function delta(before: ProcSample, after: ProcSample): ProcSample {
  return { cpuMs: after.cpuMs - before.cpuMs, peakRssMiB: after.peakRssMiB, ioBytes: after.ioBytes - before.ioBytes };
}

const running = new Set<ChildProcess>();

/**
 * Spawn a tracked child in its own process group (so a stop reaches anything it starts). Its open-files soft
 * limit is raised to the hard limit first (`exec` keeps the pid): 2,000 rollouts in flight can hold up to 6,000
 * sockets in the agent, far more than the common default of 1,024.
 */
export function start(command: string, args: readonly string[], options: SpawnOptions = {}): ChildProcess {
  const shell = ['-c', 'ulimit -n "$(ulimit -Hn)" 2>/dev/null; exec "$@"', 'sh', command, ...args];
  const child = spawn('/bin/sh', shell, { stdio: ['ignore', 'pipe', 'pipe'], detached: true, ...options });
  running.add(child);
  child.once('exit', () => running.delete(child));
  return child;
}

export function exited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

/** Resolve with the first stdout/stderr line matching `pattern`; reject on exit or after `timeoutMs`. */
export function waitForLine(child: ChildProcess, pattern: RegExp, timeoutMs: number): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    let buffered = '';
    let tail: string[] = [];
    const onData = (chunk: Buffer): void => {
      buffered += chunk.toString('utf8');
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      for (const line of lines) {
        tail = [...tail.slice(-19), line];
        const match = pattern.exec(line);
        if (match) return finish(() => resolve(match));
      }
    };
    const onExit = (): void =>
      finish(() => reject(new Error(`process exited before printing ${pattern}; last lines:\n${tail.join('\n')}`)));
    const timer = setTimeout(
      () =>
        finish(() =>
          reject(new Error(`no line matching ${pattern} within ${timeoutMs} ms; last lines:\n${tail.join('\n')}`)),
        ),
      timeoutMs,
    );
    const finish = (settle: () => void): void => {
      clearTimeout(timer);
      child.stdout?.off('data', onData);
      child.stderr?.off('data', onData);
      child.off('exit', onExit);
      settle();
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', onExit);
  });
}

/** Keep the last lines a child printed (for error messages) and keep its pipes drained. */
export function captureTail(child: ChildProcess, keep = 30): () => string {
  let lines: string[] = [];
  const onData = (chunk: Buffer): void => {
    lines = [
      ...lines,
      ...chunk
        .toString('utf8')
        .split('\n')
        .filter((line) => line.trim() !== ''),
    ].slice(-keep);
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  return () => lines.join('\n');
}

/** Wait for exit; past the deadline the child is killed and this rejects. */
export async function waitForExit(child: ChildProcess, timeoutMs: number, what: string): Promise<number | null> {
  if (exited(child)) return child.exitCode;
  const timer = setTimeout(() => kill(child, 'SIGKILL'), timeoutMs);
  try {
    const [code, signal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
    if (signal === 'SIGKILL')
      throw new Error(`${what} did not finish within ${Math.round(timeoutMs / 1000)} s and was killed`);
    return code;
  } finally {
    clearTimeout(timer);
  }
}

function kill(child: ChildProcess, signal: NodeJS.Signals): void {
  if (exited(child) || child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal); // the whole group
  } catch {
    child.kill(signal);
  }
}

/** SIGINT (what Ctrl-C sends; `gym env start` stops its servers on it), then SIGKILL after `graceMs`. */
export async function stop(child: ChildProcess, graceMs = 5_000): Promise<void> {
  if (exited(child)) return;
  const gone = once(child, 'exit');
  child.kill('SIGINT');
  const timer = setTimeout(() => kill(child, 'SIGKILL'), graceMs);
  await gone;
  clearTimeout(timer);
}

export async function stopAll(): Promise<void> {
  await Promise.all([...running].map((child) => stop(child)));
}
