/**
 * Rollout health (docs/artefacts.md, "Rollout health"): deterministic checks over a run's files alone — the rollouts
 * file, its failures sidecar and its materialized inputs — reported as `<stem>_quality_summary.json` and one line.
 * It does not judge answers (the reward does): it says whether the saved rollouts are complete and consistent enough
 * to trust.
 *
 * Files are streamed row by row. Per rollout key the scan keeps one uint32 in a RolloutKeyTable (rows seen, rows
 * flagged, failed, timed out, expected), and per task one digest of the first repeat's output, so memory grows with
 * the number of keys, never with the rows' size.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { isRolloutKey, RolloutKeyTable } from '../runfiles/key-tables.js';
import { parseLine, scanRowsFile, writeFileAtomic, type ParsedLine } from '../runfiles/jsonl.js';
import { NG } from '../runfiles/ng-keys.js';
import { artifactPaths } from '../runfiles/paths.js';
import type { Row } from '../runfiles/row.js';
import { failureTimedOut, outputDigest, successFindings } from './row-checks.js';

/**
 * Every check, by the name the summary uses (NeMo Gym's where it has one: `record_unreadable`,
 * `rollout_duplicate_identity`), and its scope. A `rollout` finding makes the rollout unhealthy; a `task` finding is
 * a warning about the task and changes no rollout's verdict (a deterministic agent repeats itself by design).
 */
export const CHECKS = {
  record_unreadable: 'rollout',
  rollout_duplicate_identity: 'rollout',
  rollout_missing: 'rollout',
  rollout_failed: 'rollout',
  rollout_timeout: 'rollout',
  rollout_incomplete: 'rollout',
  rollout_max_steps: 'rollout',
  rollout_unanswered_tool_call: 'rollout',
  rollout_empty_final_answer: 'rollout',
  rollout_reward_out_of_range: 'rollout',
  rollout_usage_missing: 'rollout',
  task_degenerate_repeats: 'task',
} as const;

export type CheckName = keyof typeof CHECKS;

const EXAMPLES = 10;

export interface CheckResult {
  scope: 'rollout' | 'task';
  count: number;
  /** Up to 10 rollout ids `task:rollout` (`task:*` for a task finding, `file:line` for a row without a key). */
  examples: string[];
}

export interface QualitySummary {
  /** Rollouts checked: rows of `<stem>.jsonl`, rollouts whose last word is a failure row, and rollouts missing. */
  checked: number;
  healthy: number;
  unhealthy: number;
  /** Tasks with a task-level finding (warnings; no rollout's verdict changes). */
  tasks_with_warnings: number;
  checks: Record<CheckName, CheckResult>;
  files: { rollouts: string[]; failures: string[]; materialized_inputs: string[] };
  /** NeMo Gym's quality_summary.json names for the same numbers. */
  run: {
    artifacts: { records: number };
    verdicts: { healthy: number; unhealthy: number; unobserved: number };
    issues: Record<CheckName, number>;
  };
}

/** The files one health check reads: several of each after `gym eval aggregate` (one per shard). */
export interface HealthFiles {
  rollouts: string[];
  failures: string[];
  materializedInputs: string[];
}

/** A run's own files: its rollouts file, and its sidecar and materialized inputs when they exist. */
export function runHealthFiles(rolloutsPath: string): HealthFiles {
  const paths = artifactPaths(rolloutsPath);
  return {
    rollouts: [rolloutsPath],
    failures: existsSync(paths.failures) ? [paths.failures] : [],
    materializedInputs: existsSync(paths.materializedInputs) ? [paths.materializedInputs] : [],
  };
}

// Per key state, one uint32: rows in <stem>.jsonl and rows of them flagged (each saturating at 255), then flags.
const ROWS_MASK = 0xff;
const FLAGGED_SHIFT = 8;
const FAILED = 1 << 16;
const TIMED_OUT = 1 << 17;
const EXPECTED = 1 << 18;

/** The first examples met, or (for checks settled after reading, in key-table order) the lowest keys. */
class Tally {
  count = 0;
  private readonly ids: string[] = [];
  private readonly keys: Array<[number, number]> = [];

  add(id: string): void {
    this.count++;
    if (this.ids.length < EXAMPLES) this.ids.push(id);
  }

  addKey(task: number, rollout: number): void {
    this.count++;
    const at = this.keys.findIndex(([t, r]) => task < t || (task === t && rollout < r));
    if (at >= 0) this.keys.splice(at, 0, [task, rollout]);
    else this.keys.push([task, rollout]);
    if (this.keys.length > EXAMPLES) this.keys.pop();
  }

  examples(): string[] {
    return [...this.ids, ...this.keys.map(([task, rollout]) => `${task}:${rollout}`)].slice(0, EXAMPLES);
  }
}

interface TaskRepeats {
  digest: string;
  completed: number;
  identical: boolean;
}

/** A line that does not parse becomes this marker row, so that it is reported instead of stopping the scan. */
const unreadable = new WeakSet<object>();

