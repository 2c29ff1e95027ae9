/**
 * What a service's `decide` function returns, and the checks the kit applies to it before anything reaches the
 * wire. A decision is one of the two reasons the contract gives for returning: ask Gym to run tools, or finish.
 */
import { isRecord } from '../contract/records.js';

/** A tool the service asks Gym to execute (it becomes an unpaired `function_call`). */
export interface ToolCall {
  name: string;
  /**
   * An object (the kit encodes it), or the JSON text your model produced (sent verbatim, so Gym can feed a
   * malformed one back to you as an error output instead of the service failing). Omitted means `{}`.
   */
  arguments?: Record<string, unknown> | string;
}

/** A tool the service ran itself: it becomes a paired `function_call` + `function_call_output` record. */
export interface InternalToolRecord {
  name: string;
  arguments?: Record<string, unknown> | string;
  /** Strings are kept as they are; anything else is JSON-encoded. */
  output: unknown;
}

/** Token counts the brain spent on this call. Missing counts are reported as 0. */
export interface TokenUsage {
  inputTokens?: number;
  outputTokens?: number;
  /** Part of `inputTokens` served from a prompt cache. */
  cachedTokens?: number;
  /** Part of `outputTokens` spent on reasoning. */
  reasoningTokens?: number;
}

interface DecisionExtras {
  /** Tools the service ran itself during this call, in the order they ran. */
  internal?: InternalToolRecord[];
  usage?: TokenUsage;
  /**
   * The model's reply as it came, when the decision was read out of it (a JSON reply, a tool-call convention): it
   * goes out as an assistant message before the decision's own items (unless it is the final text itself), so the
   * row shows what the model generated. With token capture on, the rebuild finds each generation by that text; without
   * it, a row whose decisions were parsed from text would carry no trainable tokens.
   */
  modelText?: string;
}

export type Decision = ({ toolCalls: ToolCall[] } | { final: string }) & DecisionExtras;

/** A decision after the kit's checks: arguments encoded, usage complete. */
export interface CheckedDecision {
  toolCalls: { name: string; arguments: string }[] | undefined;
  final: string | undefined;
  modelText: string | undefined;
  internal: { name: string; arguments: string; output: string }[];
  usage: Required<TokenUsage>;
}

/** The service author's bug (not Gym's, not the request's): answered as HTTP 500 with this message. */
export class DecisionError extends Error {
  override readonly name = 'DecisionError';
}

/**
 * Check a decision against the request it answers. Only tools the request declared may be asked for: asking for
 * anything else is a bug in the brain that Gym would only report back as a tool error, so it fails loudly here.
 */
export function checkDecision(value: unknown, declaredTools: ReadonlySet<string>): CheckedDecision {
  if (!isRecord(value)) {
    throw new DecisionError(`decide() must return {toolCalls: [...]} or {final: '...'}, got ${describe(value)}`);
  }
  const hasCalls = value.toolCalls !== undefined;
  const hasFinal = value.final !== undefined;
  if (hasCalls === hasFinal) {
    throw new DecisionError(
      hasCalls
        ? 'decide() returned both toolCalls and final: return one of them (a response either asks for tools or finishes)'
        : "decide() must return {toolCalls: [...]} or {final: '...'}: neither was present",
    );
  }
  const internal = checkInternal(value.internal);
  const usage = checkUsage(value.usage);
  if (value.modelText !== undefined && typeof value.modelText !== 'string') {
    throw new DecisionError(
      `decide() returned modelText as ${describe(value.modelText)}: it must be the model's reply text`,
    );
  }
  const modelText = value.modelText;
  if (hasFinal) {
    if (typeof value.final !== 'string') {
      throw new DecisionError(
        `decide() returned final as ${describe(value.final)}: it must be the answer text (a string)`,
      );
    }
    return { toolCalls: undefined, final: value.final, internal, usage, modelText };
  }
  if (!Array.isArray(value.toolCalls) || value.toolCalls.length === 0) {
    throw new DecisionError(
      'decide() returned toolCalls that is not a non-empty list: ask for at least one tool, or return {final}',
    );
  }
  const toolCalls = value.toolCalls.map((call, index) => {
    const where = `toolCalls[${index}]`;
    if (!isRecord(call) || typeof call.name !== 'string' || call.name === '') {
      throw new DecisionError(`decide() returned ${where} without a tool name`);
    }
    if (!declaredTools.has(call.name)) {
      const declared = declaredTools.size ? [...declaredTools].join(', ') : 'none';
      throw new DecisionError(
        `decide() asked for tool '${call.name}' (${where}), which this request did not declare (declared: ${declared})`,
      );
    }
    return { name: call.name, arguments: encodeArguments(call.arguments, where) };
  });
  return { toolCalls, final: undefined, internal, usage, modelText };
}

