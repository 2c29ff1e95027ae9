/**
 * Resume (`+resume_from_cache=true`, docs/design.md: "Resume", decisions D9/D10): what the previous run left on
 * disk, whether it belongs to the same inputs, and which keys still need a rollout.
 *
 * A key is re-dispatched when it is not in `<stem>.jsonl`, has no terminal sidecar line, and has fewer sidecar
 * attempts than the cap; a retry carries `_ng_attempt_index` = its prior attempts.
 */
import { existsSync } from 'node:fs';
import { ConfigError } from '../errors.js';
import type { CollectionConfig } from './config.js';
import { malformedLine, parseLine, readRawLines, scanRowsFile, type TornTail } from '../runfiles/jsonl.js';
import { isRolloutKey, RolloutKeyTable } from '../runfiles/key-tables.js';
import { firstDifference, materializeRows } from './materialize.js';
import type { Row } from '../runfiles/row.js';
import { NG } from '../runfiles/ng-keys.js';
import { agentNameOfRow, rewardOf, type Outcome } from '../runfiles/outcomes.js';
import type { ArtifactPaths } from '../runfiles/paths.js';

const DONE = 1;
const TERMINAL = 2;
/** The key is listed in the materialized inputs. */
const LISTED = 4;
const ATTEMPT_SHIFT = 8;

export interface CacheState {
  keys: RolloutKeyTable;
  /** Reward sums of the completed rollouts, per agent. */
  rewardByAgent: Map<string, number>;
  /** Sidecar lines that carry both indices. */
  attemptLines: number;
  tornRollouts: TornTail | undefined;
  tornFailures: TornTail | undefined;
}

export function attemptsOf(state: number | undefined): number {
  return (state ?? 0) >>> ATTEMPT_SHIFT;
}

/** The key's outcome so far, and whether resume runs it again. */
export function resumeStatus(
  state: number | undefined,
  maxAttempts: number,
): { outcome: Outcome; run: boolean; attempts: number } {
  const attempts = attemptsOf(state);
  const s = state ?? 0;
  if (s & DONE) return { outcome: 'completed', run: false, attempts };
  if (s & TERMINAL) return { outcome: 'failed_terminal', run: false, attempts };
  if (attempts > 0) return { outcome: 'failed_retryable', run: attempts < maxAttempts, attempts };
  return { outcome: 'missing', run: true, attempts };
}

/** Read what the previous run wrote: completed keys from `<stem>.jsonl`, attempts and terminal flags from the sidecar. */
export async function loadCache(paths: ArtifactPaths): Promise<CacheState> {
  const keys = new RolloutKeyTable();
  const rewardByAgent = new Map<string, number>();
  const rollouts = await scanRowsFile(paths.rollouts, (row, line) => {
    const task = row[NG.taskIndex];
    const rollout = row[NG.rolloutIndex];
    if (!isRolloutKey(task, rollout)) {
      throw new ConfigError(
        `${paths.rollouts}:${line.lineNo}: this rollout has no valid ${NG.taskIndex}/${NG.rolloutIndex}, so it cannot be matched to an input row. Remove it, or start over with ++overwrite=true.`,
        'GYM_RESUME_BAD_ROW',
      );
    }
    const state = keys.get(task, rollout as number) ?? 0;
    if (state & DONE) return;
    keys.set(task, rollout as number, state | DONE);
    const agent = agentNameOfRow(row);
    rewardByAgent.set(agent, (rewardByAgent.get(agent) ?? 0) + rewardOf(row));
  });
  let attemptLines = 0;
  const countAttempt = (row: Row): void => {
    const task = row[NG.taskIndex];
    const rollout = row[NG.rolloutIndex];
    if (!isRolloutKey(task, rollout)) return;
    attemptLines++;
    const state = keys.get(task, rollout as number) ?? 0;
    const attempts = Math.min(attemptsOf(state) + 1, 0xffffff);
    const terminal = row[NG.failureTerminal] === true ? TERMINAL : 0;
    keys.set(task, rollout as number, ((attempts << ATTEMPT_SHIFT) | (state & 0xff) | terminal) >>> 0);
  };
  const failures = existsSync(paths.failures) ? await scanRowsFile(paths.failures, countAttempt) : { torn: undefined };
  return { keys, rewardByAgent, attemptLines, tornRollouts: rollouts.torn, tornFailures: failures.torn };
}

export interface ResumePlan {
  originalRows: number;
  done: number;
  terminal: number;
  maxed: number;
  toRun: number;
  /** Distinct keys with at least one sidecar attempt. */
  attemptKeys: number;
}

