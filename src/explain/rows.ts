/**
 * What `gym eval explain` reads: every row of one task (or one rollout of it) from a run's files, found by streaming
 * `<stem>.jsonl` and `<stem>_failures.jsonl` line by line (a run of any size costs one row of memory beyond the
 * matches), the run's `<stem>_status.json` when present, and the task's lines of `<stem>_materialized_inputs.jsonl`.
 * Rows written by NeMo Gym carry none of tsgym's extras; every field is read as optional.
 */
import { existsSync, readFileSync } from 'node:fs';
import { isPlainObject } from '../config/types.js';
import { ConfigError } from '../errors.js';
import { malformedLine, parseLine, readRawLines } from '../runfiles/jsonl.js';
import { failuresPathFor, materializedInputsPathFor, statusPathFor } from '../runfiles/paths.js';
import { NG } from '../runfiles/ng-keys.js';
import type { Row } from '../runfiles/row.js';

/** One row found, with where it came from (`file:line` in the account). */
export interface FoundRow {
  row: Row;
  file: string;
  lineNo: number;
  /** A line of the failures sidecar (or any row with a failure class). */
  failure: boolean;
}

export interface Selection {
  task: number;
  /** undefined: every rollout of the task. */
  rollout: number | undefined;
}

export interface RunFiles {
  rolloutsPath: string;
  failuresPath: string;
  rows: FoundRow[];
  /** The parsed status file, or undefined when there is none (a NeMo Gym run) or it cannot be read. */
  status: Row | undefined;
  /** The materialized input lines of the selection, in file order. */
  inputs: Row[];
  inputsPath: string;
}

/** `812` or `812:1` → the selection; anything else is the user's to fix. */
export function parseSelection(text: string): Selection {
  const match = /^(\d+)(?::(\d+))?$/.exec(text.trim());
  if (!match) {
    throw new ConfigError(
      `'${text}' is not a task: write TASK or TASK:ROLLOUT with the row's ${NG.taskIndex} and ${NG.rolloutIndex}, ` +
        'e.g. gym eval explain results/rollouts.jsonl 812 or … 812:1.',
      'GYM_CONFIG_EXPLAIN_TASK',
    );
  }
  return { task: Number(match[1]), rollout: match[2] === undefined ? undefined : Number(match[2]) };
}

function selects(row: Row, selection: Selection): boolean {
  if (row[NG.taskIndex] !== selection.task) return false;
  return selection.rollout === undefined || row[NG.rolloutIndex] === selection.rollout;
}

async function scan(file: string, selection: Selection, into: FoundRow[], sidecar: boolean): Promise<void> {
  for await (const line of readRawLines(file)) {
    // A torn last line (a collector killed mid-write) is not a row yet.
    if (!line.terminated) break;
    // Cheap pre-filter: a row of this task names its index as a number somewhere on the line.
    if (!line.bytes.includes(String(selection.task))) continue;
    const parsed = parseLine(line.bytes);
    if (!parsed.ok) throw malformedLine(file, line.lineNo, parsed.reason);
    if (!isPlainObject(parsed.value)) throw malformedLine(file, line.lineNo, 'not a JSON object');
    const row = parsed.value;
    if (!selects(row, selection)) continue;
    const failureClass = row[NG.failureClass];
    const failure = sidecar || (failureClass !== undefined && failureClass !== null);
    into.push({ row, file, lineNo: line.lineNo, failure });
  }
}

function readStatus(file: string): Row | undefined {
  if (!existsSync(file)) return undefined;
  try {
    const value: unknown = JSON.parse(readFileSync(file, 'utf8'));
    return isPlainObject(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

export async function readRunFiles(rolloutsPath: string, selection: Selection): Promise<RunFiles> {
  const failuresPath = failuresPathFor(rolloutsPath);
  const inputsPath = materializedInputsPathFor(rolloutsPath);
  if (!existsSync(rolloutsPath) && !existsSync(failuresPath)) {
    throw new ConfigError(
      `${rolloutsPath} does not exist (nor its failures sidecar ${failuresPath}). Name the rollouts file a run ` +
        'wrote with gym eval run -o PATH (or NeMo Gym’s output_jsonl_fpath).',
      'GYM_CONFIG_EXPLAIN_FILE',
    );
  }
  const rows: FoundRow[] = [];
  if (existsSync(rolloutsPath)) await scan(rolloutsPath, selection, rows, false);
  if (existsSync(failuresPath)) await scan(failuresPath, selection, rows, true);
  const inputs: FoundRow[] = [];
  if (existsSync(inputsPath)) await scan(inputsPath, selection, inputs, false);
  return {
    rolloutsPath,
    failuresPath,
    rows,
    status: readStatus(statusPathFor(rolloutsPath)),
    inputs: inputs.map((found) => found.row),
    inputsPath,
  };
}
