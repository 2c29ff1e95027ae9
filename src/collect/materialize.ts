/**
 * From input lines to materialized rows (docs/design.md, "Input materialization"), streamed: memory holds one line at a
 * time plus the compact line-digest and per-task counter tables.
 *
 * `scanInput` is the cheap first pass that proves every line is a JSON object with a known agent before anything
 * is written or dispatched; `materializeRows` is the second pass that yields the rows to run, in order
 * (row-major, consecutive repeats: a0 a1 b0 b1 …).
 */
import { ConfigError } from '../errors.js';
import { isPlainObject } from '../config/types.js';
import type { AgentDirectory } from './agents.js';
import type { CollectionConfig, NumRepeats } from './config.js';
import { malformedLine, parseLine, readRawLines, type RawLine } from '../runfiles/jsonl.js';
import { LineIndexTable, TaskCounters } from '../runfiles/key-tables.js';
import type { Row } from '../runfiles/row.js';
import { NG } from '../runfiles/ng-keys.js';

const SHOWN_LINES = 10;

/** The input's lines up to `limit` (raw lines, counted before repeats). */
async function* limitedLines(path: string, limit: number | undefined): AsyncGenerator<RawLine> {
  let count = 0;
  for await (const line of readRawLines(path)) {
    if (limit !== undefined && count >= limit) return;
    count++;
    yield line;
  }
}

function parseRow(path: string, line: RawLine): Row {
  const parsed = parseLine(line.bytes);
  if (!parsed.ok) throw malformedLine(path, line.lineNo, parsed.reason);
  if (!isPlainObject(parsed.value)) {
    const kind = Array.isArray(parsed.value) ? 'an array' : parsed.value === null ? 'null' : `a ${typeof parsed.value}`;
    throw malformedLine(path, line.lineNo, `expected a JSON object, got ${kind}`);
  }
  return parsed.value;
}

/** The row's agent: its own `agent_ref.name`, else the default. Undefined when neither exists. */
function agentNameOf(path: string, lineNo: number, row: Row, defaultAgent: string | undefined): string | undefined {
  const ref = row.agent_ref;
  if (ref === undefined || ref === null) return defaultAgent;
  if (isPlainObject(ref) && typeof ref.name === 'string' && ref.name !== '') return ref.name;
  throw new ConfigError(
    `${path}:${lineNo}: agent_ref must be an object with a non-empty string "name", got ${JSON.stringify(ref)}. Fix the row, or remove agent_ref to use --agent/+agent_name.`,
    'GYM_CONFIG_AGENT_REF',
  );
}

export function repeatsFor(numRepeats: NumRepeats, agent: string): number | undefined {
  if (typeof numRepeats === 'number') return numRepeats;
  return numRepeats[agent] ?? numRepeats._default;
}

function lineList(lines: readonly number[], total: number): string {
  const shown = lines.slice(0, SHOWN_LINES).join(', ');
  return total > lines.length ? `${shown}, … (${total} rows)` : shown;
}

export interface AgentPlan {
  rows: number;
  rollouts: number;
}

export interface InputScan {
  /** Lines read (after `limit`); each is one input row. */
  rows: number;
  rollouts: number;
  perAgent: Map<string, AgentPlan>;
}

/**
 * Pass one: every line (up to `limit`) must parse as a JSON object with a known agent and a repeat count.
 * Problems are collected over the whole file and reported together, before anything is written.
 */
export async function scanInput(
  path: string,
  config: CollectionConfig,
  agents: AgentDirectory,
  warn: (line: string) => void,
): Promise<InputScan> {
  const perAgent = new Map<string, AgentPlan>();
  const noAgent: number[] = [];
  let noAgentCount = 0;
  const unknown = new Map<string, { lines: number[]; count: number }>();
  const noRepeats = new Set<string>();
  let rows = 0;
  let rollouts = 0;

  for await (const line of limitedLines(path, config.limit)) {
    const row = parseRow(path, line);
    rows++;
    const task = row[NG.taskIndex];
    if (task !== undefined && !Number.isSafeInteger(task)) {
      throw new ConfigError(
        `${path}:${line.lineNo}: ${NG.taskIndex} must be an integer, got ${JSON.stringify(task)}. Fix it, or remove it to let the collector number tasks.`,
        'GYM_CONFIG_TASK_INDEX',
      );
    }
    const agent = agentNameOf(path, line.lineNo, row, config.agentName);
    if (agent === undefined) {
      if (noAgent.length < SHOWN_LINES) noAgent.push(line.lineNo);
      noAgentCount++;
      continue;
    }
    if (agents.urlOf(agent) === undefined) {
      const entry = unknown.get(agent) ?? { lines: [], count: 0 };
      if (entry.lines.length < SHOWN_LINES) entry.lines.push(line.lineNo);
      entry.count++;
      unknown.set(agent, entry);
    }
    const n = repeatsFor(config.numRepeats, agent);
    if (n === undefined) {
      noRepeats.add(agent);
      continue;
    }
    const plan = perAgent.get(agent) ?? { rows: 0, rollouts: 0 };
    plan.rows++;
    plan.rollouts += n;
    perAgent.set(agent, plan);
    rollouts += n;
  }

  if (noAgentCount > 0) {
    throw new ConfigError(
      `No agent specified for rows at lines ${lineList(noAgent, noAgentCount)} of ${path}. Either provide +agent_name (--agent) or include agent_ref in the data. Nothing was dispatched.`,
      'GYM_CONFIG_NO_AGENT',
    );
  }
  if (noRepeats.size > 0 && typeof config.numRepeats === 'object') {
    throw new ConfigError(
      `num_repeats dict has no entry for agents ${pyList([...noRepeats])} and no '_default' fallback. Listed agents: ${pyList(Object.keys(config.numRepeats))}. Add them, or a _default.`,
      'GYM_CONFIG_NUM_REPEATS',
    );
  }
  if (unknown.size > 0) {
    const details = [...unknown]
      .map(([name, { lines, count }]) => `'${name}' (rows at lines ${lineList(lines, count)})`)
      .join('; ');
    const known = agents.names.length > 0 ? agents.names.map((name) => `'${name}'`).join(', ') : '(none)';
    throw new ConfigError(
      `Unknown agent ${details} in ${path}: ${agents.source} knows these agents: ${known}. Fix agent_ref.name in the data or --agent/+agent_name, or start the missing agent. Nothing was dispatched.`,
      'GYM_CONFIG_UNKNOWN_AGENT',
    );
  }
  if (typeof config.numRepeats === 'object') {
    const unused = Object.keys(config.numRepeats).filter((name) => name !== '_default' && !perAgent.has(name));
    if (unused.length > 0)
      warn(
        `num_repeats dict contains agent names that never appeared in input rows (possible typo?): ${pyList(unused)}`,
      );
  }
  return { rows, rollouts, perAgent };
}

