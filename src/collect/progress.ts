/**
 * Collection progress: on a terminal, one live line redrawn in place (done/total, rate, ETA, failures so far,
 * mean reward so far, and the rollouts that stopped making progress); otherwise (CI logs, pipes) a plain line at
 * most every few seconds.
 */
import { jsonLogs } from '../logging/log.js';

export interface ProgressSnapshot {
  done: number;
  failures: number;
  completed: number;
  rewardSum: number;
}

export interface ProgressOptions {
  total: number;
  stream: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  label?: string;
  now?: () => number;
  /** Appended to the line when given (e.g. workers connected and their throughput). */
  detail?: () => string;
  /** Minimum time between plain (non-TTY) lines. */
  plainIntervalMs?: number;
}

function clock(seconds: number): string {
  if (!Number.isFinite(seconds)) return '?';
  const s = Math.round(seconds);
  return `${Math.floor(s / 3600)}:${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}`;
}

export class ProgressReporter {
  private readonly started: number;
  private lastDraw = -Infinity;
  private lastSnapshot: ProgressSnapshot = { done: 0, failures: 0, completed: 0, rewardSum: 0 };
  private readonly tty: boolean;
  private readonly now: () => number;
  private drewLine = false;
  private stalled: readonly string[] = [];

  constructor(private readonly options: ProgressOptions) {
    this.now = options.now ?? Date.now;
    this.started = this.now();
    // json logs (src/logging/log.ts): no redrawn line, plain lines that become events.
    this.tty = options.stream.isTTY === true && !jsonLogs();
    // Plain output starts after one interval: short runs print only the final line.
    if (!this.tty) this.lastDraw = this.started;
  }

  describe(snapshot: ProgressSnapshot): string {
    const { total } = this.options;
    const elapsed = (this.now() - this.started) / 1000;
    const rate = elapsed > 0 ? snapshot.done / elapsed : 0;
    const eta = rate > 0 ? (total - snapshot.done) / rate : Number.POSITIVE_INFINITY;
    const pct = total > 0 ? Math.floor((100 * snapshot.done) / total) : 100;
    const reward = snapshot.completed > 0 ? (snapshot.rewardSum / snapshot.completed).toFixed(3) : 'n/a';
    const label = this.options.label ?? 'Collecting rollouts';
    const line = `${label}: ${snapshot.done}/${total} (${pct}%) | ${rate.toFixed(1)} rollouts/s | elapsed ${clock(elapsed)} | ETA ${clock(eta)} | failures ${snapshot.failures} | mean reward ${reward}${this.options.detail ? ` | ${this.options.detail()}` : ''}`;
    if (this.stalled.length === 0) return line;
    const named = this.stalled.slice(0, 3).join('; ');
    const more = this.stalled.length > 3 ? `; and ${this.stalled.length - 3} more` : '';
    return `${line} | stalled: ${named}${more}`;
  }

  /** The rollouts without progress for longer than stall_warning_secs (RunStatusBoard); redraws when they change. */
  setStalled(labels: readonly string[]): void {
    const changed = labels.length !== this.stalled.length || labels.some((label, i) => label !== this.stalled[i]);
    this.stalled = labels;
    if (!changed || (labels.length === 0 && !this.drewLine)) return;
    // A new stall is news: shown at once, not after the plain-line interval.
    this.lastDraw = -Infinity;
    this.update(this.lastSnapshot);
  }

  update(snapshot: ProgressSnapshot): void {
    this.lastSnapshot = snapshot;
    const now = this.now();
    const interval = this.tty ? 100 : (this.options.plainIntervalMs ?? 5000);
    if (now - this.lastDraw < interval) return;
    this.lastDraw = now;
    this.draw();
  }

  private draw(): void {
    const line = this.describe(this.lastSnapshot);
    if (this.tty) {
      const width = this.options.stream.columns ?? 0;
      this.options.stream.write(`\r\x1b[2K${width > 0 ? line.slice(0, width - 1) : line}`);
      this.drewLine = true;
    } else {
      this.options.stream.write(`${line}\n`);
    }
  }

  /** Final state, then (on a terminal) end the live line. */
  finish(): void {
    if (this.tty) {
      if (this.options.total > 0 || this.drewLine) {
        this.draw();
        this.options.stream.write('\n');
      }
    } else if (this.lastSnapshot.done > 0) {
      this.draw();
    }
  }
}
