/**
 * Certain answers for the common shapes of the three validated bodies, without zod.
 *
 * Zod gives the exact verdict and the error text, but it is slow until V8 has warmed it up, and each rollout
 * validates about eight objects across the collector, the agent and the environment (together ≈ 0.15 ms of CPU
 * per rollout in the bench's scenario 1). The checks here accept only objects the schemas certainly accept: each
 * checks the fields of the common shapes exactly as the schema declares them, and every declared field it does not
 * check must be absent. Anything else is "not sure" and goes to zod (validate.ts). fast-path.test.ts holds every
 * validate* verdict equal to the schema's on thousands of mutated objects. The field lists come from declared.ts,
 * not from the schemas, so this module loads without zod (the collector checks every row here).
 */
import {
  CREATE_PARAMS_KEYS,
  FUNCTION_CALL_KEYS,
  FUNCTION_CALL_OUTPUT_KEYS,
  ITEM_STATUSES,
  MESSAGE_ROLES,
  REASONING_KEYS,
  RESPONSE_KEYS,
  RESPONSE_STATUSES,
  SERVICE_TIERS,
  TOKEN_METADATA_KEYS,
  TOOL_CHOICE_MODES,
  TRUNCATIONS,
  USAGE_KEYS,
} from './declared.js';
import { isRecord } from './records.js';

type Check = (value: unknown) => boolean;

const isString: Check = (value) => typeof value === 'string';
const isBoolean: Check = (value) => typeof value === 'boolean';
const isSafeInt: Check = (value) => Number.isSafeInteger(value);
const isFiniteNumber: Check = (value) => typeof value === 'number' && Number.isFinite(value);
const isNil: Check = (value) => value === undefined || value === null;
const nil =
  (check: Check): Check =>
  (value) =>
    value === undefined || value === null || check(value);
const optional =
  (check: Check): Check =>
  (value) =>
    value === undefined || check(value);
const oneOf =
  (values: readonly unknown[]): Check =>
  (value) =>
    values.includes(value);
const exactly =
  (expected: unknown): Check =>
  (value) =>
    value === expected;
/** Every element, holes included (`every` would skip the holes of a sparse array; zod sees them as undefined). */
const listOf =
  (check: Check): Check =>
  (value) => {
    if (!Array.isArray(value)) return false;
    for (let i = 0; i < value.length; i++) if (!check(value[i])) return false;
    return true;
  };
const emptyList: Check = (value) => Array.isArray(value) && value.length === 0;
const anyObject: Check = (value) => isRecord(value);

/** A loose object whose `declared` keys not named in `checks` must all be absent. */
function looseObject(declared: readonly string[], checks: Record<string, Check>): Check {
  const entries = Object.entries(checks);
  const absent = declared.filter((key) => !Object.hasOwn(checks, key));
  return (value) => {
    if (!isRecord(value)) return false;
    for (const [key, check] of entries) if (!check(value[key])) return false;
    for (const key of absent) if (value[key] !== undefined) return false;
    return true;
  };
}

/** A strict object: as `looseObject`, and no key outside `declared`. */
function strictObject(declared: readonly string[], checks: Record<string, Check>): Check {
  const loose = looseObject(declared, checks);
  const known = new Set(declared);
  return (value) => loose(value) && Object.keys(value as object).every((key) => known.has(key));
}

const itemStatus = nil(oneOf(ITEM_STATUSES));

const plainOutputText = looseObject(['type', 'text', 'annotations', 'logprobs'], {
  type: exactly('output_text'),
  text: isString,
  annotations: emptyList,
  logprobs: isNil,
});
const plainOutputMessage = looseObject(['type', 'id', 'role', 'status', 'content', ...TOKEN_METADATA_KEYS], {
  type: exactly('message'),
  id: isString,
  role: optional(exactly('assistant')),
  status: optional(oneOf(ITEM_STATUSES)),
  content: listOf(plainOutputText),
});
const plainEasyMessage = looseObject(['type', 'role', 'content', ...TOKEN_METADATA_KEYS], {
  type: optional(exactly('message')),
  role: oneOf(MESSAGE_ROLES),
  content: isString,
});
const plainFunctionCall = looseObject(FUNCTION_CALL_KEYS, {
  type: exactly('function_call'),
  arguments: isString,
  call_id: isString,
  name: isString,
  id: nil(isString),
  status: itemStatus,
});
const plainFunctionCallOutput = looseObject(FUNCTION_CALL_OUTPUT_KEYS, {
  type: exactly('function_call_output'),
  call_id: isString,
  output: isString,
  id: nil(isString),
  status: itemStatus,
});
const plainReasoning = looseObject(REASONING_KEYS, {
  type: exactly('reasoning'),
  id: isString,
  summary: listOf(looseObject(['type', 'text'], { type: exactly('summary_text'), text: isString })),
  encrypted_content: nil(isString),
  content: isNil,
});

