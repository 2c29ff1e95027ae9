/**
 * Zod schemas of the two top-level bodies on the wire: the Response object a service returns and the
 * create-params a request carries (`responses_create_params`), with what they share: usage, tools, tool choice and
 * the generation settings (the contract: docs/services.md).
 *
 * Everything is a loose object (unknown fields tolerated) except the top level of create-params, which is strict,
 * mirroring the reference's `extra="forbid"`. No schema uses `.default()` or a transform: validation only checks,
 * and callers keep the object they passed in (D17).
 */
import { z } from 'zod';
import { InputItemSchema, OutputItemSchema } from './item-schemas.js';
import { AnyObject, Int, nullableString } from './scalars.js';
import { RESPONSE_STATUSES, SERVICE_TIERS, TOOL_CHOICE_MODES, TRUNCATIONS } from './declared.js';

// ---------------------------------------------------------------------------------------------------
// Usage: every key required when usage is present; the two detail counts may be null.

export const UsageSchema = z.looseObject({
  input_tokens: Int,
  input_tokens_details: z.looseObject({ cached_tokens: Int.nullable() }),
  output_tokens: Int,
  output_tokens_details: z.looseObject({ reasoning_tokens: Int.nullable() }),
  total_tokens: Int,
});

// ---------------------------------------------------------------------------------------------------
// Tools and tool choice

const WEB_SEARCH_TYPES = [
  'web_search',
  'web_search_2025_08_26',
  'web_search_preview',
  'web_search_preview_2025_03_11',
] as const;

const hostedTools = [
  z.looseObject({ type: z.literal('file_search'), vector_store_ids: z.array(z.string()) }),
  z.looseObject({
    type: z.literal('computer_use_preview'),
    display_height: Int,
    display_width: Int,
    environment: z.string(),
  }),
  z.looseObject({ type: z.enum(WEB_SEARCH_TYPES) }),
  z.looseObject({ type: z.literal('mcp'), server_label: z.string() }),
  z.looseObject({
    type: z.literal('code_interpreter'),
    container: z.union([z.string(), z.looseObject({ type: z.literal('auto') })]),
  }),
  z.looseObject({ type: z.literal('image_generation') }),
  z.looseObject({ type: z.literal('local_shell') }),
  z.looseObject({ type: z.literal('custom'), name: z.string() }),
] as const;

const ResponseTool = z.discriminatedUnion('type', [
  z.looseObject({
    type: z.literal('function'),
    name: z.string(),
    parameters: AnyObject.nullish(),
    strict: z.boolean().nullish(),
    description: nullableString,
  }),
  ...hostedTools,
]);

// The request side is stricter about function tools: `parameters` and `strict` must be present.
const ParamsTool = z.discriminatedUnion('type', [
  z.looseObject({
    type: z.literal('function'),
    name: z.string(),
    parameters: AnyObject.nullable(),
    strict: z.boolean().nullable(),
    description: nullableString,
  }),
  ...hostedTools,
]);

const ToolChoice = z.union([
  z.enum(TOOL_CHOICE_MODES),
  z.discriminatedUnion('type', [
    z.looseObject({
      type: z.literal('allowed_tools'),
      mode: z.enum(['auto', 'required']),
      tools: z.array(AnyObject),
    }),
    z.looseObject({
      type: z.enum([
        'file_search',
        'web_search_preview',
        'computer_use_preview',
        'web_search_preview_2025_03_11',
        'image_generation',
        'code_interpreter',
      ]),
    }),
    z.looseObject({ type: z.literal('function'), name: z.string() }),
    z.looseObject({ type: z.literal('mcp'), server_label: z.string(), name: nullableString }),
    z.looseObject({ type: z.literal('custom'), name: z.string() }),
  ]),
]);

// ---------------------------------------------------------------------------------------------------
// Settings shared by the response and the request

