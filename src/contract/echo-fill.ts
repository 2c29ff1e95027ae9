/**
 * Completing a Responses object from the request it answers (decision D24), for services that leave out what they
 * could only have copied: local model servers (llama.cpp's `llama-server`, for one) answer `/v1/responses` without
 * `tools`, `tool_choice` and `parallel_tool_calls` and report usage without its detail objects.
 *
 * Of the fields the contract requires (body-schemas.ts), exactly those three repeat request settings; `id`,
 * `created_at`, `model`, `object` and `output` say something only the service knows, so they are never filled.
 * The usage detail objects are filled with zero counts, which are invented numbers: callers mark what they
 * record from such a response (`USAGE_FILLED_KEY`). `output` is never touched, so no item is invented or repaired.
 *
 * Strict validation stays the default; this runs only when a user opts in (`fill_echo_fields: true` on the
 * remote agent, `--fill-echo-fields` on `gym agent check`), and both go through this module.
 */
import type { ResponseObject } from './body-schemas.js';
import { isRecord } from './records.js';
import { validateResponse } from './validate.js';

/** The `/run` result key set to `true` when any step's usage detail objects were filled with zeros. */
export const USAGE_FILLED_KEY = '_ng_usage_filled';

/** The request settings a response echoes (a `CreateParams`, or any request body that was sent). */
export interface EchoSource {
  tools?: unknown;
  tool_choice?: unknown;
  parallel_tool_calls?: unknown;
}

export interface EchoFill {
  /** A shallow copy of the response with the missing fields added; the input itself when nothing was missing. */
  value: Record<string, unknown>;
  /** What was added, as paths in report order, e.g. `tools`, `usage.output_tokens_details`. */
  filled: string[];
  /** True when a usage detail object was added (its zero counts are not the service's). */
  usageFilled: boolean;
}

/**
 * What a request left unset, as the Responses API reports it: no tools, the model chooses, parallel calls
 * allowed. A complete service echoes these same values for a request that did not set them.
 */
const REQUEST_DEFAULTS = { tools: [], tool_choice: 'auto', parallel_tool_calls: true } as const;

const ECHO_KEYS = ['tools', 'tool_choice', 'parallel_tool_calls'] as const;

const USAGE_DETAILS = {
  input_tokens_details: { cached_tokens: 0 },
  output_tokens_details: { reasoning_tokens: 0 },
} as const;

/**
 * Adds each echo field the response lacks (absent, not merely wrong) from `request`, and each usage detail object a
 * present usage object lacks (absent or null) as zeros. Never mutates its arguments; a filled value is a fresh
 * copy, so a request's `tools` list is not shared with the response.
 */
export function fillEchoFields(response: Record<string, unknown>, request: EchoSource): EchoFill {
  const filled: string[] = [];
  const additions: Record<string, unknown> = {};
  for (const key of ECHO_KEYS) {
    if (response[key] !== undefined) continue;
    const sent = request[key];
    additions[key] = structuredClone(sent === undefined ? REQUEST_DEFAULTS[key] : sent);
    filled.push(key);
  }
  let usageFilled = false;
  const usage = response.usage;
  if (isRecord(usage)) {
    const details: Record<string, unknown> = {};
    for (const [key, zeros] of Object.entries(USAGE_DETAILS)) {
      if (usage[key] !== undefined && usage[key] !== null) continue;
      details[key] = { ...zeros };
      filled.push(`usage.${key}`);
      usageFilled = true;
    }
    if (usageFilled) additions.usage = { ...usage, ...details };
  }
  if (filled.length === 0) return { value: response, filled, usageFilled };
  return { value: { ...response, ...additions }, filled, usageFilled };
}

export type FilledValidation =
  { ok: true; value: ResponseObject; filled: readonly string[]; usageFilled: boolean } | { ok: false; message: string };

/**
 * `validateResponse`, then, only if that fails, the same object completed from `request` and validated again.
 * A response that is still invalid once completed fails with the completed object's error text, which names only
 * what the service got wrong (the filled fields are no longer among the problems).
 */
export function validateResponseFillingEchoes(value: Record<string, unknown>, request: EchoSource): FilledValidation {
  const strict = validateResponse(value);
  if (strict.ok) return { ok: true, value: strict.value, filled: [], usageFilled: false };
  const fill = fillEchoFields(value, request);
  if (fill.filled.length === 0) return strict;
  const completed = validateResponse(fill.value);
  if (!completed.ok) return completed;
  return { ok: true, value: completed.value, filled: fill.filled, usageFilled: fill.usageFilled };
}