const NON_MESSAGE_ITEMS = new Map<unknown, Check>([
  ['function_call', plainFunctionCall],
  ['function_call_output', plainFunctionCallOutput],
  ['reasoning', plainReasoning],
]);
const plainOutputItem: Check = (item) =>
  isRecord(item) &&
  (item.type === 'message' ? plainOutputMessage(item) : (NON_MESSAGE_ITEMS.get(item.type)?.(item) ?? false));
const plainInputItem: Check = (item) =>
  isRecord(item) &&
  (item.type === undefined || item.type === 'message'
    ? plainEasyMessage(item) || plainOutputMessage(item)
    : (NON_MESSAGE_ITEMS.get(item.type)?.(item) ?? false));

export const plainUsage = looseObject(USAGE_KEYS, {
  input_tokens: isSafeInt,
  input_tokens_details: looseObject(['cached_tokens'], {
    cached_tokens: (value) => value === null || isSafeInt(value),
  }),
  output_tokens: isSafeInt,
  output_tokens_details: looseObject(['reasoning_tokens'], {
    reasoning_tokens: (value) => value === null || isSafeInt(value),
  }),
  total_tokens: isSafeInt,
});

const FUNCTION_TOOL_KEYS = ['type', 'name', 'parameters', 'strict', 'description'];
const plainResponseTool = looseObject(FUNCTION_TOOL_KEYS, {
  type: exactly('function'),
  name: isString,
  parameters: nil(anyObject),
  strict: nil(isBoolean),
  description: nil(isString),
});
const plainParamsTool = looseObject(FUNCTION_TOOL_KEYS, {
  type: exactly('function'),
  name: isString,
  parameters: (value) => value === null || anyObject(value),
  strict: (value) => value === null || isBoolean(value),
  description: nil(isString),
});

export const plainResponse = looseObject(RESPONSE_KEYS, {
  id: isString,
  created_at: isFiniteNumber,
  model: isString,
  object: exactly('response'),
  output: listOf(plainOutputItem),
  parallel_tool_calls: isBoolean,
  tool_choice: oneOf(TOOL_CHOICE_MODES),
  tools: listOf(plainResponseTool),
  status: nil(oneOf(RESPONSE_STATUSES)),
  usage: nil(plainUsage),
  temperature: nil(isFiniteNumber),
  top_p: nil(isFiniteNumber),
  background: nil(isBoolean),
  max_output_tokens: nil(isSafeInt),
  max_tool_calls: nil(isSafeInt),
  top_logprobs: nil(isSafeInt),
  previous_response_id: nil(isString),
  prompt_cache_key: nil(isString),
  safety_identifier: nil(isString),
  user: nil(isString),
  service_tier: nil(oneOf(SERVICE_TIERS)),
  truncation: nil(oneOf(TRUNCATIONS)),
  error: isNil,
  incomplete_details: isNil,
  instructions: isNil,
  metadata: isNil,
  conversation: isNil,
  prompt: isNil,
  reasoning: isNil,
  text: isNil,
});

export const plainCreateParams = strictObject(CREATE_PARAMS_KEYS, {
  input: (value) => isString(value) || listOf(plainInputItem)(value),
  tools: optional(listOf(plainParamsTool)),
  tool_choice: optional(oneOf(TOOL_CHOICE_MODES)),
  parallel_tool_calls: optional(isBoolean),
  model: nil(isString),
  instructions: nil(isString),
  previous_response_id: nil(isString),
  user: nil(isString),
  temperature: nil(isFiniteNumber),
  top_p: nil(isFiniteNumber),
  max_output_tokens: nil(isSafeInt),
  max_tool_calls: nil(isSafeInt),
  top_logprobs: nil(isSafeInt),
  background: nil(isBoolean),
  store: nil(isBoolean),
  stream: nil(exactly(false)),
  service_tier: nil(oneOf(SERVICE_TIERS)),
  truncation: nil(oneOf(TRUNCATIONS)),
  include: isNil,
  metadata: isNil,
  prompt: isNil,
  reasoning: isNil,
  text: isNil,
});
