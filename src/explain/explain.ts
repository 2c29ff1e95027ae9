/**
 * `gym eval explain RESULTS TASK[:ROLLOUT]`: the account of one rollout (./account.ts) from the run's files, a
 * one-line summary per rollout when a task has several, or (`--input-row`) the rollout's dataset rows as dispatched,
 * ready to feed back to `gym eval run -i` so just that rollout runs again.
 */
import { isPlainObject } from '../config/types.js';
import { ConfigError } from '../errors.js';
import { RESULT_KEYS } from '../runfiles/result-keys.js';
import { NG } from '../runfiles/ng-keys.js';
import type { Row } from '../runfiles/row.js';
import { describeRollout, orderAttempts, rerunCommands } from './account.js';
import { readRunFiles, type FoundRow, type RunFiles, type Selection } from './rows.js';

export interface ExplainRequest {
  rolloutsArg: string;
  selection: Selection;
  full: boolean;
  inputRow: boolean;
}

export interface ExplainIo {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
}

/** What a failure row carries beyond its input: the result's keys and the collector's stamps. */
const ADDED_TO_INPUT = [...RESULT_KEYS, NG.worker, NG.attemptIndex];

function byRollout(rows: readonly FoundRow[]): Map<number | undefined, FoundRow[]> {
  const groups = new Map<number | undefined, FoundRow[]>();
  for (const found of rows) {
    const rolloutIndex = found.row[NG.rolloutIndex];
    const rollout = typeof rolloutIndex === 'number' ? rolloutIndex : undefined;
    groups.set(rollout, [...(groups.get(rollout) ?? []), found]);
  }
  return new Map([...groups].sort(([a], [b]) => (a ?? -1) - (b ?? -1)));
}

function inFlightNote(files: RunFiles, selection: Selection): string | undefined {
  const inFlight = files.status?.in_flight;
  const entries: readonly unknown[] = Array.isArray(inFlight) ? inFlight : [];
  const entry = entries.find(
    (item) =>
      isPlainObject(item) &&
      item.task_index === selection.task &&
      (selection.rollout === undefined || item.rollout_index === selection.rollout),
  );
  if (!isPlainObject(entry)) return undefined;
  const step = typeof entry.step === 'number' && entry.step > 0 ? ` step ${entry.step}` : '';
  const tool = typeof entry.tool === 'string' ? ` tool ${entry.tool}` : '';
  return (
    `In flight at the status file's last write (${String(files.status?.updated_at)}): rollout ` +
    `${String(entry.rollout_index)}, attempt ${String(entry.attempt)}, stage ${String(entry.stage)}${step}${tool}.`
  );
}

function missing(files: RunFiles, request: ExplainRequest): ConfigError {
  const { task, rollout } = request.selection;
  const what = rollout === undefined ? `task ${task}` : `task ${task}, rollout ${rollout}`;
  const dispatched =
    files.inputs.length > 0 ? ` It is in ${files.inputsPath}, so it was sent but has no result yet.` : '';
  const note = inFlightNote(files, request.selection);
  return new ConfigError(
    `No row of ${what} in ${files.rolloutsPath} or ${files.failuresPath}.${dispatched}${note ? ` ${note}` : ''} ` +
      `Check the numbers against the rows’ ${NG.taskIndex} and ${NG.rolloutIndex}.`,
    'GYM_CONFIG_EXPLAIN_MISSING',
  );
}

function summaryLine(rollout: number | undefined, rows: FoundRow[]): string {
  const final = orderAttempts(rows).at(-1)!;
  const outcome = final.failure
    ? `failed ${final.row[NG.failureTerminal] === true ? 'terminal' : 'retryable'} (${String(final.row[NG.failureClass])})`
    : `ok, reward ${String(final.row.reward)}`;
  return `  rollout ${rollout ?? '?'}: ${outcome}${rows.length > 1 ? `, ${rows.length} rows` : ''}`;
}

/** The rows to run again: the materialized inputs, else the failure row without its result keys, else a sketch. */
function inputRows(files: RunFiles, io: ExplainIo): Row[] {
  if (files.inputs.length > 0) return files.inputs;
  const groups = byRollout(files.rows);
  return [...groups.values()].map((rows) => {
    const final = orderAttempts(rows).at(-1)!;
    const failure = orderAttempts(rows).find((found) => found.failure);
    if (failure) {
      const row = { ...failure.row };
      for (const key of ADDED_TO_INPUT) delete row[key];
      return row;
    }
    io.stderr.write(
      `gym eval explain: ${files.inputsPath} is missing, so task ${String(final.row[NG.taskIndex])}'s input is ` +
        "rebuilt from its success row: dataset fields the environment's /verify left out (answer keys) are not in it.\n",
    );
    const row: Row = { responses_create_params: final.row.responses_create_params };
    for (const key of ['agent_ref', NG.taskIndex, NG.rolloutIndex]) if (key in final.row) row[key] = final.row[key];
    return row;
  });
}

export async function explain(request: ExplainRequest, io: ExplainIo): Promise<number> {
  const files = await readRunFiles(request.rolloutsArg, request.selection);
  if (files.rows.length === 0 && !(request.inputRow && files.inputs.length > 0)) throw missing(files, request);
  if (request.inputRow) {
    for (const row of inputRows(files, io)) io.stdout.write(`${JSON.stringify(row)}\n`);
    return 0;
  }
  const options = { full: request.full, rolloutsArg: request.rolloutsArg, status: files.status };
  const groups = byRollout(files.rows);
  const note = inFlightNote(files, request.selection);
  if (groups.size === 1) {
    io.stdout.write(describeRollout([...groups.values()][0]!, options));
  } else {
    const { task } = request.selection;
    const lines = [`Task ${task}: ${groups.size} rollouts`];
    for (const [rollout, rows] of groups) lines.push(summaryLine(rollout, rows));
    lines.push(`Explain one: gym eval explain ${request.rolloutsArg} ${task}:ROLLOUT`);
    const agent = orderAttempts(files.rows).at(-1)!.row.agent_ref;
    lines.push('Re-run the whole task (against servers started with gym env start):');
    lines.push(
      ...rerunCommands(
        task,
        undefined,
        isPlainObject(agent) && typeof agent.name === 'string' ? agent.name : undefined,
        request.rolloutsArg,
      ),
    );
    io.stdout.write(`${lines.join('\n')}\n`);
  }
  if (note) io.stdout.write(`${note}\n`);
  return 0;
}