function tolerantParse(line: Buffer): ParsedLine {
  const parsed = parseLine(line);
  if (parsed.ok && typeof parsed.value === 'object' && parsed.value !== null && !Array.isArray(parsed.value))
    return parsed;
  const marker = {};
  unreadable.add(marker);
  return { ok: true, value: marker };
}

class HealthScan {
  private readonly keys = new RolloutKeyTable();
  private readonly tasks = new Map<number, TaskRepeats>();
  private readonly tallies = Object.fromEntries(Object.keys(CHECKS).map((name) => [name, new Tally()])) as Record<
    CheckName,
    Tally
  >;
  private records = 0;
  /** Rows without a key: checked and judged on their own, outside the run-wide checks. */
  private keylessChecked = 0;
  private keylessUnhealthy = 0;
  private listed = false;

  async read(files: HealthFiles): Promise<void> {
    for (const file of files.materializedInputs) {
      this.listed = true;
      await scanRowsFile(file, (row) => this.expect(row));
    }
    for (const file of files.rollouts)
      await scanRowsFile(file, (row, line) => this.success(row, file, line.lineNo), tolerantParse);
    for (const file of files.failures)
      await scanRowsFile(
        file,
        (row, line) => this.failure(row, `${path.basename(file)}:${line.lineNo}`),
        tolerantParse,
      );
  }

  private state(task: number, rollout: number): number {
    return this.keys.get(task, rollout) ?? 0;
  }

  private expect(row: Row): void {
    const task = row[NG.taskIndex];
    const rollout = row[NG.rolloutIndex];
    if (isRolloutKey(task, rollout))
      this.keys.set(task, rollout as number, this.state(task, rollout as number) | EXPECTED);
  }

  private success(row: Row, file: string, lineNo: number): void {
    this.records++;
    const task = row[NG.taskIndex];
    const rollout = row[NG.rolloutIndex];
    const keyed = !unreadable.has(row) && isRolloutKey(task, rollout);
    const id = keyed ? `${task}:${rollout as number}` : `${path.basename(file)}:${lineNo}`;
    const findings = unreadable.has(row) ? (['record_unreadable'] as const) : successFindings(row);
    for (const name of findings) this.tallies[name].add(id);
    if (!keyed) {
      this.keylessChecked++;
      if (findings.length > 0) this.keylessUnhealthy++;
      return;
    }
    const state = this.state(task, rollout as number);
    const rows = state & ROWS_MASK;
    const flagged = (state >>> FLAGGED_SHIFT) & ROWS_MASK;
    if (rows === 1) this.tallies.rollout_duplicate_identity.add(id);
    else if (rows === 0) this.repeatOf(task, row);
    const next =
      Math.min(rows + 1, ROWS_MASK) | (Math.min(flagged + (findings.length > 0 ? 1 : 0), ROWS_MASK) << FLAGGED_SHIFT);
    this.keys.set(task, rollout as number, ((state & ~0xffff) | next) >>> 0);
  }

  private repeatOf(task: number, row: Row): void {
    const digest = outputDigest(row);
    const seen = this.tasks.get(task);
    if (!seen) this.tasks.set(task, { digest, completed: 1, identical: true });
    else {
      seen.completed++;
      if (seen.digest !== digest) seen.identical = false;
    }
  }

  /** A failure row counts unless its key succeeded or (when inputs were read) the run never listed it. */
  private failure(row: Row, where: string): void {
    this.records++;
    const task = row[NG.taskIndex];
    const rollout = row[NG.rolloutIndex];
    if (unreadable.has(row) || !isRolloutKey(task, rollout)) {
      // A failure row that cannot be matched to a rollout still says one failed.
      this.keylessChecked++;
      this.keylessUnhealthy++;
      this.tallies[unreadable.has(row) ? 'record_unreadable' : 'rollout_failed'].add(where);
      return;
    }
    const state = this.state(task, rollout as number);
    if (state & ROWS_MASK) return;
    if (this.listed && !(state & EXPECTED)) return;
    // The latest attempt decides whether the rollout ended on a timeout.
    const timedOut = failureTimedOut(row) ? TIMED_OUT : 0;
    this.keys.set(task, rollout as number, ((state & ~TIMED_OUT) | FAILED | timedOut) >>> 0);
  }

  summary(files: HealthFiles): QualitySummary {
    let checked = this.keylessChecked;
    let unhealthy = this.keylessUnhealthy;
    const { tallies } = this;
    this.keys.forEach((task, rollout, state) => {
      const rows = state & ROWS_MASK;
      if (rows >= 2) {
        checked += rows;
        unhealthy += rows;
        // Every copy is flagged, as in NeMo Gym; the second sighting already added one example and counted one.
        tallies.rollout_duplicate_identity.count += rows - 1;
      } else if (rows === 1) {
        checked++;
        if ((state >>> FLAGGED_SHIFT) & ROWS_MASK) unhealthy++;
      } else if (state & FAILED) {
        checked++;
        unhealthy++;
        tallies.rollout_failed.addKey(task, rollout);
        if (state & TIMED_OUT) tallies.rollout_timeout.addKey(task, rollout);
      } else if (state & EXPECTED) {
        checked++;
        unhealthy++;
        tallies.rollout_missing.addKey(task, rollout);
      }
    });
    const degenerate = [...this.tasks].filter(([, repeats]) => repeats.completed >= 2 && repeats.identical);
    for (const [task] of degenerate.sort(([a], [b]) => a - b)) tallies.task_degenerate_repeats.add(`${task}:*`);
    return this.assemble(files, checked, unhealthy, degenerate.length);
  }

