/**
 * Waiting in tests: `eventually` polls a condition no event announces (a line printed, a file grown, a process
 * gone) until it holds or a deadline passes, and fails naming what it waited for; `fileSays` is the common case of a
 * file (a server's log) coming to hold a line; `gate` is a promise a test opens by hand, to hold work at a known
 * point. So every test waits the same way.
 */
import { existsSync, readFileSync } from 'node:fs';

export interface EventuallyOptions {
  /** What is awaited, named by the error on timeout; a function is asked only then (to show the last state seen). */
  what: string | (() => string);
  /** Give up after this long. Default 10 s. */
  timeoutMs?: number;
  /** Pause between checks. Default 5 ms: pass more for a check that costs (a scan of /proc, an HTTP call). */
  intervalMs?: number;
}

/** Resolves once `condition` holds (checked at once, then every `intervalMs`); rejects naming `what` after `timeoutMs`. */
export async function eventually(
  condition: () => boolean | Promise<boolean>,
  options: EventuallyOptions,
): Promise<void> {
  const { timeoutMs = 10_000, intervalMs = 5 } = options;
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) {
      const what = typeof options.what === 'function' ? options.what() : options.what;
      throw new Error(`timed out after ${timeoutMs} ms waiting for: ${what}`);
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/**
 * Resolves once `file` exists and matches `pattern` (a server's log: its lines reach the file through a pipe at their
 * own pace, later than the server answers on a busy machine); on timeout, fails naming `why` and what the file held.
 */
export async function fileSays(file: string, pattern: RegExp, why: string, timeoutMs = 120_000): Promise<void> {
  let text = '';
  await eventually(
    () => {
      text = existsSync(file) ? readFileSync(file, 'utf8') : '';
      return pattern.test(text);
    },
    { what: () => `${why}: ${String(pattern)} in ${file}, which says:\n${text}`, timeoutMs, intervalMs: 50 },
  );
}

export interface Gate {
  /** Resolves once the gate is opened. */
  readonly opened: Promise<void>;
  open(): void;
}

/** A closed gate: whatever awaits `opened` waits until the test calls `open()`. */
export function gate(): Gate {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}
