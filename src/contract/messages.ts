/**
 * Reading and building message items outside validation: which items the assistant spoke (what verifiers grade)
 * and the request `input` as a list the agent loop can append to.
 */
import { isRecord } from './records.js';

/**
 * True for a message item spoken by the assistant: `role: 'assistant'` (output form or the short
 * string form), or an output-form message without `role`, whose role the reference defaults to
 * assistant. User, system and developer messages are not.
 */
export function isAssistantMessage(item: unknown): boolean {
  if (!isRecord(item)) return false;
  if (item.type !== 'message' && item.type !== undefined) return false;
  if (item.role === 'assistant') return true;
  return item.role === undefined && typeof item.id === 'string' && Array.isArray(item.content);
}

/**
 * The request `input` as a list of items. A string becomes one user message (no `type`, as the
 * reference sends it); a list is copied shallowly so appending never touches the caller's row, while
 * its items stay the caller's objects.
 */
export function normalizeInput(input: string | unknown[]): unknown[] {
  return typeof input === 'string' ? [{ role: 'user', content: input }] : [...input];
}

/** A completed assistant message holding `text`, in the output form of the contract. */
export function assistantTextMessage(text: string, id: string) {
  return {
    type: 'message',
    id,
    role: 'assistant',
    status: 'completed',
    content: [{ type: 'output_text', text, annotations: [] }],
  };
}