  private assemble(files: HealthFiles, checked: number, unhealthy: number, warnedTasks: number): QualitySummary {
    const names = Object.keys(CHECKS) as CheckName[];
    const checks = Object.fromEntries(
      names.map((name) => [
        name,
        { scope: CHECKS[name], count: this.tallies[name].count, examples: this.tallies[name].examples() },
      ]),
    ) as Record<CheckName, CheckResult>;
    const healthy = checked - unhealthy;
    return {
      checked,
      healthy,
      unhealthy,
      tasks_with_warnings: warnedTasks,
      checks,
      files: { rollouts: files.rollouts, failures: files.failures, materialized_inputs: files.materializedInputs },
      run: {
        artifacts: { records: this.records },
        verdicts: { healthy, unhealthy, unobserved: 0 },
        issues: Object.fromEntries(names.map((name) => [name, checks[name].count])) as Record<CheckName, number>,
      },
    };
  }
}

/** Run every check over the files (read-only). */
export async function checkHealth(files: HealthFiles): Promise<QualitySummary> {
  const scan = new HealthScan();
  await scan.read(files);
  return scan.summary(files);
}

/** Write the summary whole or not at all. */
export function writeQualitySummary(file: string, summary: QualitySummary): void {
  writeFileAtomic(file, `${JSON.stringify(summary, null, 2)}\n`);
}

/** `Rollout health: N checked, H healthy, U unhealthy (check count, …; warnings: task check count tasks)`. */
export type HealthCounts = Pick<QualitySummary, 'checked' | 'healthy' | 'unhealthy'> & {
  /** Partial: a summary written by an older tsgym may lack a check. */
  checks: Partial<Record<CheckName, { count: number }>>;
};

export function healthLine(summary: HealthCounts): string {
  const counted = (Object.keys(CHECKS) as CheckName[])
    .map((name) => ({ name, count: summary.checks[name]?.count ?? 0 }))
    .filter(({ count }) => count > 0);
  const rollouts = counted
    .filter(({ name }) => CHECKS[name] === 'rollout')
    .map(({ name, count }) => `${name} ${count}`);
  const tasks = counted
    .filter(({ name }) => CHECKS[name] === 'task')
    .map(({ name, count }) => `${name} ${count} task${count === 1 ? '' : 's'}`);
  const parts = [
    ...(rollouts.length > 0 ? [rollouts.join(', ')] : []),
    ...(tasks.length > 0 ? [`warnings: ${tasks.join(', ')}`] : []),
  ];
  return (
    `Rollout health: ${summary.checked} checked, ${summary.healthy} healthy, ${summary.unhealthy} unhealthy` +
    (parts.length > 0 ? ` (${parts.join('; ')})` : '')
  );
}

export interface HealthReport {
  summary: QualitySummary;
  /** Where the summary was written, or would have been. */
  path: string;
  /** Why the summary could not be written (e.g. EACCES), when it was not. */
  unwritten?: string;
}

/**
 * Check the files and write the summary to `summaryPath`. A summary that cannot be written (a read-only run
 * directory) is still returned, with the reason: the checks are a report, and a report not saved is still printed.
 */
export async function reportHealth(files: HealthFiles, summaryPath: string): Promise<HealthReport> {
  const summary = await checkHealth(files);
  try {
    writeQualitySummary(summaryPath, summary);
  } catch (err) {
    return { summary, path: summaryPath, unwritten: (err as NodeJS.ErrnoException).code ?? String(err) };
  }
  return { summary, path: summaryPath };
}

/** A run's own files, its summary as `<stem>_quality_summary.json` beside them: `gym eval run` and `gym eval health`. */
export function reportRunHealth(rolloutsPath: string): Promise<HealthReport> {
  return reportHealth(runHealthFiles(rolloutsPath), artifactPaths(rolloutsPath).qualitySummary);
}

/** The artefact line: where the summary is, or why it is not there. */
export function summaryPathLine(report: HealthReport): string {
  return report.unwritten === undefined
    ? `Quality summary: ${report.path}`
    : `Quality summary: not written (${report.unwritten} writing ${report.path})`;
}

/**
 * What `gym eval run` and `gym eval aggregate` print after their files are written: the health line (none when the
 * files could not be checked) and the summary's artefact line. A report only: a check that fails is a warning, and
 * the command ends as it would have.
 */
export async function healthReportLines(
  files: HealthFiles,
  summaryPath: string,
  warn: (line: string) => void,
): Promise<{ line: string | undefined; pathLine: string }> {
  try {
    const report = await reportHealth(files, summaryPath);
    return { line: healthLine(report.summary), pathLine: summaryPathLine(report) };
  } catch (err) {
    warn(`Rollout health was not checked: ${err instanceof Error ? err.message : String(err)}`);
    return { line: undefined, pathLine: 'Quality summary: None' };
  }
}
