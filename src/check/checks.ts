/**
 * The named checks of `gym agent check`, in report order, each with the fix a failing user needs, and the shape of
 * one check's verdict. Both ways of probing (the counter conversations and `--rows`) report against this list, so a
 * user sees the same names whichever they ran.
 */

export type CheckStatus = 'pass' | 'warn' | 'fail' | 'skip';

export interface CheckResult {
  name: string;
  status: CheckStatus;
  detail: string;
  /** What to change, on FAIL and WARN. */
  fix?: string;
}

/** A check's name and the fix shown when it fails or warns. */
export interface CheckSpec {
  name: string;
  fix: string;
}

/** Every check, in report order, with the fix a failing user needs. */
export const CHECKS: readonly CheckSpec[] = [
  {
    name: 'reachable',
    fix: 'Start the service and check host and port (bind 0.0.0.0 to accept other machines); if it is just slow, raise +timeout_secs.',
  },
  { name: 'no-redirect', fix: 'Point the URL at the final address (the Location shown); Gym never follows redirects.' },
  {
    name: 'http-reply',
    fix: 'Answer POST /v1/responses with HTTP 200 and a JSON object; Gym records any other reply as a failed rollout.',
  },
  {
    name: 'responses-object',
    fix: 'Return every required field in its type (id, created_at, model, object, output, parallel_tool_calls, tool_choice, tools); an invalid object fails the rollout for good (never retried).',
  },
  {
    name: 'next-step',
    fix: 'End every response with unpaired function_call items (ask Gym to run tools) or an assistant message (finish).',
  },
  {
    name: 'declared-tools',
    fix: "Ask only for tools listed in the request's `tools`; run any other tool yourself and return it as a paired call + output record.",
  },
  { name: 'arguments', fix: 'Set `arguments` to the JSON text of an object, e.g. JSON.stringify({count: 1}).' },
  {
    name: 'unique-call-ids',
    fix: 'Give every function_call in a response its own call_id; Gym runs only the last of duplicates.',
  },
  {
    name: 'pairing',
    fix: "When you ran a tool yourself, give its function_call_output the call's call_id; an unpaired call means 'Gym, run this'.",
  },
  {
    name: 'usage',
    fix: 'Report all of input_tokens, output_tokens, total_tokens, input_tokens_details.cached_tokens and output_tokens_details.reasoning_tokens, or leave usage out.',
  },
  { name: 'conversation', fix: 'Return an assistant message once the tool results answer the task.' },
  {
    name: 'string-input',
    fix: 'Accept `input` as a plain string too (a user message); Gym itself always sends a list.',
  },
  { name: 'tool-subset', fix: 'Plan with the tools each request declares, not a fixed list.' },
  {
    name: 'cookies',
    fix: 'Keep per-rollout state only behind a cookie you set, and accept it back; a call without your cookie is a new rollout.',
  },
  {
    name: 'latency',
    fix: 'Keep each call well under remote_responses_timeout_secs (default 1800 s); slow calls hold a concurrency slot.',
  },
];

/** The check `--rows` adds: every row's first answer is usable by its environment. */
export const ROW_PROBES_CHECK = {
  name: 'row-probes',
  fix: "Answer each row's first call with an ask for tools the row declares, with arguments matching each tool's `parameters`, or with an assistant message.",
} as const;
