/**
 * How the local brain talks to a model that has no function-calling API of its own: the declared tools are listed
 * in the system message, the conversation is replayed as chat turns, and the model's reply is held by a grammar to
 * one JSON object — `{"tool": NAME, "arguments": {…}}` for one of the declared tools (its arguments shaped by that
 * tool's parameter schema) or `{"final": TEXT}`. Nothing here needs the runtime: it is plain data in and out, so it
 * is tested without a model.
 */
import {
  messageText,
  outputText,
  type ConversationItem,
  type Decision,
  type FunctionTool,
} from '../../src/service/index.js';

/** A JSON schema in the subset node-llama-cpp turns into a grammar (its `GbnfJsonSchema`). */
export type GrammarSchema = Record<string, unknown>;

/** One turn as node-llama-cpp's chat wrappers take it (`ChatHistoryItem`, text turns only). */
export type ChatTurn = { type: 'system' | 'user'; text: string } | { type: 'model'; response: string[] };

/** The longest final answer the grammar allows, in characters (llama.cpp refuses a repetition bound of 2000 or more). */
export const FINAL_MAX_LENGTH = 1500;

const PRIMITIVES = new Set(['string', 'number', 'integer', 'boolean', 'null']);
const STRING_FORMATS = new Set(['date-time', 'time', 'date']);
const MAX_DEPTH = 24;

/** Any JSON value (for schema parts the grammar subset cannot express: `$ref`, `not`, patterns, …). */
const ANY_VALUE: GrammarSchema = {
  oneOf: [
    { type: ['string', 'number', 'boolean', 'null'] },
    { type: 'object', additionalProperties: true },
    { type: 'array' },
  ],
};

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * A tool's JSON Schema in the grammar's subset. Kept: types, `properties`, `items`, `enum`, `const`,
 * `anyOf`/`oneOf`, string lengths and date formats, array lengths. Dropped for the grammar (the environment still
 * validates the call): `required` (the grammar asks for every listed property), numeric ranges, patterns, `$ref`.
 */
export function toGrammarSchema(schema: unknown, depth = 0): GrammarSchema {
  if (!isRecord(schema) || depth > MAX_DEPTH) return ANY_VALUE;
  if ('const' in schema && isPrimitiveValue(schema.const)) return { const: schema.const };
  if (Array.isArray(schema.enum) && schema.enum.length > 0 && schema.enum.every(isPrimitiveValue)) {
    return { enum: schema.enum };
  }
  const alternatives = Array.isArray(schema.anyOf) ? schema.anyOf : Array.isArray(schema.oneOf) ? schema.oneOf : null;
  if (alternatives && alternatives.length > 0) {
    return { oneOf: alternatives.map((alternative) => toGrammarSchema(alternative, depth + 1)) };
  }
  const type = schema.type;
  if (Array.isArray(type)) {
    if (type.length > 0 && type.every((t) => typeof t === 'string' && PRIMITIVES.has(t))) return { type };
    return { oneOf: (type as unknown[]).map((t) => toGrammarSchema({ ...schema, type: t }, depth + 1)) };
  }
  switch (type) {
    case 'string': {
      const out: GrammarSchema = { type: 'string' };
      if (typeof schema.format === 'string' && STRING_FORMATS.has(schema.format)) out.format = schema.format;
      else {
        if (isCount(schema.minLength)) out.minLength = schema.minLength;
        if (isCount(schema.maxLength)) out.maxLength = schema.maxLength;
      }
      return out;
    }
    case 'number':
    case 'integer':
    case 'boolean':
    case 'null':
      return { type };
    case 'array': {
      const out: GrammarSchema = { type: 'array' };
      if (schema.items !== undefined) out.items = toGrammarSchema(schema.items, depth + 1);
      if (isCount(schema.minItems)) out.minItems = schema.minItems;
      if (isCount(schema.maxItems)) out.maxItems = schema.maxItems;
      return out;
    }
    case 'object':
      return objectSchema(schema, depth);
    default:
      return isRecord(schema.properties) ? objectSchema(schema, depth) : ANY_VALUE;
  }
}

function objectSchema(schema: Record<string, unknown>, depth: number): GrammarSchema {
  const properties = isRecord(schema.properties) ? schema.properties : {};
  const names = Object.keys(properties);
  const out: GrammarSchema = {
    type: 'object',
    properties: Object.fromEntries(names.map((name) => [name, toGrammarSchema(properties[name], depth + 1)])),
  };
  // A free-form object (no properties listed, extra keys not refused) stays free-form.
  if (names.length === 0 && schema.additionalProperties !== false) out.additionalProperties = true;
  return out;
}

function isPrimitiveValue(value: unknown): value is string | number | boolean | null {
  return value === null || ['string', 'number', 'boolean'].includes(typeof value);
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0;
}

/** What the model may answer: one call of a declared tool, or the final answer. */
export function replySchema(tools: readonly FunctionTool[]): GrammarSchema {
  const final: GrammarSchema = {
    type: 'object',
    properties: { final: { type: 'string', maxLength: FINAL_MAX_LENGTH } },
  };
  const calls = tools.map((tool) => ({
    type: 'object',
    properties: { tool: { const: tool.name }, arguments: toGrammarSchema(tool.parameters ?? { type: 'object' }) },
  }));
  return calls.length === 0 ? final : { oneOf: [...calls, final] };
}

