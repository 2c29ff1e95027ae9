/**
 * The viewer's index of a run: `<stem>.jsonl` and its `_failures.jsonl` sidecar, tailed. Each refresh reads only
 * the bytes appended since the last one (a torn last line is left for the next refresh, a file that shrank or was
 * replaced is indexed again from the start), and keeps per row only its byte range and a few numbers in growable
 * typed-array columns (~60 bytes a row), never the row itself: whole rows are read back on demand (`RowReader`),
 * so a run of a million rows costs tens of megabytes whatever its trajectories weigh. What the pages make of a row
 * read back is in ./trajectory.ts.
 */
import { open, stat, type FileHandle } from 'node:fs/promises';
import { isPlainObject } from '../config/types.js';
import { isBlank, parseLine, readRawLines } from '../runfiles/jsonl.js';
import { rewardOf } from '../runfiles/outcomes.js';
import { failuresPathFor } from '../runfiles/paths.js';
import { NG } from '../runfiles/ng-keys.js';
import type { Row } from '../runfiles/row.js';
import { skimRow, type Skimmed } from './skim.js';

export type Source = 'main' | 'failures';
export type Status = 'ok' | 'failed' | 'failed-terminal';
export const STATUSES: readonly Status[] = ['ok', 'failed', 'failed-terminal'];
const SOURCES: readonly Source[] = ['main', 'failures'];

/**
 * A row's field as the pages show it: a string as written, `absent` for a missing or null field, any other JSON
 * value (a number, or the odd object a hand-edited line holds) as its JSON text.
 */
