import path from 'node:path';
import { writeCounterRows } from '../resources_servers/example_session_state_mgmt/scripts/generate.js';
import { collect, type CollectResult, type RunningGym } from './gym.js';
import { delta, type ProcSample } from './procs.js';
import type { RunningService, ServiceOptions } from './service.js';

/**
 * What every scenario of `npm run bench` shares: the context run.ts hands it, the counter workload, and the steps
 * that turn a collection into trustworthy numbers (datasets, a run that must earn reward 1 throughout, tsgym's CPU
 * and I/O per process). Figures are ratios of two things measured side by side in one run; absolute times go to
 * the notes, for context only.
 */

export interface BenchContext {
  workDir: string;
  service: RunningService;
  /** When set, scenario 1's tsgym processes record CPU profiles here. */
  profileDir?: string;
  /** The git revision scenario 8 compares with. */
  baselineRev: string;
  log(line: string): void;
}

export const COUNTER: ServiceOptions = { steps: 4, itemBytes: 0, delayMs: 0 };
export const MIB = 1024 * 1024;
/** How long one collection may take (180 s; `TSGYM_BENCH_RUN_TIMEOUT_SECS` raises it on a loaded machine). */
export const RUN_TIMEOUT_MS = Number(process.env.TSGYM_BENCH_RUN_TIMEOUT_SECS ?? 180) * 1000;

export async function dataset(ctx: BenchContext, rows: number): Promise<string> {
  const file = path.join(ctx.workDir, `counter-${rows}.jsonl`);
  await writeCounterRows(file, rows, 7);
  return file;
}

let runs = 0;
export function outputDir(ctx: BenchContext, label: string): string {
  return path.join(ctx.workDir, `run-${++runs}-${label}`);
}

/** Run the collector and insist every rollout completed with reward 1 (otherwise the numbers mean nothing). */
export async function collectAll(
  ctx: BenchContext,
  gym: RunningGym,
  inputPath: string,
  rollouts: number,
  concurrency: number,
  label: string,
  limit?: number,
  root?: string,
): Promise<CollectResult> {
  const profile = ctx.profileDir ? { profileDir: ctx.profileDir } : {};
  const run = await collect({
    headPort: gym.headPort,
    inputPath,
    outputDir: outputDir(ctx, label),
    concurrency,
    timeoutMs: RUN_TIMEOUT_MS,
    ...(limit ? { limit } : {}),
    ...(root ? { root } : {}),
    ...profile,
  });
  if (run.completed !== rollouts || run.firstReward !== 1) {
    const failure = run.firstFailure ? (JSON.parse(run.firstFailure) as Record<string, unknown>) : undefined;
    const why = failure
      ? `; first failure: ${JSON.stringify(failure.error ?? failure._ng_failure_class ?? run.firstFailure).slice(0, 600)}`
      : '';
    throw new Error(
      `${label}: expected ${rollouts} completed rollouts with reward 1, got ${run.completed} completed, ${run.failed} failed, first reward ${run.firstReward}${why}`,
    );
  }
  return run;
}

/** tsgym's CPU over one collection, per process: the collector's whole life plus the servers' share of it. */
export function cpuByProcess(
  before: Record<string, ProcSample>,
  after: Record<string, ProcSample>,
  run: CollectResult,
): Record<string, number> {
  const servers = Object.fromEntries(Object.keys(after).map((key) => [key, delta(before[key]!, after[key]!).cpuMs]));
  return { collector: run.collector.cpuMs, ...servers };
}

export function tsgymCpuMs(
  before: Record<string, ProcSample>,
  after: Record<string, ProcSample>,
  run: CollectResult,
): number {
  return Object.values(cpuByProcess(before, after, run)).reduce((a, b) => a + b, 0);
}

export function tsgymIoBytes(
  before: Record<string, ProcSample>,
  after: Record<string, ProcSample>,
  run: CollectResult,
): number {
  return Object.keys(after).reduce((sum, key) => sum + delta(before[key]!, after[key]!).ioBytes, run.collector.ioBytes);
}

export const perSecond = (count: number, ms: number): number => count / (ms / 1000);
