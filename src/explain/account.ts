/**
 * The account `gym eval explain` prints for one rollout: outcome and class, where the row came from, which worker ran
 * it and its trace id, the attempts seen, each step of the trajectory with its service latency, the tools asked and
 * what they returned, the failing hop with its status and the first lines of its body, and the command that re-runs
 * just that rollout. Only the files are read; every field is optional (a NeMo Gym row has none of tsgym's extras).
 */
import { isPlainObject } from '../config/types.js';
import { attemptOf } from '../runfiles/in-flight.js';
import { NG } from '../runfiles/ng-keys.js';
import { traceIdOf } from '../runfiles/trace-context.js';
import type { Row } from '../runfiles/row.js';
import type { FoundRow } from './rows.js';

export interface AccountOptions {
  /** Print tool arguments, outputs, messages and error bodies whole. */
  full: boolean;
  /** How the user named the rollouts file, for the commands the account prints. */
  rolloutsArg: string;
  status: Row | undefined;
}

const SHORT = 160;
const BODY_LINES = 5;

function clip(text: string, options: AccountOptions, max = SHORT): string {
  if (options.full) return text;
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max)}… (${flat.length} chars; --full shows all)` : flat;
}

const str = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);

function isFailure(found: FoundRow): boolean {
  return found.failure;
}

/** The rows of one rollout, in attempt order, the final one last: the success if any, else the latest failure. */
export function orderAttempts(rows: readonly FoundRow[]): FoundRow[] {
  return [...rows].sort((a, b) => {
    if (isFailure(a) !== isFailure(b)) return isFailure(a) ? -1 : 1;
    return attemptOf(a.row) - attemptOf(b.row) || a.lineNo - b.lineNo;
  });
}

function outcomeOf(found: FoundRow): string {
  if (!found.failure) return 'succeeded';
  return found.row[NG.failureTerminal] === true ? 'failed (terminal: retrying cannot help)' : 'failed (retryable)';
}

/** The trace id of a row's attempt: recorded on a failure row, else derived from the status file's salt (D25). */
export function traceIdFor(row: Row, status: Row | undefined): string | undefined {
  const recorded = str(row[NG.traceId]);
  if (recorded) return recorded;
  const salt = str(status?.trace_salt);
  return salt ? traceIdOf(salt, row[NG.taskIndex], row[NG.rolloutIndex], attemptOf(row)) : undefined;
}

/** The response a row's trajectory comes from: a success's `response`, a failure's partial `_ng_partial_response`. */
function trajectoryOf(found: FoundRow): { items: unknown[]; usage: Row | undefined; partial: boolean } {
  const response = found.failure ? found.row[NG.partialResponse] : found.row.response;
  if (!isPlainObject(response)) return { items: [], usage: undefined, partial: found.failure };
  return {
    items: Array.isArray(response.output) ? response.output : [],
    usage: isPlainObject(response.usage) ? response.usage : undefined,
    partial: found.failure,
  };
}

/**
 * Cut the flat output list into loop steps: a step is one service answer's items followed by the tool outputs Gym
 * appended for it, so a new step starts at the first non-output item after an output.
 */
export function splitSteps(items: readonly unknown[]): unknown[][] {
  const steps: unknown[][] = [];
  let current: unknown[] = [];
  let sawOutput = false;
  for (const item of items) {
    const isOutput = isPlainObject(item) && item.type === 'function_call_output';
    if (!isOutput && sawOutput) {
      steps.push(current);
      current = [];
      sawOutput = false;
    }
    current.push(item);
    if (isOutput) sawOutput = true;
  }
  if (current.length > 0) steps.push(current);
  return steps;
}

function messageText(item: Row): string {
  if (typeof item.content === 'string') return item.content;
  if (!Array.isArray(item.content)) return '';
  return item.content
    .map((part) => (isPlainObject(part) && typeof part.text === 'string' ? part.text : ''))
    .filter((text) => text !== '')
    .join(' ');
}

function describeItem(item: unknown, outputs: Map<string, string>, options: AccountOptions): string[] {
  if (!isPlainObject(item)) return [`    (not an object: ${clip(JSON.stringify(item) ?? String(item), options)})`];
  const type = typeof item.type === 'string' ? item.type : typeof item.role === 'string' ? 'message' : 'unknown';
  switch (type) {
    case 'function_call': {
      const name = str(item.name) ?? '(unnamed)';
      const args = typeof item.arguments === 'string' ? item.arguments : JSON.stringify(item.arguments ?? null);
      const lines = [`    tool ${name}(${clip(args, options)})`];
      const callId = str(item.call_id);
      const output = callId === undefined ? undefined : outputs.get(callId);
      lines.push(output === undefined ? '      → no output (never ran)' : `      → ${clip(output, options)}`);
      return lines;
    }
    case 'function_call_output':
      return [];
    case 'message':
      return [`    ${str(item.role) ?? 'assistant'} message: ${clip(messageText(item), options)}`];
    case 'reasoning': {
      const summary = Array.isArray(item.summary)
        ? item.summary.map((part) => (isPlainObject(part) && typeof part.text === 'string' ? part.text : '')).join(' ')
        : '';
      return [`    reasoning${summary ? `: ${clip(summary, options)}` : ''}`];
    }
    default:
      return [`    ${type}`];
  }
}

function outputsById(items: readonly unknown[]): Map<string, string> {
  const outputs = new Map<string, string>();
  for (const item of items) {
    if (!isPlainObject(item) || item.type !== 'function_call_output' || typeof item.call_id !== 'string') continue;
    outputs.set(item.call_id, typeof item.output === 'string' ? item.output : JSON.stringify(item.output));
  }
  return outputs;
}

function latencies(row: Row): number[] | undefined {
  const value = row[NG.stepLatencySecs];
  return Array.isArray(value) && value.every((n) => typeof n === 'number') ? value : undefined;
}

function describeSteps(found: FoundRow, options: AccountOptions): string[] {
  const { items, usage, partial } = trajectoryOf(found);
  const steps = splitSteps(items);
  const secs = latencies(found.row);
  const lines: string[] = [];
  if (steps.length === 0) {
    lines.push(
      partial ? 'Steps: none returned (the rollout failed before the service answered once).' : 'Steps: none.',
    );
  } else {
    const total = secs ? `, ${secs.reduce((a, b) => a + b, 0).toFixed(3)}s in service calls` : '';
    lines.push(`Steps (${partial ? 'partial trajectory, ' : ''}${steps.length} service answer(s)${total}):`);
    const outputs = outputsById(items);
    steps.forEach((step, index) => {
      const latency = secs?.[index];
      lines.push(`  step ${index + 1}${latency === undefined ? '' : `  ${latency.toFixed(3)}s`}`);
      for (const item of step) lines.push(...describeItem(item, outputs, options));
    });
  }
  if (usage) {
    const n = (key: string): string => (typeof usage[key] === 'number' ? String(usage[key]) : '?');
    lines.push(`Usage: ${n('input_tokens')} input, ${n('output_tokens')} output, ${n('total_tokens')} total tokens.`);
  }
  return lines;
}

/** Which hop failed, from the error text's stage prefix (src/rollout/rollout.ts). */
/** The model calls the rollout made through its model server (`ng_model_call_capture`), one line each. */
function describeModelCalls(row: Row): string[] {
  const capture = row.ng_model_call_capture;
  if (!isPlainObject(capture) || !Array.isArray(capture.calls)) return [];
  const count = (value: unknown): string => (typeof value === 'number' ? String(value) : '?');
  const lines = [`Model calls (${capture.calls.length}, rollout id ${String(capture.rollout_id)}):`];
  for (const call of capture.calls.slice(0, 200)) {
    if (!isPlainObject(call)) continue;
    const latency = typeof call.latency_total_ms === 'number' ? `${call.latency_total_ms.toFixed(0)} ms` : '? ms';
    const error = typeof call.error_category === 'string' ? `, error ${call.error_category}` : '';
    lines.push(
      `  call ${count(call.call_index)}  ${String(call.model)} (${String(call.dialect)})  HTTP ${count(call.status_code)}  ${count(call.tokens_in)} in, ${count(call.tokens_out)} out  ${latency}${error}`,
    );
  }
  if (capture.calls.length > 200) lines.push(`  … ${capture.calls.length - 200} more`);
  if (Array.isArray(capture.gaps) && capture.gaps.length > 0) {
    const codes = capture.gaps.map((gap) => (isPlainObject(gap) ? String(gap.code) : '?'));
    lines.push(`  gaps: ${codes.join(', ')}`);
  }
  return lines;
}

export function failingHop(error: string, failureClass: string, steps: number): string {
  if (failureClass === 'collector_error') return "the collector's call to the agent's /run";
  if (failureClass === 'invalid_row') return 'the dataset row itself (checked by the collector before sending)';
  if (failureClass === 'worker_lost') return 'the queue worker that held the job';
  if (error.startsWith('/seed_session')) return 'seeding the environment session (/seed_session)';
  if (error.startsWith('/verify')) return 'verifying on the environment (/verify)';
  if (error.startsWith('agent loop failed: ')) {
    const rest = error.slice('agent loop failed: '.length);
    const tool = /^\/(\S+) on the resources server|the resources server '[^']*' at \S+ \(\/(\S+?):/.exec(rest);
    if (tool) return `the tool call ${tool[1] ?? tool[2]} during step ${steps} (environment)`;
    if (/^(HTTP \d{3}|timed out|could not reach|reading the response body)/.test(rest))
      return `the service call at step ${steps + 1}`;
    return `the service's answer at step ${Math.max(steps, 1)}`;
  }
  return 'not named by the error (a row written by another collector?)';
}

