/**
 * The names the contract's schemas declare — enum values and each object's field list — as plain lists, without
 * zod. The schemas (item-schemas.ts, body-schemas.ts) build their enums from these lists, and the fast path
 * (fast-path.ts) checks fields against them, so a process that only ever meets the common shapes never loads zod:
 * `gym eval run` checks every row's `responses_create_params` and used to pay ≈ 135 ms of start-up for zod alone
 * (bench/README.md, "the collector's own CPU"). declared.test.ts holds each field list equal to its schema's.
 */

export const ITEM_STATUSES = ['in_progress', 'completed', 'incomplete'] as const;
export const MESSAGE_ROLES = ['user', 'assistant', 'system', 'developer'] as const;
export const TOOL_CHOICE_MODES = ['none', 'auto', 'required'] as const;
export const SERVICE_TIERS = ['auto', 'default', 'flex', 'scale', 'priority'] as const;
export const TRUNCATIONS = ['auto', 'disabled'] as const;
export const RESPONSE_STATUSES = ['completed', 'failed', 'in_progress', 'cancelled', 'queued', 'incomplete'] as const;

/** The optional token fields any output item may carry (`tokenMetadataShape`). */
export const TOKEN_METADATA_KEYS = [
  'prompt_token_ids',
  'generation_token_ids',
  'generation_log_probs',
  'routed_experts',
] as const;

export const FUNCTION_CALL_KEYS = ['type', 'arguments', 'call_id', 'name', 'id', 'status', ...TOKEN_METADATA_KEYS];
export const FUNCTION_CALL_OUTPUT_KEYS = ['type', 'call_id', 'output', 'id', 'status'];
export const REASONING_KEYS = ['type', 'id', 'summary', 'encrypted_content', 'content', ...TOKEN_METADATA_KEYS];
export const USAGE_KEYS = [
  'input_tokens',
  'input_tokens_details',
  'output_tokens',
  'output_tokens_details',
  'total_tokens',
];
export const RESPONSE_KEYS = [
  'id',
  'created_at',
  'model',
  'object',
  'output',
  'parallel_tool_calls',
  'tool_choice',
  'tools',
  'error',
  'incomplete_details',
  'instructions',
  'metadata',
  'temperature',
  'top_p',
  'background',
  'conversation',
  'max_output_tokens',
  'max_tool_calls',
  'top_logprobs',
  'previous_response_id',
  'prompt_cache_key',
  'safety_identifier',
  'user',
  'prompt',
  'reasoning',
  'service_tier',
  'status',
  'text',
  'truncation',
  'usage',
];
export const CREATE_PARAMS_KEYS = [
  'input',
  'background',
  'store',
  'include',
  'instructions',
  'previous_response_id',
  'user',
  'max_output_tokens',
  'max_tool_calls',
  'top_logprobs',
  'metadata',
  'model',
  'parallel_tool_calls',
  'prompt',
  'reasoning',
  'service_tier',
  'temperature',
  'top_p',
  'text',
  'tool_choice',
  'tools',
  'truncation',
  'stream',
];
