/**
 * The viewer's index of a run: one streaming pass over `<stem>.jsonl` and its `_failures.jsonl` sidecar keeps, per
 * row, its byte range and the few fields the table shows. Whole rows are read back on demand, so a file of any size
 * costs memory in proportion to its row count, not its bytes.
 */
import { open, stat } from 'node:fs/promises';
import { isPlainObject } from '../config/types.js';
import { isBlank, parseLine, readRawLines } from '../collect/jsonl.js';
import { agentNameOfRow, rewardOf } from '../collect/outcomes.js';
import { failuresPathFor } from '../collect/paths.js';

export type Source = 'main' | 'failures';
export type Status = 'ok' | 'failed' | 'failed-terminal';
export const STATUSES: readonly Status[] = ['ok', 'failed', 'failed-terminal'];

export type Row = Record<string, unknown>;

export interface RowEntry {
  source: Source;
  /** 1-based line number in its file. */
  line: number;
  /** Byte range of the line, to read the row back. */
  start: number;
  length: number;
  task: unknown;
  rollout: unknown;
  attempt: number;
  agent: string;
  /** The row's `reward` as written (undefined when absent). */
  reward: unknown;
  status: Status;
  /** Trajectory items counted by type, e.g. `3 calls · 3 outputs · 1 message`. */
  steps: string;
  errorExcerpt: string | undefined;
}

export interface SkippedLine {
  source: Source;
  line: number;
  reason: string;
}

export interface RunCounts {
  ok: number;
  failed: number;
  failedTerminal: number;
  /** Sum of rewards over the successful rows. */
  rewardSumOk: number;
}

export interface RolloutIndex {
  rolloutsPath: string;
  failuresPath: string;
  failuresPresent: boolean;
  /** Sorted by (task, rollout, attempt), failures before the success of the same attempt. */
  rows: RowEntry[];
  skipped: SkippedLine[];
  counts: RunCounts;
  find(source: Source, line: number): RowEntry | undefined;
}

/** A file's identity for "has it changed since we indexed it": undefined when it does not exist. */
export interface FileStamp {
  size: number;
  mtimeMs: number;
}

