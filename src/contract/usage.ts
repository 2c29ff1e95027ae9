/**
 * Usage accumulation across the steps of a rollout, with the reference's rules for missing and unknown counts.
 */
import type { Usage } from './body-schemas.js';

/**
 * Adds `add` to `total` the way the reference's `accumulate_response_usage` does: a missing side
 * contributes nothing, and an unknown (null) detail count makes the sum unknown rather than 0.
 * Never mutates its arguments.
 */
export function sumUsage(total: Usage | null | undefined, add: Usage | null | undefined): Usage | null {
  if (add == null) return total ?? null;
  if (total == null) return copyJson(add);
  const sum = copyJson(total);
  sum.input_tokens = total.input_tokens + add.input_tokens;
  sum.output_tokens = total.output_tokens + add.output_tokens;
  sum.total_tokens = total.total_tokens + add.total_tokens;
  if (total.input_tokens_details && add.input_tokens_details) {
    sum.input_tokens_details.cached_tokens = addCounts(
      total.input_tokens_details.cached_tokens,
      add.input_tokens_details.cached_tokens,
    );
  }
  if (total.output_tokens_details && add.output_tokens_details) {
    sum.output_tokens_details.reasoning_tokens = addCounts(
      total.output_tokens_details.reasoning_tokens,
      add.output_tokens_details.reasoning_tokens,
    );
  }
  return sum;
}

/**
 * A deep copy of JSON data (what `structuredClone` gives for it, at a fraction of the cost: usage is summed on
 * every step of every rollout).
 */
function copyJson<T>(value: T): T {
  if (Array.isArray(value)) return value.map(copyJson) as T;
  if (value === null || typeof value !== 'object') return value;
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    const item = copyJson((value as Record<string, unknown>)[key]);
    // A parsed "__proto__" key is an own property; plain assignment would set the copy's prototype instead.
    if (key === '__proto__')
      Object.defineProperty(copy, key, { value: item, enumerable: true, writable: true, configurable: true });
    else copy[key] = item;
  }
  return copy as T;
}

function addCounts(a: number | null | undefined, b: number | null | undefined): number | null {
  return a == null || b == null ? null : a + b;
}