const Metadata = z.record(z.string(), z.string());
const Prompt = z.looseObject({ id: z.string(), variables: AnyObject.nullish(), version: nullableString });
const ReasoningSummaryMode = z.enum(['auto', 'concise', 'detailed']);
const ReasoningConfig = z.looseObject({
  effort: z.enum(['minimal', 'low', 'medium', 'high']).nullish(),
  generate_summary: ReasoningSummaryMode.nullish(),
  summary: ReasoningSummaryMode.nullish(),
});
const ServiceTier = z.enum(SERVICE_TIERS);
const TextConfig = z.looseObject({
  format: z
    .discriminatedUnion('type', [
      z.looseObject({ type: z.literal('text') }),
      z.looseObject({ type: z.literal('json_schema') }),
      z.looseObject({ type: z.literal('json_object') }),
    ])
    .nullish(),
  verbosity: z.enum(['low', 'medium', 'high']).nullish(),
});
const Truncation = z.enum(TRUNCATIONS);

// ---------------------------------------------------------------------------------------------------
// The Response object. `output_text` is an SDK convenience, not part of the wire contract.

export const ResponseSchema = z.looseObject({
  id: z.string(),
  created_at: z.number(),
  model: z.string(),
  object: z.literal('response'),
  output: z.array(OutputItemSchema),
  parallel_tool_calls: z.boolean(),
  tool_choice: ToolChoice,
  tools: z.array(ResponseTool),

  // The reference types `error.code` as OpenAI's literal list; any string is accepted here so that a
  // service reporting its own failure is quoted to the user instead of being called malformed.
  error: z.looseObject({ code: z.string(), message: z.string() }).nullish(),
  incomplete_details: z.looseObject({ reason: z.enum(['max_output_tokens', 'content_filter']).nullish() }).nullish(),
  instructions: z.union([z.string(), z.array(InputItemSchema)]).nullish(),
  metadata: Metadata.nullish(),
  temperature: z.number().nullish(),
  top_p: z.number().nullish(),
  background: z.boolean().nullish(),
  conversation: z.looseObject({ id: z.string() }).nullish(),
  max_output_tokens: Int.nullish(),
  max_tool_calls: Int.nullish(),
  top_logprobs: Int.nullish(),
  previous_response_id: nullableString,
  prompt_cache_key: nullableString,
  safety_identifier: nullableString,
  user: nullableString,
  prompt: Prompt.nullish(),
  reasoning: ReasoningConfig.nullish(),
  service_tier: ServiceTier.nullish(),
  status: z.enum(RESPONSE_STATUSES).nullish(),
  text: TextConfig.nullish(),
  truncation: Truncation.nullish(),
  usage: UsageSchema.nullish(),
});

// ---------------------------------------------------------------------------------------------------
// Request create-params: strict at the top level only.

const INCLUDABLE = [
  'file_search_call.results',
  'web_search_call.results',
  'web_search_call.action.sources',
  'message.input_image.image_url',
  'computer_call_output.output.image_url',
  'code_interpreter_call.outputs',
  'reasoning.encrypted_content',
  'message.output_text.logprobs',
] as const;

export const CreateParamsSchema = z.strictObject({
  input: z.union([z.string(), z.array(InputItemSchema)]),
  background: z.boolean().nullish(),
  store: z.boolean().nullish(),
  include: z.array(z.enum(INCLUDABLE)).nullish(),
  instructions: nullableString,
  previous_response_id: nullableString,
  user: nullableString,
  max_output_tokens: Int.nullish(),
  max_tool_calls: Int.nullish(),
  top_logprobs: Int.nullish(),
  metadata: Metadata.nullish(),
  model: nullableString,
  parallel_tool_calls: z.boolean().optional(),
  prompt: Prompt.nullish(),
  reasoning: ReasoningConfig.nullish(),
  service_tier: ServiceTier.nullish(),
  temperature: z.number().nullish(),
  top_p: z.number().nullish(),
  text: TextConfig.nullish(),
  tool_choice: ToolChoice.optional(),
  tools: z.array(ParamsTool).optional(),
  truncation: Truncation.nullish(),
  stream: z.literal(false).nullish(),
});

export type ResponseObject = z.infer<typeof ResponseSchema>;
export type Usage = z.infer<typeof UsageSchema>;
export type CreateParams = z.infer<typeof CreateParamsSchema>;
