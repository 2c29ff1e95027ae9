/**
 * The host's processes as the sandbox machinery sees them, read from /proc: listing them, and SIGKILLing the ones a
 * predicate picks. A sandbox's processes are found by their uid (each session has its own) or by the work dir their
 * bwrap command line names, so this is how stragglers that escaped their bwrap get stopped.
 */
import { readdirSync, readFileSync } from 'node:fs';

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
      found.push({
        pid: Number(name),
        ppid,
        uid,
        cmdline: readFileSync(`/proc/${name}/cmdline`, 'utf8').replaceAll('\0', ' '),
      });
    } catch {
      // It ended while we looked.
    }
  }
  return found;
}

/** SIGKILL every host process `match` selects, until none is left (bounded: a fork bomb is capped by its NPROC). */
export function killProcesses(match: (proc: HostProcess) => boolean): void {
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