function pyList(names: readonly string[]): string {
  return `[${names.map((name) => `'${name}'`).join(', ')}]`;
}

/**
 * `json.dumps` as Python writes it (`, ` and `: ` separators, non-ASCII escaped): the seed string of
 * `num_repeats_add_seed` must match the reference byte for byte.
 */
export function pythonJsonDumps(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(pythonJsonDumps).join(', ')}]`;
  if (isPlainObject(value)) {
    return `{${Object.entries(value)
      .map(([key, item]) => `${pythonJsonDumps(key)}: ${pythonJsonDumps(item)}`)
      .join(', ')}}`;
  }
  const text = JSON.stringify(value) ?? 'null';
  return text.replace(/[\u007f-\uffff]/g, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

function withSeed(params: Row, seed: number, where: string): Row {
  const metadata = isPlainObject(params.metadata) ? params.metadata : {};
  const extraBodyText = typeof metadata.extra_body === 'string' ? metadata.extra_body : '{}';
  let extraBody: unknown;
  try {
    extraBody = JSON.parse(extraBodyText);
  } catch (err) {
    throw new ConfigError(
      `${where}: responses_create_params.metadata.extra_body must be a JSON object string for num_repeats_add_seed: ${(err as Error).message}.`,
      'GYM_CONFIG_EXTRA_BODY',
    );
  }
  const seeded = { ...(isPlainObject(extraBody) ? extraBody : {}), seed };
  return { ...params, metadata: { ...metadata, extra_body: pythonJsonDumps(seeded) } };
}

export interface MaterializedRow {
  row: Row;
  /** Input line the row came from. */
  lineNo: number;
}

/**
 * Pass two: the rows to run, each stamped with `agent_ref`, merged create-params and its rollout key.
 * `inputRows` (from pass one) sizes the line-digest table once, so it never grows mid-pass.
 */
export async function* materializeRows(
  path: string,
  config: CollectionConfig,
  inputRows?: number,
): AsyncGenerator<MaterializedRow> {
  const lineIndex = new LineIndexTable(inputRows);
  const counters = new TaskCounters();
  const overrides = config.createParamsOverrides;
  const hasOverrides = Object.keys(overrides).length > 0;
  for await (const line of limitedLines(path, config.limit)) {
    const row = parseRow(path, line);
    if ((row.agent_ref === undefined || row.agent_ref === null) && config.agentName !== undefined)
      row.agent_ref = { name: config.agentName };
    if (hasOverrides && isPlainObject(row.responses_create_params)) {
      row.responses_create_params = { ...row.responses_create_params, ...overrides };
    }
    const given = row[NG.taskIndex];
    const task = given !== undefined ? (given as number) : lineIndex.indexOf(line.bytes);
    row[NG.taskIndex] = task;
    const agent = (row.agent_ref as { name: string }).name;
    const n = repeatsFor(config.numRepeats, agent) ?? 1;
    for (let i = 0; i < n; i++) {
      const rollout = counters.next(task);
      const copy: Row = { ...row, [NG.rolloutIndex]: rollout };
      if (config.numRepeatsAddSeed && isPlainObject(copy.responses_create_params)) {
        copy.responses_create_params = withSeed(copy.responses_create_params, rollout, `${path}:${line.lineNo}`);
      }
      yield { row: copy, lineNo: line.lineNo };
    }
  }
}

/** The dotted path of the first place two JSON values differ, or undefined when they are equal. */
export function firstDifference(a: unknown, b: unknown, path = ''): string | undefined {
  if (Object.is(a, b)) return undefined;
  if (Array.isArray(a) && Array.isArray(b)) {
    for (let i = 0; i < Math.max(a.length, b.length); i++) {
      const diff = firstDifference(a[i], b[i], `${path}[${i}]`);
      if (diff !== undefined) return diff;
    }
    return undefined;
  }
  if (isPlainObject(a) && isPlainObject(b)) {
    for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
      const diff = firstDifference(a[key], b[key], path ? `${path}.${key}` : key);
      if (diff !== undefined) return diff;
    }
    return undefined;
  }
  return path || '(the whole row)';
}
