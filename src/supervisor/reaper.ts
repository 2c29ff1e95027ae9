import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const REAPER_SCRIPT = fileURLToPath(new URL('./reaper-main.js', import.meta.url));

/**
 * The supervisor's side of the reaper (see `reaper-main.ts`): registers each spawned server's pid, unregisters it
 * once reaped, and closes the pipe on a clean stop. The reaper never keeps this process alive.
 */
export class Reaper {
  private readonly child: ChildProcess;
  private closed = false;

  constructor() {
    this.child = spawn(process.execPath, [REAPER_SCRIPT], { stdio: ['pipe', 'ignore', 'ignore'], detached: true });
    // If the reaper cannot run we lose only the SIGKILL safety net; the normal stop path does not depend on it.
    this.child.on('error', () => undefined);
    this.child.stdin?.on('error', () => undefined);
    this.child.unref();
    (this.child.stdin as unknown as { unref?: () => void } | null)?.unref?.();
  }

  register(pid: number): void {
    this.send(`+${pid}\n`);
  }

  unregister(pid: number): void {
    this.send(`-${pid}\n`);
  }

  /** Nothing left to guard: let the reaper exit. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.child.stdin?.end();
  }

  private send(line: string): void {
    if (!this.closed && this.child.stdin?.writable) this.child.stdin.write(line);
  }
}