export async function stampOf(path: string): Promise<FileStamp | undefined> {
  try {
    const info = await stat(path);
    return { size: info.size, mtimeMs: info.mtimeMs };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

export function sameStamp(a: FileStamp | undefined, b: FileStamp | undefined): boolean {
  return a === b || (a !== undefined && b !== undefined && a.size === b.size && a.mtimeMs === b.mtimeMs);
}

const ERROR_EXCERPT_CHARS = 160;

/** Index the rollouts file and, when it exists, its failures sidecar. The rollouts file must exist. */
export async function indexRun(rolloutsPath: string, failuresPresent: boolean): Promise<RolloutIndex> {
  const failuresPath = failuresPathFor(rolloutsPath);
  const rows: RowEntry[] = [];
  const skipped: SkippedLine[] = [];
  await indexFile(rolloutsPath, 'main', rows, skipped);
  if (failuresPresent) await indexFile(failuresPath, 'failures', rows, skipped);
  rows.sort(compareEntries);

  const counts: RunCounts = { ok: 0, failed: 0, failedTerminal: 0, rewardSumOk: 0 };
  const byKey = new Map<string, RowEntry>();
  for (const entry of rows) {
    byKey.set(`${entry.source}:${entry.line}`, entry);
    if (entry.status === 'ok') {
      counts.ok++;
      counts.rewardSumOk += rewardOf({ reward: entry.reward });
    } else if (entry.status === 'failed') counts.failed++;
    else counts.failedTerminal++;
  }
  return {
    rolloutsPath,
    failuresPath,
    failuresPresent,
    rows,
    skipped,
    counts,
    find: (source, line) => byKey.get(`${source}:${line}`),
  };
}

async function indexFile(path: string, source: Source, rows: RowEntry[], skipped: SkippedLine[]): Promise<void> {
  for await (const line of readRawLines(path)) {
    if (isBlank(line.bytes)) continue;
    const parsed = parseLine(line.bytes);
    if (!parsed.ok || !isPlainObject(parsed.value)) {
      const reason = !line.terminated
        ? 'incomplete last line (a torn write, or a run still writing it)'
        : parsed.ok
          ? 'not a JSON object'
          : `not valid JSON (${parsed.reason})`;
      skipped.push({ source, line: line.lineNo, reason });
      continue;
    }
    rows.push(summarize(parsed.value, source, line.lineNo, line.start, line.bytes.length));
  }
}

function summarize(row: Row, source: Source, line: number, start: number, length: number): RowEntry {
  const failed = source === 'failures' || (row._ng_failure_class !== undefined && row._ng_failure_class !== null);
  const error = row.error === undefined || row.error === null ? undefined : typeof row.error === 'string' ? row.error : JSON.stringify(row.error);
  return {
    source,
    line,
    start,
    length,
    task: row._ng_task_index,
    rollout: row._ng_rollout_index,
    attempt: typeof row._ng_attempt_index === 'number' ? row._ng_attempt_index : 0,
    agent: agentNameOfRow(row),
    reward: row.reward,
    status: !failed ? 'ok' : row._ng_failure_terminal === true ? 'failed-terminal' : 'failed',
    steps: describeSteps(trajectoryOf(row)),
    errorExcerpt: error === undefined ? undefined : excerpt(error),
  };
}

function excerpt(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > ERROR_EXCERPT_CHARS ? `${flat.slice(0, ERROR_EXCERPT_CHARS)}…` : flat;
}

/**
 * The response a row's trajectory and usage come from: a success's `response`; for a failure, the partial
 * trajectory `_ng_partial_response` (absent when no step returned), since its `response` is only a placeholder.
 */
export function responseOf(row: Row): Row | undefined {
  const isFailure = row._ng_failure_class !== undefined && row._ng_failure_class !== null;
  const response = isFailure ? row._ng_partial_response : row.response;
  return isPlainObject(response) ? response : undefined;
}

export function trajectoryOf(row: Row): unknown[] {
  const output = responseOf(row)?.output;
  return Array.isArray(output) ? output : [];
}

/** An item's kind: its `type`, or `message` for the short `{role, content}` form. */
export function itemType(item: unknown): string {
  if (!isPlainObject(item)) return 'unknown';
  if (typeof item.type === 'string') return item.type;
  return typeof item.role === 'string' ? 'message' : 'unknown';
}

const NOUNS: Record<string, [string, string]> = {
  function_call: ['call', 'calls'],
  function_call_output: ['output', 'outputs'],
  message: ['message', 'messages'],
  reasoning: ['reasoning', 'reasoning'],
};

export function describeSteps(items: readonly unknown[]): string {
  const counts = new Map<string, number>();
  for (const item of items) {
    const type = itemType(item);
    counts.set(type, (counts.get(type) ?? 0) + 1);
  }
  return [...counts]
    .map(([type, n]) => {
      const nouns = NOUNS[type];
      return `${n} ${nouns ? nouns[n === 1 ? 0 : 1] : type}`;
    })
    .join(' · ');
}

function compareKeys(a: unknown, b: unknown): number {
  const aNum = typeof a === 'number';
  const bNum = typeof b === 'number';
  if (aNum && bNum) return (a as number) - (b as number);
  if (aNum !== bNum) return aNum ? -1 : 1;
  return String(a ?? '').localeCompare(String(b ?? ''));
}

function compareEntries(a: RowEntry, b: RowEntry): number {
  return (
    compareKeys(a.task, b.task) ||
    compareKeys(a.rollout, b.rollout) ||
    a.attempt - b.attempt ||
    (a.source === b.source ? 0 : a.source === 'failures' ? -1 : 1) ||
    a.line - b.line
  );
}

/** The file changed under the index (rewritten, truncated): the caller re-indexes. */
export class StaleIndexError extends Error {
  constructor(path: string, line: number) {
    super(`${path}:${line} no longer holds the row that was indexed there; the file changed`);
    this.name = 'StaleIndexError';
  }
}

/** Read one indexed row back from its file. */
export async function readRow(index: RolloutIndex, entry: RowEntry): Promise<Row> {
  const path = entry.source === 'main' ? index.rolloutsPath : index.failuresPath;
  const handle = await open(path, 'r');
  try {
    const buffer = Buffer.allocUnsafe(entry.length);
    const { bytesRead } = await handle.read(buffer, 0, entry.length, entry.start);
    const parsed = parseLine(buffer.subarray(0, bytesRead));
    if (!parsed.ok || !isPlainObject(parsed.value)) throw new StaleIndexError(path, entry.line);
    return parsed.value;
  } finally {
    await handle.close();
  }
}