export function fieldText(value: unknown, absent: string): string {
  if (value === undefined || value === null) return absent;
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** One indexed row, materialized from the columns for a page. */
export interface RowEntry {
  /** Position in indexing order. */
  id: number;
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
  failureClass: string | undefined;
  /** `usage.total_tokens` of the row's (partial) response, when reported. */
  tokens: number | undefined;
  /** The `run` query parameter of links to this row (`b` for the second run of a comparison). */
  run: string | undefined;
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

/** A file's identity for "has it changed since we indexed it": undefined when it does not exist. */
interface FileStamp {
  size: number;
  mtimeMs: number;
  ino: number;
}

async function stampOf(path: string): Promise<FileStamp | undefined> {
  try {
    const info = await stat(path);
    return { size: info.size, mtimeMs: info.mtimeMs, ino: info.ino };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** Unreadable lines listed at most (the count is kept beyond). */
const MAX_SKIPPED_LISTED = 100;
const STATUS_CODE: Record<Status, number> = { ok: 0, failed: 1, 'failed-terminal': 2 };

/** A growable column of numbers. */
class Column<A extends Float64Array | Uint32Array | Uint8Array> {
  data: A;
  constructor(private readonly make: (n: number) => A) {
    this.data = make(1024);
  }
  set(i: number, value: number): void {
    if (i >= this.data.length) {
      const grown = this.make(this.data.length * 2);
      grown.set(this.data);
      this.data = grown;
    }
    this.data[i] = value;
  }
}

const f64 = (): Column<Float64Array> => new Column((n) => new Float64Array(n));
const u32 = (): Column<Uint32Array> => new Column((n) => new Uint32Array(n));
const u8 = (): Column<Uint8Array> => new Column((n) => new Uint8Array(n));

interface TailState {
  stamp: FileStamp | undefined;
  /** Bytes consumed: the end of the last whole line. */
  offset: number;
  lineNo: number;
  torn: SkippedLine | undefined;
}

export class RolloutIndex {
  readonly failuresPath: string;
  size = 0;
  counts: RunCounts = { ok: 0, failed: 0, failedTerminal: 0, rewardSumOk: 0 };
  /** Bumped on every refresh that changed the index (the live page polls it). */
  generation = 0;
  /** The `run` query parameter of this run's links (undefined for the first run). */
  runParam: string | undefined;

  private readonly cols = {
    source: u8(),
    line: u32(),
    start: f64(),
    length: u32(),
    task: f64(),
    rollout: f64(),
    attempt: u32(),
    agent: u32(),
    reward: f64(),
    status: u8(),
    failureClass: u32(),
    tokens: f64(),
  };
  /** Task/rollout keys and rewards that are not plain numbers, by row id (rare). */
  private readonly oddValues = new Map<number, { task?: unknown; rollout?: unknown; reward?: unknown }>();
  private readonly names: string[] = [];
  private readonly nameIds = new Map<string, number>();
  private readonly tails: Record<Source, TailState> = { main: emptyTail(), failures: emptyTail() };
  private readonly lineIds: Record<Source, Column<Uint32Array>> = { main: u32(), failures: u32() };
  private readonly lineCount: Record<Source, number> = { main: 0, failures: 0 };
  private skippedList: SkippedLine[] = [];
  private skippedTotal = 0;
  private sorted: Uint32Array | undefined;
  private refreshing: Promise<void> | undefined;

  constructor(readonly rolloutsPath: string) {
    this.failuresPath = failuresPathFor(rolloutsPath);
  }

  get failuresPresent(): boolean {
    return this.tails.failures.stamp !== undefined;
  }

  /** Unreadable lines (at most 100 listed), including a torn last line that a run may still be writing. */
  get skipped(): SkippedLine[] {
    const torn = SOURCES.map((source) => this.tails[source].torn).filter(
      (line): line is SkippedLine => line !== undefined,
    );
    return [...this.skippedList, ...torn];
  }

  get skippedCount(): number {
    return this.skippedTotal + this.skipped.length - this.skippedList.length;
  }

  /** While a refresh is reading: bytes indexed so far and the files' sizes (undefined when caught up). */
  progress(): { indexedBytes: number; totalBytes: number } | undefined {
    if (!this.refreshing) return undefined;
    const indexedBytes = this.tails.main.offset + this.tails.failures.offset;
    const totalBytes = (this.tails.main.stamp?.size ?? 0) + (this.tails.failures.stamp?.size ?? 0);
    return { indexedBytes, totalBytes };
  }

  /**
   * Brings the index up to date with the files (one refresh at a time; callers share it). Reading yields to the
   * event loop between chunks, and the index is usable (and consistent) at any moment of a refresh.
   */
  refresh(): Promise<void> {
    this.refreshing ??= this.catchUp().finally(() => {
      this.refreshing = undefined;
    });
    return this.refreshing;
  }

  private async catchUp(): Promise<void> {
    const stamps = { main: await stampOf(this.rolloutsPath), failures: await stampOf(this.failuresPath) };
    // A file that shrank or was replaced invalidates everything indexed from it: start over.
    const rewritten = SOURCES.some((source) => {
      const before = this.tails[source];
      const now = stamps[source];
      return (
        before.stamp !== undefined && (now === undefined || now.ino !== before.stamp.ino || now.size < before.offset)
      );
    });
    if (rewritten) this.reset();
    let changed = rewritten;
    for (const source of SOURCES) {
      const tail = this.tails[source];
      const now = stamps[source];
      const same =
        tail.stamp !== undefined &&
        now !== undefined &&
        tail.stamp.size === now.size &&
        tail.stamp.mtimeMs === now.mtimeMs;
      tail.stamp = now;
      if (now === undefined || same) continue;
      changed = true;
      await this.tailFile(source);
    }
    if (changed) {
      this.sorted = undefined;
      this.generation++;
    }
  }

  private reset(): void {
    this.size = 0;
    this.counts = { ok: 0, failed: 0, failedTerminal: 0, rewardSumOk: 0 };
    this.oddValues.clear();
    for (const source of SOURCES) {
      this.tails[source] = emptyTail();
      this.lineCount[source] = 0;
    }
    this.skippedList = [];
    this.skippedTotal = 0;
  }

  private async tailFile(source: Source): Promise<void> {
    const tail = this.tails[source];
    tail.torn = undefined;
    const path = source === 'main' ? this.rolloutsPath : this.failuresPath;
    for await (const line of readRawLines(path, { offset: tail.offset, lineNo: tail.lineNo })) {
      if (!line.terminated) {
        // Possibly still being written: not consumed, looked at again on the next refresh.
        if (!isBlank(line.bytes))
          tail.torn = {
            source,
            line: line.lineNo,
            reason: 'incomplete last line (a torn write, or a run still writing it)',
          };
        break;
      }
      tail.offset = line.start + line.bytes.length + 1;
      tail.lineNo = line.lineNo;
      if (isBlank(line.bytes)) continue;
      const skimmed = skimRow(line.bytes);
      if (skimmed) {
        this.add(skimmed, source, line.lineNo, line.start, line.bytes.length);
        continue;
      }
      const parsed = parseLine(line.bytes);
      if (parsed.ok && isPlainObject(parsed.value))
        this.add(parsed.value, source, line.lineNo, line.start, line.bytes.length);
      else
        this.skip({
          source,
          line: line.lineNo,
          reason: parsed.ok ? 'not a JSON object' : `not valid JSON (${parsed.reason})`,
        });
    }
    // The offset stops at a line boundary; a CRLF file's `\r` is inside the counted bytes already.
  }

  private skip(line: SkippedLine): void {
    this.skippedTotal++;
    if (this.skippedList.length < MAX_SKIPPED_LISTED) this.skippedList.push(line);
  }

  private nameId(name: string): number {
    let id = this.nameIds.get(name);
    if (id === undefined) {
      id = this.names.length;
      this.names.push(name);
      this.nameIds.set(name, id);
    }
    return id;
  }

  private add(row: Skimmed | Row, source: Source, line: number, start: number, length: number): void {
    const id = this.size++;
    const c = this.cols;
    const failureClass = row[NG.failureClass];
    const failed = source === 'failures' || (failureClass !== undefined && failureClass !== null);
    const status: Status = !failed ? 'ok' : row[NG.failureTerminal] === true ? 'failed-terminal' : 'failed';
    c.source.set(id, source === 'main' ? 0 : 1);
    c.line.set(id, line);
    c.start.set(id, start);
    c.length.set(id, length);
    const odd: { task?: unknown; rollout?: unknown; reward?: unknown } = {};
    const numberOr = (value: unknown, key: 'task' | 'rollout' | 'reward'): number => {
      if (typeof value === 'number' && Number.isFinite(value)) return value;
      if (value !== undefined) odd[key] = value;
      return Number.NaN;
    };
    c.task.set(id, numberOr(row[NG.taskIndex], 'task'));
    c.rollout.set(id, numberOr(row[NG.rolloutIndex], 'rollout'));
    c.reward.set(id, numberOr(row.reward, 'reward'));
    if (Object.keys(odd).length > 0) this.oddValues.set(id, odd);
    const attempt = row[NG.attemptIndex];
    c.attempt.set(id, typeof attempt === 'number' && attempt >= 0 ? attempt : 0);
    const ref = row.agent_ref;
    c.agent.set(id, this.nameId(isPlainObject(ref) && typeof ref.name === 'string' ? ref.name : '(no agent_ref)'));
    c.status.set(id, STATUS_CODE[status]);
    c.failureClass.set(id, failed ? this.nameId(fieldText(failureClass, 'unknown')) + 1 : 0);
    const response = failed ? row[NG.partialResponse] : row.response;
    const usage = isPlainObject(response) ? response.usage : undefined;
    const tokens = isPlainObject(usage) && typeof usage.total_tokens === 'number' ? usage.total_tokens : Number.NaN;
    c.tokens.set(id, tokens);
    this.lineIds[source].set(this.lineCount[source]++, id);
    if (status === 'ok') {
      this.counts.ok++;
      this.counts.rewardSumOk += rewardOf({ reward: odd.reward ?? row.reward });
    } else if (status === 'failed') this.counts.failed++;
    else this.counts.failedTerminal++;
  }

  entry(id: number): RowEntry {
    const c = this.cols;
    const odd = this.oddValues.get(id);
    const num = (value: number, key: 'task' | 'rollout' | 'reward'): unknown =>
      Number.isNaN(value) ? odd?.[key] : value;
    const classId = c.failureClass.data[id]!;
    const tokens = c.tokens.data[id]!;
    return {
      id,
      source: c.source.data[id] === 0 ? 'main' : 'failures',
      line: c.line.data[id]!,
      start: c.start.data[id]!,
      length: c.length.data[id]!,
      task: num(c.task.data[id]!, 'task'),
      rollout: num(c.rollout.data[id]!, 'rollout'),
      attempt: c.attempt.data[id]!,
      agent: this.names[c.agent.data[id]!]!,
      reward: num(c.reward.data[id]!, 'reward'),
      status: STATUSES[c.status.data[id]!]!,
      failureClass: classId === 0 ? undefined : this.names[classId - 1],
      tokens: Number.isNaN(tokens) ? undefined : tokens,
      run: this.runParam,
    };
  }

  statusOf(id: number): Status {
    return STATUSES[this.cols.status.data[id]!]!;
  }

  /** The row's numeric reward (NaN when absent or not a number) and token count (NaN when unreported). */
  rewardNumber(id: number): number {
    return this.cols.reward.data[id]!;
  }

  tokensNumber(id: number): number {
    return this.cols.tokens.data[id]!;
  }

  /** The task key as a Map key: the number, or the odd value's text. */
  taskKey(id: number): number | string {
    const task = this.cols.task.data[id]!;
    return Number.isNaN(task) ? `~${JSON.stringify(this.oddValues.get(id)?.task ?? null)}` : task;
  }

  rolloutKey(id: number): number | string {
    const rollout = this.cols.rollout.data[id]!;
    return Number.isNaN(rollout) ? `~${JSON.stringify(this.oddValues.get(id)?.rollout ?? null)}` : rollout;
  }

  /** Row ids sorted by (task, rollout, attempt), failures before the success of the same attempt. */
  order(): Uint32Array {
    if (this.sorted && this.sorted.length === this.size) return this.sorted;
    const ids = new Uint32Array(this.size);
    for (let i = 0; i < ids.length; i++) ids[i] = i;
    const c = this.cols;
    const key = (value: number, id: number, which: 'task' | 'rollout'): unknown =>
      Number.isNaN(value) ? this.oddValues.get(id)?.[which] : value;
    const compareKey = (a: number, b: number, ia: number, ib: number, which: 'task' | 'rollout'): number => {
      const aNum = !Number.isNaN(a);
      const bNum = !Number.isNaN(b);
      if (aNum && bNum) return a - b;
      if (aNum !== bNum) return aNum ? -1 : 1;
      return fieldText(key(a, ia, which), '').localeCompare(fieldText(key(b, ib, which), ''));
    };
    const task = c.task.data;
    const rollout = c.rollout.data;
    const attempt = c.attempt.data;
    const source = c.source.data;
    ids.sort(
      (a, b) =>
        (task[a] === task[b] ? 0 : compareKey(task[a]!, task[b]!, a, b, 'task')) ||
        (rollout[a] === rollout[b] ? 0 : compareKey(rollout[a]!, rollout[b]!, a, b, 'rollout')) ||
        attempt[a]! - attempt[b]! ||
        source[b]! - source[a]! ||
        a - b,
    );
    this.sorted = ids;
    return ids;
  }

  /** The row on `line` of a file, by binary search over that file's rows (indexed in line order). */
  find(source: Source, line: number): RowEntry | undefined {
    const ids = this.lineIds[source].data;
    const lines = this.cols.line.data;
    let lo = 0;
    let hi = this.lineCount[source] - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const at = lines[ids[mid]!]!;
      if (at === line) return this.entry(ids[mid]!);
      if (at < line) lo = mid + 1;
      else hi = mid - 1;
    }
    return undefined;
  }

  /** The last `n` rows indexed, newest first (what a live page shows landing). */
  recent(n: number): RowEntry[] {
    const out: RowEntry[] = [];
    for (let id = this.size - 1; id >= 0 && out.length < n; id--) out.push(this.entry(id));
    return out;
  }
}

function emptyTail(): TailState {
  return { stamp: undefined, offset: 0, lineNo: 0, torn: undefined };
}

/** The file changed under the index (rewritten, truncated): the caller re-indexes. */
export class StaleIndexError extends Error {
  constructor(path: string, line: number) {
    super(`${path}:${line} no longer holds the row that was indexed there; the file changed`);
    this.name = 'StaleIndexError';
  }
}

/** Reads indexed rows back from their files, sharing one open handle per file. */
export class RowReader {
  private readonly handles = new Map<Source, Promise<FileHandle>>();

  constructor(private readonly index: RolloutIndex) {}

  async read(entry: RowEntry): Promise<Row> {
    const path = entry.source === 'main' ? this.index.rolloutsPath : this.index.failuresPath;
    let handle = this.handles.get(entry.source);
    if (!handle) this.handles.set(entry.source, (handle = open(path, 'r')));
    const buffer = Buffer.allocUnsafe(entry.length);
    const { bytesRead } = await (await handle).read(buffer, 0, entry.length, entry.start);
    const parsed = parseLine(buffer.subarray(0, bytesRead));
    if (!parsed.ok || !isPlainObject(parsed.value)) throw new StaleIndexError(path, entry.line);
    return parsed.value;
  }

  async close(): Promise<void> {
    for (const handle of this.handles.values()) await (await handle.catch(() => undefined))?.close();
  }
}

/** Read one indexed row back from its file. */
export async function readRow(index: RolloutIndex, entry: RowEntry): Promise<Row> {
  const reader = new RowReader(index);
  try {
    return await reader.read(entry);
  } finally {
    await reader.close();
  }
}