function describeFailure(found: FoundRow, options: AccountOptions): string[] {
  const row = found.row;
  const error = typeof row.error === 'string' ? row.error : JSON.stringify(row.error ?? '(no error text)');
  const failureClass = str(row[NG.failureClass]) ?? 'unknown';
  const steps = splitSteps(trajectoryOf(found).items).length;
  const lines = [`Failing hop: ${failingHop(error, failureClass, steps)}`];
  const status = /HTTP (\d{3})/.exec(error);
  if (status) lines.push(`  status: ${status[1]}`);
  const body = status ? error.slice(error.indexOf(status[0]) + status[0].length).replace(/^[^:]*:\s?/, '') : error;
  const bodyLines = body.split('\n');
  const shown = options.full ? bodyLines : bodyLines.slice(0, BODY_LINES).map((line) => clip(line, options, 240));
  lines.push(`  ${status ? 'body' : 'error'}:`, ...shown.map((line) => `    | ${line}`));
  if (!options.full && bodyLines.length > BODY_LINES) lines.push(`    | … ${bodyLines.length - BODY_LINES} more lines`);
  return lines;
}

function describeAttempts(attempts: readonly FoundRow[], options: AccountOptions): string[] {
  if (attempts.length < 2) return [];
  return [
    `Attempts (${attempts.length} rows):`,
    ...attempts.map((found) => {
      const error = typeof found.row.error === 'string' ? `: ${clip(found.row.error, options, 100)}` : '';
      const cls = found.failure ? ` ${str(found.row[NG.failureClass]) ?? ''}` : '';
      return `  attempt ${attemptOf(found.row)}: ${outcomeOf(found)}${cls}${error}  (${found.file}:${found.lineNo})`;
    }),
  ];
}

