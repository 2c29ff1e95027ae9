/**
 * The per-response rules of `gym agent check`, applied to every answer a service gives, plus Gym's reading of
 * the answer (which calls it must run, whether the rollout is finished) so the checker can carry on the
 * conversation exactly as the remote agent would.
 */
import { fillEchoFields, type EchoFill, type EchoSource } from '../contract/echo-fill.js';
import { isAssistantMessage, validateResponse, validateUsage } from '../contract/index.js';
import { isRecord, jsonValueText } from '../contract/records.js';

export type Level = 'fail' | 'warn';

export interface Finding {
  check: string;
  level: Level;
  detail: string;
  /** Overrides the check's usual fix when this finding needs another. */
  fix?: string;
}

export interface Ask {
  callId: string;
  name: string;
  arguments: unknown;
}

export interface Reading {
  findings: Finding[];
  /** False when Gym would reject the object (a terminal failure): the conversation cannot go on. */
  valid: boolean;
  /** Unpaired calls, duplicates collapsed to the last, in order of first appearance (as Gym runs them). */
  asks: Ask[];
  hasAssistantMessage: boolean;
  finalText: string | undefined;
  incomplete: boolean;
  /** What was filled in from the request before judging (`--fill-echo-fields`), as paths; else empty. */
  filled: readonly string[];
}

/** The request an answer replies to, and whether to complete the answer from it first (`--fill-echo-fields`). */
export interface AnswerContext {
  sent: EchoSource;
  fillEchoFields: boolean;
}

type Item = Record<string, unknown>;

/** The fix of a failure that the remote agent's opt-in would accept, naming the key and the flag. */
const FILL_FIX =
  'Echo tools, tool_choice and parallel_tool_calls from the request and report both usage detail objects, or set ' +
  'fill_echo_fields: true in the remote_agent config to have Gym fill them from the request (usage details as ' +
  'zeros, rows marked _ng_usage_filled); gym agent check --fill-echo-fields checks with that setting.';

/** The findings of one answer, in the order the rules run. */
class Findings {
  readonly list: Finding[] = [];

  add(check: string, level: Level, detail: string, fix?: string): void {
    this.list.push({ check, level, detail, ...(fix ? { fix } : {}) });
  }
}

/** An output item with its position in `output`. */
interface Indexed {
  item: Item;
  index: number;
}

export function inspectResponse(
  answer: Record<string, unknown>,
  declaredTools: readonly string[],
  context: AnswerContext,
): Reading {
  const findings = new Findings();
  const completed = fillEchoFields(answer, context.sent);
  // With the opt-in the completed object is what Gym goes on with; without it, it only tells whether the opt-in
  // would have accepted the answer, which the failure then says.
  const body = context.fillEchoFields ? completed.value : answer;

  const shapeOk = checkShape(body, completed, context, findings);
  checkUsage(body, completed, context, findings);

  const items = outputItems(body);
  const calls = itemsOfType(items, 'function_call');
  const outputs = itemsOfType(items, 'function_call_output');
  const outputIds = new Set(outputs.map(({ item }) => item.call_id));
  const callIds = new Set(calls.map(({ item }) => item.call_id));
  const unpaired = calls.filter(({ item }) => !outputIds.has(item.call_id));
  checkUniqueCallIds(calls, findings);
  for (const call of calls) checkCall(call, outputIds.has(call.item.call_id), declaredTools, findings);
  checkOrphanOutputs(
    outputs.filter(({ item }) => !callIds.has(item.call_id)),
    unpaired,
    findings,
  );

  const asks = asksOf(unpaired);
  const messages = items.filter((item) => item.type === 'message' && isAssistantMessage(item));
  const incomplete = body.incomplete_details !== undefined && body.incomplete_details !== null;
  if (shapeOk && asks.length === 0 && messages.length === 0 && !incomplete) {
    findings.add(
      'next-step',
      'fail',
      `the response has neither an unpaired function_call nor an assistant message (output types: ` +
        `${items.map((item) => String(item.type)).join(', ') || 'none'}); Gym fails such a rollout at once`,
    );
  }
  return {
    findings: findings.list,
    valid: shapeOk && (body.usage == null || validateUsage(body.usage).ok),
    asks,
    hasAssistantMessage: messages.length > 0,
    finalText: messages.length > 0 ? messages.map(messageText).join(' ') : undefined,
    incomplete,
    filled: context.fillEchoFields ? completed.filled : [],
  };
}

/** The Responses object without its usage (judged by its own check, so one mistake is reported once); answers whether it is valid. */
function checkShape(
  body: Record<string, unknown>,
  completed: EchoFill,
  context: AnswerContext,
  findings: Findings,
): boolean {
  const shape = validateResponse({ ...body, usage: undefined });
  if (!shape.ok) {
    const fillable = !context.fillEchoFields && validateResponse({ ...completed.value, usage: undefined }).ok;
    const detail = `invalid Responses API object: ${shape.message}`;
    if (fillable)
      findings.add(
        'responses-object',
        'fail',
        `${detail} (only fields echoing the request are missing: fill_echo_fields: true in the remote_agent config accepts this)`,
        FILL_FIX,
      );
    else findings.add('responses-object', 'fail', detail);
  }
  return shape.ok;
}