function identityError(config: CollectionConfig, paths: ArtifactPaths, detail: string): ConfigError {
  return new ConfigError(
    `Cannot resume: the materialized inputs re-derived from ${config.inputPath} and the current config differ from the stored ${paths.materializedInputs}: ${detail}. Resuming would mix rollouts of two different runs into ${paths.rollouts}. Restore the original input and settings to resume, or start over with ++overwrite=true (which discards ${paths.rollouts} and ${paths.failures}).`,
    'GYM_RESUME_MISMATCH',
  );
}

function show(value: unknown): string {
  if (value === undefined) return 'absent';
  const text = JSON.stringify(value);
  return text.length > 80 ? `${text.slice(0, 80)}…` : text;
}

function valueAt(row: unknown, path: string): unknown {
  let value: unknown = row;
  for (const part of path.split(/\.|(?=\[)/)) {
    if (value === null || typeof value !== 'object') return undefined;
    const index = /^\[(\d+)\]$/.exec(part);
    value = index ? (value as unknown[])[Number(index[1])] : (value as Row)[part];
  }
  return value;
}

/**
 * D9: re-derive the materialized rows from the input and config and compare them, in order, with the stored
 * file; refuse at the first difference. Along the way, count what resume will do with each key.
 */
export async function planResume(
  inputPath: string,
  config: CollectionConfig,
  paths: ArtifactPaths,
  cache: CacheState,
  maxAttempts: number,
  inputRows?: number,
): Promise<ResumePlan> {
  const stored = readRawLines(paths.materializedInputs)[Symbol.asyncIterator]();
  const plan: ResumePlan = { originalRows: 0, done: 0, terminal: 0, maxed: 0, toRun: 0, attemptKeys: 0 };
  try {
    for await (const derived of materializeRows(inputPath, config, inputRows)) {
      const next = await stored.next();
      const task = derived.row[NG.taskIndex] as number;
      const rollout = derived.row[NG.rolloutIndex] as number;
      const where = `task ${task} rollout ${rollout} (input line ${derived.lineNo}`;
      if (next.done) {
        throw identityError(
          config,
          paths,
          `${where}) is not in the stored file, which has only ${plan.originalRows} rows`,
        );
      }
      const parsed = parseLine(next.value.bytes);
      if (!parsed.ok)
        throw malformedLine(
          paths.materializedInputs,
          next.value.lineNo,
          parsed.reason,
          'start over with ++overwrite=true',
        );
      const diff = firstDifference(derived.row, parsed.value);
      if (diff !== undefined) {
        throw identityError(
          config,
          paths,
          `first at ${where}, stored line ${next.value.lineNo}): ${diff} is ${show(valueAt(derived.row, diff))} now but ${show(valueAt(parsed.value, diff))} in the stored file`,
        );
      }
      plan.originalRows++;
      const state = cache.keys.get(task, rollout);
      cache.keys.set(task, rollout, ((state ?? 0) | LISTED) >>> 0);
      const status = resumeStatus(state, maxAttempts);
      if (status.attempts > 0) plan.attemptKeys++;
      if (status.outcome === 'completed') plan.done++;
      else if (status.outcome === 'failed_terminal') plan.terminal++;
      else if (!status.run) plan.maxed++;
      else plan.toRun++;
    }
    const extra = await stored.next();
    if (!extra.done) {
      throw identityError(
        config,
        paths,
        `the input now yields ${plan.originalRows} rows but the stored file has more (line ${extra.value.lineNo} onwards)`,
      );
    }
  } finally {
    await stored.return?.(undefined);
  }

  let stray: string | undefined;
  cache.keys.forEach((task, rollout, state) => {
    if (stray === undefined && state & DONE && !(state & LISTED)) stray = `(${task}, ${rollout})`;
  });
  if (stray !== undefined) {
    throw new ConfigError(
      `Cannot resume: ${paths.rollouts} holds rollout key ${stray}, which is not in ${paths.materializedInputs}; the two files are not from the same run. Start over with ++overwrite=true.`,
      'GYM_RESUME_MISMATCH',
    );
  }
  return plan;
}

export function describeResume(plan: ResumePlan, cache: CacheState, maxAttempts: number): string[] {
  return [
    'Resumed from cache. Found:',
    `- ${plan.originalRows} original input rows`,
    `- ${plan.done} rows already done (in main jsonl)`,
    `- ${cache.attemptLines} prior failure attempts (${plan.attemptKeys} unique tasks) in sidecar`,
    `- ${plan.terminal} sidecar-terminal (timeout_exceeded / skipped) → not retried`,
    `- ${plan.maxed} hit max_attempts=${maxAttempts} → not retried`,
    `- ${plan.toRun} rows that still need to be run`,
  ];
}