function agentOf(row: Row): string | undefined {
  return isPlainObject(row.agent_ref) ? str(row.agent_ref.name) : undefined;
}

/** The commands that re-run just this rollout against running servers. */
export function rerunCommands(
  task: number,
  rollout: number | undefined,
  agent: string | undefined,
  rolloutsArg: string,
): string[] {
  const name = rollout === undefined ? `task${task}` : `task${task}_${rollout}`;
  const key = rollout === undefined ? `${task}` : `${task}:${rollout}`;
  return [
    `  gym eval explain ${rolloutsArg} ${key} --input-row > ${name}.jsonl`,
    `  gym eval run --no-serve${agent ? ` -a ${agent}` : ''} -i ${name}.jsonl -o ${name}/rollouts.jsonl`,
  ];
}

/** The account of one rollout from all its rows (attempts); `attempts` is non-empty. */
export function describeRollout(attempts: readonly FoundRow[], options: AccountOptions): string {
  const ordered = orderAttempts(attempts);
  const final = ordered[ordered.length - 1]!;
  const row = final.row;
  const task = row[NG.taskIndex] as number;
  const rolloutIndex = row[NG.rolloutIndex];
  const rollout = typeof rolloutIndex === 'number' ? rolloutIndex : undefined;
  const agent = agentOf(row);
  const cls = final.failure ? `, class ${str(row[NG.failureClass]) ?? 'unknown'}` : '';
  const reward = typeof row.reward === 'number' ? `, reward ${row.reward}` : '';
  const lines = [
    `Task ${task}, rollout ${rollout ?? '?'}: ${outcomeOf(final)}${cls}${reward}`,
    `  row: ${final.file}:${final.lineNo} (attempt ${attemptOf(row)})`,
  ];
  if (agent) lines.push(`  agent: ${agent}`);
  const worker = str(row[NG.worker]);
  if (worker) lines.push(`  worker: ${worker}`);
  const trace = traceIdFor(row, options.status);
  if (trace) lines.push(`  trace id: ${trace}`);
  const ran = row[NG.rolloutDurationSecs];
  const waited = row[NG.queueWaitSecs];
  const timing = [
    typeof ran === 'number' ? `ran ${ran}s` : '',
    typeof waited === 'number' ? `waited ${waited}s for a slot` : '',
  ].filter((part) => part !== '');
  if (timing.length > 0) lines.push(`  timing: ${timing.join(', ')}`);
  lines.push(...describeAttempts(ordered, options));
  lines.push(...describeSteps(final, options));
  lines.push(...describeModelCalls(final.row));
  if (final.failure) lines.push(...describeFailure(final, options));
  lines.push('Re-run just this rollout (against servers started with gym env start):');
  lines.push(...rerunCommands(task, rollout, agent, options.rolloutsArg));
  return `${lines.join('\n')}\n`;
}
