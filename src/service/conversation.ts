/**
 * Reading the conversation a service receives: the task messages, then (from the second call of a rollout on)
 * the service's own earlier output items and one `function_call_output` per tool Gym ran. Helpers here turn it
 * into what a brain needs: a text rendering for a prompt, or the tool calls paired with their results.
 */

/** One item of the request's `input`. Messages may omit `type`; every other item has one. */
export interface ConversationItem {
  type?: string;
  role?: string;
  content?: unknown;
  name?: string;
  arguments?: string;
  call_id?: string;
  output?: unknown;
  [key: string]: unknown;
}

/** A function tool the request declared: the only tools a service may ask Gym to run. */
export interface FunctionTool {
  type: 'function';
  name: string;
  description?: string | null;
  parameters?: Record<string, unknown> | null;
  strict?: boolean | null;
  [key: string]: unknown;
}

/** The request's `input` as a list: a string is one user message, as Gym itself normalises it. */
export function normalizeInput(input: string | readonly ConversationItem[]): ConversationItem[] {
  return typeof input === 'string' ? [{ role: 'user', content: input }] : [...input];
}

/** The text of a message item: a string content as is, a list of parts joined by spaces. */
export function messageText(item: ConversationItem): string {
  return contentText(item.content);
}

function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  const texts: string[] = [];
  for (const part of content) {
    if (typeof part === 'object' && part !== null) {
      const p = part as { text?: unknown; refusal?: unknown };
      if (typeof p.text === 'string') texts.push(p.text);
      else if (typeof p.refusal === 'string') texts.push(p.refusal);
    }
  }
  return texts.join(' ');
}

/** A tool output as text (outputs may also be lists of content parts). */
export function outputText(output: unknown): string {
  if (typeof output === 'string') return output;
  if (Array.isArray(output)) return contentText(output);
  return JSON.stringify(output ?? null);
}

const isMessage = (item: ConversationItem): boolean => item.type === undefined || item.type === 'message';

/**
 * The conversation as plain text for a prompt, one line per item, in the quickstart's format:
 * `[user] …`, `[assistant] …`, `[you asked for] name({…})`, `[tool result] …`. Other item kinds are left out.
 */
export function renderConversation(items: readonly ConversationItem[]): string {
  const lines: string[] = [];
  for (const item of items) {
    if (isMessage(item)) lines.push(`[${item.role ?? 'user'}] ${messageText(item)}`);
    else if (item.type === 'function_call') lines.push(`[you asked for] ${item.name}(${item.arguments ?? ''})`);
    else if (item.type === 'function_call_output') lines.push(`[tool result] ${outputText(item.output)}`);
  }
  return lines.join('\n');
}

/** The texts of the user's messages, in order. */
export function userMessages(items: readonly ConversationItem[]): string[] {
  return items.filter((item) => isMessage(item) && (item.role ?? 'user') === 'user').map(messageText);
}

export interface ToolCallRecord {
  callId: string;
  name: string;
  /** The arguments' JSON text as it was sent. */
  arguments: string;
  /** The result's text, or undefined while no `function_call_output` for this call is in the conversation. */
  output: string | undefined;
}

/** Every function call in the conversation with its result, in the order the calls were made. */
export function toolHistory(items: readonly ConversationItem[]): ToolCallRecord[] {
  const outputs = new Map<string, string>();
  for (const item of items) {
    if (item.type === 'function_call_output' && typeof item.call_id === 'string') {
      outputs.set(item.call_id, outputText(item.output));
    }
  }
  const records: ToolCallRecord[] = [];
  for (const item of items) {
    if (item.type !== 'function_call' || typeof item.call_id !== 'string' || typeof item.name !== 'string') continue;
    records.push({
      callId: item.call_id,
      name: item.name,
      arguments: typeof item.arguments === 'string' ? item.arguments : JSON.stringify(item.arguments ?? {}),
      output: outputs.get(item.call_id),
    });
  }
  return records;
}

/** The declared function tools of a request's `tools` list (hosted tools such as web_search are not Gym's to run). */
export function functionTools(tools: unknown): FunctionTool[] {
  if (!Array.isArray(tools)) return [];
  return tools.filter(
    (tool): tool is FunctionTool =>
      typeof tool === 'object' &&
      tool !== null &&
      (tool as FunctionTool).type === 'function' &&
      typeof (tool as FunctionTool).name === 'string',
  );
}
