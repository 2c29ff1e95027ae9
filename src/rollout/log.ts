/**
 * The remote agent's log lines. Quality warnings and failure lines repeat once per rollout, so each kind is
 * throttled the way the reference throttles them: occurrences 1–5 are printed, then every 100th, and
 * the printed line carries the running count so a reader knows how many were skipped.
 */

export type LogSink = (line: string) => void;

export const stdoutSink: LogSink = (line) => {
  process.stdout.write(`${line}\n`);
};

export function isThrottledOccurrencePrinted(n: number): boolean {
  return n <= 5 || n % 100 === 0;
}

export type WarningKind = 'no_usage' | 'mixed_usage' | 'skills_ref';

export class AgentLog {
  private readonly counts = new Map<string, number>();

  constructor(private readonly sink: LogSink = stdoutSink) {}

  warn(kind: WarningKind, message: string): void {
    const n = this.count(kind);
    if (isThrottledOccurrencePrinted(n)) this.sink(`WARNING: [remote_agent] ${message} (occurrence #${n})`);
  }

  rolloutFailed(error: string): void {
    const n = this.count('rollout_failed');
    if (isThrottledOccurrencePrinted(n)) this.sink(`[remote_agent] rollout failed (failure #${n}): ${error}`);
  }

  /** Unthrottled, for start-up notes and the debug knob. */
  line(text: string): void {
    this.sink(text);
  }

  private count(kind: string): number {
    const n = (this.counts.get(kind) ?? 0) + 1;
    this.counts.set(kind, n);
    return n;
  }
}