function checkUsage(
  body: Record<string, unknown>,
  completed: EchoFill,
  context: AnswerContext,
  findings: Findings,
): void {
  if (body.usage === undefined || body.usage === null) {
    findings.add('usage', 'warn', 'no usage reported (allowed, but token metrics will be empty)');
    return;
  }
  const usage = validateUsage(body.usage);
  if (!usage.ok) {
    const fillable = !context.fillEchoFields && validateUsage(completed.value.usage).ok;
    const detail = `partial usage, which Gym rejects as an invalid Responses object: ${usage.message}`;
    if (fillable)
      findings.add(
        'usage',
        'fail',
        `${detail} (only detail objects are missing: fill_echo_fields: true in the remote_agent config fills them with zeros)`,
        FILL_FIX,
      );
    else findings.add('usage', 'fail', detail);
  } else if (context.fillEchoFields && completed.usageFilled) {
    const details = completed.filled.filter((path) => path.startsWith('usage.')).join(', ');
    findings.add(
      'usage',
      'warn',
      `${details} missing, filled with zeros (--fill-echo-fields; the remote agent marks such rows _ng_usage_filled: true)`,
      "Report both usage detail objects (zero counts where the model has none) so that the token counts are all the service's own.",
    );
  }
}

/** The output items, anything that is not an object read as an empty one. */
function outputItems(body: Record<string, unknown>): Item[] {
  const output = Array.isArray(body.output) ? (body.output as unknown[]) : [];
  return output.map((item) => (typeof item === 'object' && item !== null ? (item as Item) : {}));
}

function itemsOfType(items: Item[], type: string): Indexed[] {
  return items.map((item, index) => ({ item, index })).filter(({ item }) => item.type === type);
}

function checkUniqueCallIds(calls: Indexed[], findings: Findings): void {
  const firstUse = new Map<unknown, number>();
  for (const { item, index } of calls) {
    const earlier = firstUse.get(item.call_id);
    if (earlier === undefined) firstUse.set(item.call_id, index);
    else
      findings.add(
        'unique-call-ids',
        'fail',
        `call_id ${JSON.stringify(item.call_id)} is used by output[${earlier}] and output[${index}]`,
      );
  }
}

/** A call's arguments (JSON text; an object when Gym is to run it) and, when Gym is to run it, its tool's declaration. */
function checkCall(
  { item, index }: Indexed,
  paired: boolean,
  declaredTools: readonly string[],
  findings: Findings,
): void {
  const args = item.arguments;
  if (typeof args !== 'string') {
    findings.add(
      'arguments',
      'fail',
      `output[${index}].arguments is ${kind(args)}, not JSON text (encode it: JSON.stringify(args))`,
    );
  } else if (!paired) {
    checkArgumentsObject(args, index, findings);
  }
  if (!paired && typeof item.name === 'string' && !declaredTools.includes(item.name)) {
    findings.add(
      'declared-tools',
      'fail',
      `output[${index}] asks for '${item.name}', which the request did not declare ` +
        `(declared: ${declaredTools.join(', ') || 'none'})`,
    );
  }
}

function checkArgumentsObject(args: string, index: number, findings: Findings): void {
  let parsed: unknown;
  try {
    parsed = JSON.parse(args);
    if (kind(parsed) !== 'an object') {
      findings.add(
        'arguments',
        'fail',
        `output[${index}].arguments is JSON ${kind(parsed)}, not an object: ${excerpt(args)}`,
      );
    }
  } catch {
    findings.add('arguments', 'fail', `output[${index}].arguments is not valid JSON: ${excerpt(args)}`);
  }
}

/** Outputs for calls this response does not have: a failure beside an unpaired call (Gym runs it again), else a warning. */
function checkOrphanOutputs(orphans: Indexed[], unpaired: Indexed[], findings: Findings): void {
  for (const { item, index } of orphans) {
    if (unpaired.length > 0) {
      const call = unpaired[0]!;
      findings.add(
        'pairing',
        'fail',
        `output[${index}] is a function_call_output for call_id ${JSON.stringify(item.call_id)}, which no call in this ` +
          `response has, next to the unpaired call output[${call.index}] ('${String(call.item.name)}', call_id ` +
          `${JSON.stringify(call.item.call_id)}): Gym will run that tool again`,
      );
    } else {
      findings.add(
        'pairing',
        'warn',
        `output[${index}] is a function_call_output for call_id ${JSON.stringify(item.call_id)}, which no call in this response has`,
      );
    }
  }
}

/** Gym's reading: duplicates collapse to the last occurrence, run in order of first appearance. */
function asksOf(unpaired: Indexed[]): Ask[] {
  const asks = new Map<unknown, Ask>();
  for (const { item } of unpaired) {
    const ask = { callId: String(item.call_id), name: String(item.name), arguments: item.arguments };
    asks.set(item.call_id, ask); // a Map keeps a key's first position when its value is replaced
  }
  return [...asks.values()];
}

/** An ask as a report shows it: the tool name with its arguments, e.g. `increment_counter({"count":1})`. */
export function askText(ask: Ask): string {
  return `${ask.name}(${typeof ask.arguments === 'string' ? ask.arguments : JSON.stringify(ask.arguments)})`;
}

function messageText(item: Item): string {
  if (typeof item.content === 'string') return item.content;
  if (!Array.isArray(item.content)) return '';
  return item.content.map((part) => (isRecord(part) ? jsonValueText(part.text) : '')).join(' ');
}

function kind(value: unknown): string {
  if (value === null) return 'null';
  if (value === undefined) return 'missing';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  return `a ${typeof value}`;
}

function excerpt(text: string): string {
  return JSON.stringify(text.length > 60 ? `${text.slice(0, 60)}…` : text);
}
