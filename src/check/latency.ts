/**
 * Call latency in `gym agent check`: the `latency` check (in a real run a slow call holds a concurrency slot for
 * as long as it takes) and the p50/max figures of the report.
 */
import type { CheckSession } from './session.js';

/** Warn when the slowest answered call took longer than the session allows; otherwise note the figures. */
export function judgeLatency({ client, ledger, slowCallMs }: CheckSession): void {
  const { latencies } = client;
  const { p50, max } = percentiles(latencies);
  if (p50 === null || max === null) return;
  const text = `p50 ${formatMs(p50)}, max ${formatMs(max)} over ${latencies.length} calls`;
  if (max > slowCallMs) {
    ledger.add('latency', 'warn', `${text}: slowest call above ${slowCallMs / 1000}s`);
  } else {
    ledger.notePass('latency', text);
  }
}

/** The report's latency line: answered calls, and p50 and max in milliseconds to one decimal (null without calls). */
export function latencySummary(latencies: readonly number[]): {
  calls: number;
  p50_ms: number | null;
  max_ms: number | null;
} {
  const { p50, max } = percentiles(latencies);
  return { calls: latencies.length, p50_ms: round(p50), max_ms: round(max) };
}

function percentiles(values: readonly number[]): { p50: number | null; max: number | null } {
  if (values.length === 0) return { p50: null, max: null };
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  const p50 = sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
  return { p50, max: sorted[sorted.length - 1]! };
}

function round(value: number | null): number | null {
  return value === null ? null : Math.round(value * 10) / 10;
}

function formatMs(ms: number): string {
  return ms >= 1000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms)} ms`;
}
