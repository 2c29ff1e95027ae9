/**
 * What the viewer's pages show of a row's trajectory: the response it comes from (a success's, or a failure's
 * partial one), its output items, each item's kind, and a one-line count of the steps ("2 calls · 2 outputs ·
 * 1 message"). Apart from the index (./rollout-index.ts) because they read whole rows, which the index never keeps.
 */
import { isPlainObject } from '../config/types.js';
import { NG } from '../runfiles/ng-keys.js';
import type { Row } from '../runfiles/row.js';

/**
 * The response a row's trajectory and usage come from: a success's `response`; for a failure, the partial
 * trajectory `_ng_partial_response` (absent when no step returned), since its `response` is only a placeholder.
 */
export function responseOf(row: Row): Row | undefined {
  const failureClass = row[NG.failureClass];
  const isFailure = failureClass !== undefined && failureClass !== null;
  const response = isFailure ? row[NG.partialResponse] : row.response;
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