function checkInternal(value: unknown): CheckedDecision['internal'] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new DecisionError('decide() returned internal that is not a list');
  return value.map((record, index) => {
    const where = `internal[${index}]`;
    if (!isRecord(record) || typeof record.name !== 'string' || record.name === '') {
      throw new DecisionError(`decide() returned ${where} without a tool name`);
    }
    if (!('output' in record)) throw new DecisionError(`decide() returned ${where} without an output`);
    const output = typeof record.output === 'string' ? record.output : JSON.stringify(record.output ?? null);
    return { name: record.name, arguments: encodeArguments(record.arguments, where), output };
  });
}

function encodeArguments(value: unknown, where: string): string {
  if (value === undefined) return '{}';
  if (typeof value === 'string') return value;
  if (isRecord(value)) return JSON.stringify(value);
  throw new DecisionError(`decide() returned ${where}.arguments as ${describe(value)}: use an object (or JSON text)`);
}

const USAGE_KEYS = ['inputTokens', 'outputTokens', 'cachedTokens', 'reasoningTokens'] as const;

function checkUsage(value: unknown): Required<TokenUsage> {
  const usage = { inputTokens: 0, outputTokens: 0, cachedTokens: 0, reasoningTokens: 0 };
  if (value === undefined) return usage;
  if (!isRecord(value)) throw new DecisionError(`decide() returned usage as ${describe(value)}: use an object`);
  for (const key of USAGE_KEYS) {
    const count = value[key];
    if (count === undefined) continue;
    if (typeof count !== 'number' || !Number.isInteger(count) || count < 0) {
      throw new DecisionError(
        `decide() returned usage.${key} = ${describe(count)}: token counts are whole numbers ≥ 0`,
      );
    }
    usage[key] = count;
  }
  return usage;
}

/**
 * Read a decision from a model's reply text in the prompt convention of the quickstart:
 * `{"tool_calls": [{"name": …, "arguments": {…}}]}` or `{"final": "…"}`. Models often wrap JSON in ```json fences
 * or add a sentence around it; both are tolerated. Throws with the text's start when there is no decision in it.
 */
export function parseJsonDecision(text: string): Decision {
  const parsed = parseJsonObject(text);
  if (Array.isArray(parsed.tool_calls) && parsed.tool_calls.length > 0) {
    const toolCalls = parsed.tool_calls.map((call: unknown, index: number): ToolCall => {
      if (!isRecord(call) || typeof call.name !== 'string') {
        throw new DecisionError(`the model's tool_calls[${index}] has no name: ${excerpt(text)}`);
      }
      const args = call.arguments;
      return { name: call.name, arguments: isRecord(args) || typeof args === 'string' ? args : {} };
    });
    return { toolCalls };
  }
  if ('final' in parsed) {
    return { final: typeof parsed.final === 'string' ? parsed.final : JSON.stringify(parsed.final) };
  }
  throw new DecisionError(`the model's reply has neither "tool_calls" nor "final": ${excerpt(text)}`);
}

function parseJsonObject(text: string): Record<string, unknown> {
  const trimmed = text.trim();
  const fenced = /^```[A-Za-z]*\s*([\s\S]*?)\s*```$/.exec(trimmed);
  let candidate = fenced ? fenced[1]! : trimmed;
  if (!candidate.startsWith('{')) {
    const start = candidate.indexOf('{');
    const end = candidate.lastIndexOf('}');
    if (start >= 0 && end > start) candidate = candidate.slice(start, end + 1);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(candidate);
  } catch {
    throw new DecisionError(`the model's reply is not a JSON decision: ${excerpt(text)}`);
  }
  if (!isRecord(parsed)) throw new DecisionError(`the model's reply is not a JSON object: ${excerpt(text)}`);
  return parsed;
}

function excerpt(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return JSON.stringify(flat.length > 200 ? `${flat.slice(0, 200)}…` : flat);
}

function describe(value: unknown): string {
  switch (typeof value) {
    case 'object':
      return value === null ? 'null' : Array.isArray(value) ? 'a list' : 'an object';
    case 'string':
      return `a string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
    default:
      return `${typeof value} ${String(value)}`;
  }
}