/** The system message: the request's instructions, the tools and how to call them. */
export function systemPrompt(tools: readonly FunctionTool[], instructions: string | undefined): string {
  const lines: string[] = [];
  if (instructions) lines.push(instructions, '');
  if (tools.length === 0) {
    lines.push('Answer with one JSON object: {"final": "<your answer>"}.');
    return lines.join('\n');
  }
  lines.push(
    'You can call tools. Answer with exactly one JSON object: {"tool": "<tool name>", "arguments": {…}} to call',
    'a tool (its result comes back in the next message), or {"final": "<your answer>"} when you are done.',
    '',
    'Tools:',
  );
  for (const tool of tools) {
    const description = tool.description ? `: ${tool.description}` : '';
    lines.push(`- ${tool.name}${description}`, `  parameters: ${JSON.stringify(tool.parameters ?? {})}`);
  }
  return lines.join('\n');
}

/**
 * The conversation as chat turns. The model's own earlier calls are replayed in the JSON it answers in, and each
 * tool result becomes a user turn naming the tool, so the history reads the way the model is asked to write.
 * Consecutive turns of one side are joined; the last turn is the model's, left open for its reply.
 */
export function chatTurns(conversation: readonly ConversationItem[], system: string): ChatTurn[] {
  const turns: ChatTurn[] = [{ type: 'system', text: system }];
  const names = new Map<string, string>();
  const add = (side: 'system' | 'user' | 'model', text: string): void => {
    const last = turns[turns.length - 1]!;
    if (side === 'model') {
      if (last.type === 'model') last.response.push(`\n${text}`);
      else turns.push({ type: 'model', response: [text] });
    } else if (last.type === side) {
      last.text += `\n${text}`;
    } else {
      turns.push({ type: side, text });
    }
  };
  // A reply shown as it came (the brain's modelText) is followed by the calls read out of it: replaying those too
  // would say it twice, and the history would no longer be the text the model generated.
  let replyShown = false;
  for (const item of conversation) {
    if (item.type === undefined || item.type === 'message') {
      const role = item.role ?? 'user';
      replyShown = role === 'assistant';
      add(role === 'assistant' ? 'model' : role === 'user' ? 'user' : 'system', messageText(item));
    } else if (item.type === 'function_call') {
      const name = String(item.name);
      if (typeof item.call_id === 'string') names.set(item.call_id, name);
      if (!replyShown) add('model', `{"tool": ${JSON.stringify(name)}, "arguments": ${argumentsText(item.arguments)}}`);
    } else if (item.type === 'function_call_output') {
      replyShown = false;
      const name = names.get(String(item.call_id)) ?? 'the tool';
      add('user', `Result of ${name}: ${outputText(item.output)}`);
    }
  }
  turns.push({ type: 'model', response: [] });
  return turns;
}

/** A chat message as an OpenAI-compatible `/chat/completions` takes it. */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

/**
 * The same turns as chat messages, for a model server: a model turn becomes an assistant message, and the open turn
 * left for the reply is dropped (the server opens the assistant's turn itself).
 */
export function chatMessages(turns: readonly ChatTurn[]): ChatMessage[] {
  const messages: ChatMessage[] = turns.map((turn) =>
    turn.type === 'model'
      ? { role: 'assistant', content: turn.response.join('') }
      : { role: turn.type, content: turn.text },
  );
  const last = messages[messages.length - 1];
  if (last?.role === 'assistant' && last.content === '') messages.pop();
  return messages;
}

function argumentsText(value: unknown): string {
  if (typeof value !== 'string') return JSON.stringify(value ?? {});
  try {
    return JSON.stringify(JSON.parse(value));
  } catch {
    return JSON.stringify(value);
  }
}

/**
 * The model's grammar-held reply as a decision. A reply that is not one whole JSON object can only mean the
 * generation was cut off (the token limit), which is said, with the fix. `model` names who answered in the errors.
 */
export function parseReply(
  text: string,
  tools: readonly FunctionTool[],
  maxTokens: number,
  model = 'the local model',
): Decision {
  let reply: unknown;
  try {
    reply = JSON.parse(text);
  } catch {
    throw new Error(
      `${model}'s reply was cut off at the token limit (${maxTokens} tokens) before its JSON closed: ` +
        `${excerpt(text)} — raise --max-tokens.`,
    );
  }
  if (isRecord(reply) && typeof reply.final === 'string') return { final: reply.final };
  if (isRecord(reply) && typeof reply.tool === 'string' && tools.some((tool) => tool.name === reply.tool)) {
    return { toolCalls: [{ name: reply.tool, arguments: argumentsAsWritten(text, reply.arguments) }] };
  }
  // The grammar admits nothing else; reaching here is a runtime that ignored it.
  throw new Error(`${model} answered outside its grammar: ${excerpt(text)}`);
}

/**
 * The arguments exactly as the model wrote them, sent verbatim like any model's tool call: re-encoding them would
 * quietly change what it wrote (`1E999` parses to Infinity, which JSON.stringify turns into null). The grammar puts
 * `"arguments"` last in the object, so the text runs from its colon to the closing brace.
 */
function argumentsAsWritten(text: string, parsed: unknown): string {
  const key = text.indexOf('"arguments"');
  const colon = key < 0 ? -1 : text.indexOf(':', key);
  const raw = colon < 0 ? '' : text.slice(colon + 1, text.lastIndexOf('}')).trim();
  try {
    JSON.parse(raw);
    return raw;
  } catch {
    return JSON.stringify(parsed ?? {});
  }
}

function excerpt(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > 200 ? `${flat.slice(0, 200)}…` : flat;
}
