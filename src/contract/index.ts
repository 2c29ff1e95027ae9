/**
 * The Responses API wire contract: the one place that knows what a Responses object, an item, a usage
 * object and a request (`responses_create_params`) look like, as NeMo Gym validates them
 * (reference-gym.md §6, libraries.md §2).
 *
 * Rules that shape this module:
 * - Validation only checks. Callers keep and forward the object they passed in (decision D17: items are
 *   echoed exactly as the service sent them, unknown fields included), so every `validate*` returns the
 *   input object itself, and no schema uses `.default()` or transforms.
 * - Everything except the top level of create-params is a loose object: unknown fields are tolerated.
 *   The create-params top level is strict, mirroring the reference's `extra="forbid"`.
 * - Item and part unions are discriminated on `type`, so a known item is checked against its one member
 *   and errors name that member's fields instead of the whole union.
 * - Error text is one line naming the item index and field path (U14), never the object.
 */
import { z } from 'zod';

// ---------------------------------------------------------------------------------------------------
// Shared scalars

const AnyObject = z.looseObject({});
const Int = z.int();
const ITEM_STATUSES = ['in_progress', 'completed', 'incomplete'] as const;
const ItemStatus = z.enum(ITEM_STATUSES);
const nullableString = z.string().nullish();

// ---------------------------------------------------------------------------------------------------
// Content parts (§6.4)

const InputTextPart = z.looseObject({ type: z.literal('input_text'), text: z.string() });
const InputImagePart = z.looseObject({
  type: z.literal('input_image'),
  detail: z.enum(['low', 'high', 'auto']),
  file_id: nullableString,
  image_url: nullableString,
});
const InputFilePart = z.looseObject({
  type: z.literal('input_file'),
  file_data: nullableString,
  file_id: nullableString,
  file_url: nullableString,
  filename: nullableString,
});
const VideoReference = z.union([z.string(), z.looseObject({ url: z.string().min(1) })]);
const InputVideoPart = z
  .looseObject({ type: z.literal('input_video'), video_url: VideoReference.nullish(), video: VideoReference.nullish() })
  .superRefine((part, ctx) => {
    if ((part.video_url == null) === (part.video == null)) {
      ctx.addIssue({ code: 'custom', message: 'input_video needs exactly one of video_url or video', path: [] });
    }
  });
const InputContentPart = z.discriminatedUnion('type', [InputTextPart, InputImagePart, InputFilePart, InputVideoPart]);
const InputContentList = z.array(InputContentPart);

const Annotation = z.discriminatedUnion('type', [
  z.looseObject({ type: z.literal('file_citation'), file_id: z.string(), filename: z.string(), index: Int }),
  z.looseObject({
    type: z.literal('url_citation'),
    start_index: Int,
    end_index: Int,
    title: z.string(),
    url: z.string(),
  }),
  z.looseObject({
    type: z.literal('container_file_citation'),
    container_id: z.string(),
    file_id: z.string(),
    filename: z.string(),
    start_index: Int,
    end_index: Int,
  }),
  z.looseObject({ type: z.literal('file_path'), file_id: z.string(), index: Int }),
]);
const TopLogprob = z.looseObject({ token: z.string(), bytes: z.array(Int), logprob: z.number() });
const Logprob = z.looseObject({
  token: z.string(),
  bytes: z.array(Int),
  logprob: z.number(),
  top_logprobs: z.array(TopLogprob),
});
// `type` is optional on both output parts in the reference (it defaults); only one member of a
// discriminated union can claim an absent discriminator, and a typeless part is far more likely text.
const OutputTextPart = z.looseObject({
  type: z.literal('output_text').optional(),
  text: z.string(),
  annotations: z.array(Annotation),
  logprobs: z.array(Logprob).nullish(),
});
const RefusalPart = z.looseObject({ type: z.literal('refusal'), refusal: z.string() });
const OutputContentPart = z.discriminatedUnion('type', [OutputTextPart, RefusalPart]);

// What a tool result may carry besides plain text (function_call_output, custom_tool_call_output).
const ToolOutputPart = z.discriminatedUnion('type', [
  InputTextPart,
  z.looseObject({
    type: z.literal('input_image'),
    detail: z.enum(['low', 'high', 'auto']).nullish(),
    file_id: nullableString,
    image_url: nullableString,
  }),
  InputFilePart,
]);
const ToolOutput = z.union([z.string(), z.array(ToolOutputPart)]);

// ---------------------------------------------------------------------------------------------------
// Token metadata carried by the reference's training variants (message, function_call, reasoning)

const TOKEN_METADATA_REQUIRED = ['prompt_token_ids', 'generation_token_ids', 'generation_log_probs'] as const;
const tokenMetadataShape = {
  prompt_token_ids: z.array(Int).optional(),
  generation_token_ids: z.array(Int).optional(),
  generation_log_probs: z.array(z.number()).optional(),
  routed_experts: z.union([z.string(), z.array(z.array(z.array(Int)))]).optional(),
};

function requireCompleteTokenMetadata(item: Record<string, unknown>, ctx: z.RefinementCtx): void {
  const present = (key: string): boolean => item[key] !== undefined;
  if (!present('routed_experts') && !TOKEN_METADATA_REQUIRED.some(present)) return;
  const missing = TOKEN_METADATA_REQUIRED.filter((key) => !present(key));
  if (missing.length > 0) {
    ctx.addIssue({
      code: 'custom',
      message: `Token metadata must include all required fields; missing: ${missing.join(', ')}`,
      path: [],
    });
  }
}

// ---------------------------------------------------------------------------------------------------
// Items (§6.2). One union serves input, output and instructions; only the message `type` differs.

const MESSAGE_ROLES = ['user', 'assistant', 'system', 'developer'] as const;
const MessageRole = z.enum(MESSAGE_ROLES);

/**
 * The three message forms, in the order the error formatter relies on (MESSAGE_FORM): assistant
 * output message (first because it is the commonest and a union stops at the first match), easy
 * input message (string or input-part content, also the short assistant form), input message.
 * `type` is required in output and may be omitted in input.
 */
function messageForms<T extends z.ZodType>(type: T) {
  const easyInput = z
    .looseObject({ type, role: MessageRole, content: z.union([z.string(), InputContentList]), ...tokenMetadataShape })
    .superRefine(requireCompleteTokenMetadata);
  const input = z
    .looseObject({
      type,
      role: z.enum(['user', 'system', 'developer']),
      content: InputContentList,
      status: ItemStatus.optional(),
      ...tokenMetadataShape,
    })
    .superRefine(requireCompleteTokenMetadata);
  const output = z
    .looseObject({
      type,
      id: z.string(),
      role: z.literal('assistant').optional(),
      status: ItemStatus.optional(),
      content: z.array(OutputContentPart),
      ...tokenMetadataShape,
    })
    .superRefine(requireCompleteTokenMetadata);
  const forms = z.union([output, easyInput, input]);
  // A plain union has no discriminator values of its own, so it cannot sit in a discriminated union;
  // the pipe's first stage supplies them. The stage only checks `type` (the union sees a copy of the
  // item), and the cast just tells the type checker that the union accepts that stage's output.
  const tag = z.looseObject({ type });
  return tag.pipe(forms as unknown as z.ZodType<z.output<typeof forms>, z.output<typeof tag>>);
}

const MESSAGE_FORM = { output: 0, easyInput: 1, input: 2 } as const;

export const FunctionCallSchema = z
  .looseObject({
    type: z.literal('function_call'),
    arguments: z.string(),
    call_id: z.string(),
    name: z.string(),
    id: nullableString,
    status: ItemStatus.nullish(),
    ...tokenMetadataShape,
  })
  .superRefine(requireCompleteTokenMetadata);

export const FunctionCallOutputSchema = z.looseObject({
  type: z.literal('function_call_output'),
  call_id: z.string(),
  output: ToolOutput,
  id: nullableString,
  status: ItemStatus.nullish(),
});

const ReasoningItem = z
  .looseObject({
    type: z.literal('reasoning'),
    id: z.string(),
    summary: z.array(z.looseObject({ type: z.literal('summary_text'), text: z.string() })),
    encrypted_content: nullableString,
    content: z.array(z.looseObject({ type: z.literal('reasoning_text'), text: z.string() })).nullish(),
    ...tokenMetadataShape,
  })
  .superRefine(requireCompleteTokenMetadata);

const McpCall = z.looseObject({
  type: z.literal('mcp_call'),
  arguments: z.string(),
  name: z.string(),
  id: nullableString,
  server_label: nullableString,
  status: nullableString,
  output: nullableString,
  error: nullableString,
  approval_request_id: nullableString,
});
const McpListTools = z.looseObject({
  type: z.literal('mcp_list_tools'),
  tools: z.array(z.unknown()).nullish(),
  id: nullableString,
  server_label: nullableString,
  error: nullableString,
});
const McpApprovalRequest = z.looseObject({
  type: z.literal('mcp_approval_request'),
  arguments: z.string(),
  name: z.string(),
  id: nullableString,
  server_label: nullableString,
});
const McpApprovalResponse = z.looseObject({
  type: z.literal('mcp_approval_response'),
  approval_request_id: z.string(),
  approve: z.boolean(),
  id: nullableString,
  reason: nullableString,
});

// Hosted-tool items: required fields as the OpenAI types declare them; statuses are kept as strings
// because Gym never reads them and each tool has its own, growing list.
const FileSearchCall = z.looseObject({
  type: z.literal('file_search_call'),
  id: z.string(),
  queries: z.array(z.string()),
  status: z.string(),
  results: z.array(z.unknown()).nullish(),
});
const WebSearchCall = z.looseObject({
  type: z.literal('web_search_call'),
  id: z.string(),
  action: AnyObject,
  status: z.string(),
});
const ComputerCall = z.looseObject({
  type: z.literal('computer_call'),
  id: z.string(),
  action: AnyObject,
  call_id: z.string(),
  pending_safety_checks: z.array(AnyObject),
  status: z.string(),
});
const ComputerCallOutput = z.looseObject({
  type: z.literal('computer_call_output'),
  call_id: z.string(),
  output: z.looseObject({ type: z.literal('computer_screenshot') }),
  id: nullableString,
  acknowledged_safety_checks: z.array(AnyObject).nullish(),
  status: nullableString,
});
const ImageGenerationCall = z.looseObject({
  type: z.literal('image_generation_call'),
  id: z.string(),
  status: z.string(),
  result: nullableString,
});
const CodeInterpreterCall = z.looseObject({
  type: z.literal('code_interpreter_call'),
  id: z.string(),
  container_id: z.string(),
  status: z.string(),
  code: nullableString,
  outputs: z.array(z.unknown()).nullish(),
});
const LocalShellCall = z.looseObject({
  type: z.literal('local_shell_call'),
  id: z.string(),
  action: AnyObject,
  call_id: z.string(),
  status: z.string(),
});
const LocalShellCallOutput = z.looseObject({
  type: z.literal('local_shell_call_output'),
  id: z.string(),
  output: z.string(),
  status: nullableString,
});
const CustomToolCall = z.looseObject({
  type: z.literal('custom_tool_call'),
  call_id: z.string(),
  input: z.string(),
  name: z.string(),
  id: nullableString,
});
const CustomToolCallOutput = z.looseObject({
  type: z.literal('custom_tool_call_output'),
  call_id: z.string(),
  output: ToolOutput,
  id: nullableString,
});

const nonMessageItems = [
  FunctionCallSchema,
  FunctionCallOutputSchema,
  ReasoningItem,
  McpCall,
  McpListTools,
  McpApprovalRequest,
  McpApprovalResponse,
  FileSearchCall,
  WebSearchCall,
  ComputerCall,
  ComputerCallOutput,
  ImageGenerationCall,
  CodeInterpreterCall,
  LocalShellCall,
  LocalShellCallOutput,
  CustomToolCall,
  CustomToolCallOutput,
] as const;

/** An item in a response's `output`: `type` is required. */
export const OutputItemSchema = z.discriminatedUnion('type', [messageForms(z.literal('message')), ...nonMessageItems]);
/** An item in a request's `input` (or `instructions`): a message may omit `type`. */
export const InputItemSchema = z.discriminatedUnion('type', [
  messageForms(z.literal('message').optional()),
  ...nonMessageItems,
]);

// ---------------------------------------------------------------------------------------------------
// Usage (§6.3): every key required when usage is present; the two detail counts may be null.

export const UsageSchema = z.looseObject({
  input_tokens: Int,
  input_tokens_details: z.looseObject({ cached_tokens: Int.nullable() }),
  output_tokens: Int,
  output_tokens_details: z.looseObject({ reasoning_tokens: Int.nullable() }),
  total_tokens: Int,
});

// ---------------------------------------------------------------------------------------------------
// Tools and tool choice

const WEB_SEARCH_TYPES = ['web_search', 'web_search_2025_08_26', 'web_search_preview', 'web_search_preview_2025_03_11'] as const;

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

const TOOL_CHOICE_MODES = ['none', 'auto', 'required'] as const;
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
const SERVICE_TIERS = ['auto', 'default', 'flex', 'scale', 'priority'] as const;
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
const TRUNCATIONS = ['auto', 'disabled'] as const;
const Truncation = z.enum(TRUNCATIONS);

// ---------------------------------------------------------------------------------------------------
// The Response object (§6.1). `output_text` is an SDK convenience, not part of the wire contract.

const RESPONSE_STATUSES = ['completed', 'failed', 'in_progress', 'cancelled', 'queued', 'incomplete'] as const;

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
// Request create-params (§6.5): strict at the top level only.

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

// ---------------------------------------------------------------------------------------------------
// Types

export type ResponseObject = z.infer<typeof ResponseSchema>;
export type OutputItem = z.infer<typeof OutputItemSchema>;
export type InputItem = z.infer<typeof InputItemSchema>;
export type FunctionCall = z.infer<typeof FunctionCallSchema>;
export type FunctionCallOutput = z.infer<typeof FunctionCallOutputSchema>;
export type Usage = z.infer<typeof UsageSchema>;
export type CreateParams = z.infer<typeof CreateParamsSchema>;

export type Validation<T> = { ok: true; value: T } | { ok: false; message: string };


// ---------------------------------------------------------------------------------------------------
// Fast path: certain answers for the common shapes, without zod.
//
// Zod gives the exact verdict and the error text, but it is slow until V8 has warmed it up, and each rollout
// validates about eight objects across the collector, the agent and the environment (together ≈ 0.15 ms of CPU
// per rollout in the bench's scenario 1). The checks below accept only objects the schemas above certainly
// accept: each checks the fields of the common shapes exactly as the schema declares them, and every declared
// field it does not check must be absent. Anything else is "not sure" and goes to zod. The contract tests hold
// every validate* verdict equal to the schema's on thousands of mutated objects.

type Check = (value: unknown) => boolean;

const isString: Check = (value) => typeof value === 'string';
const isBoolean: Check = (value) => typeof value === 'boolean';
const isSafeInt: Check = (value) => Number.isSafeInteger(value);
const isFiniteNumber: Check = (value) => typeof value === 'number' && Number.isFinite(value);
const isNil: Check = (value) => value === undefined || value === null;
const nil = (check: Check): Check => (value) => value === undefined || value === null || check(value);
const optional = (check: Check): Check => (value) => value === undefined || check(value);
const oneOf = (values: readonly unknown[]): Check => (value) => values.includes(value);
const exactly = (expected: unknown): Check => (value) => value === expected;
/** Every element, holes included (`every` would skip the holes of a sparse array; zod sees them as undefined). */
const listOf = (check: Check): Check => (value) => {
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

const TOKEN_METADATA_KEYS = Object.keys(tokenMetadataShape);
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
const plainFunctionCall = looseObject(Object.keys(FunctionCallSchema.shape), {
  type: exactly('function_call'),
  arguments: isString,
  call_id: isString,
  name: isString,
  id: nil(isString),
  status: itemStatus,
});
const plainFunctionCallOutput = looseObject(Object.keys(FunctionCallOutputSchema.shape), {
  type: exactly('function_call_output'),
  call_id: isString,
  output: isString,
  id: nil(isString),
  status: itemStatus,
});
const plainReasoning = looseObject(Object.keys(ReasoningItem.shape), {
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
  isRecord(item) && (item.type === 'message' ? plainOutputMessage(item) : (NON_MESSAGE_ITEMS.get(item.type)?.(item) ?? false));
const plainInputItem: Check = (item) =>
  isRecord(item) &&
  (item.type === undefined || item.type === 'message'
    ? plainEasyMessage(item) || plainOutputMessage(item)
    : (NON_MESSAGE_ITEMS.get(item.type)?.(item) ?? false));

const plainUsage = looseObject(Object.keys(UsageSchema.shape), {
  input_tokens: isSafeInt,
  input_tokens_details: looseObject(['cached_tokens'], { cached_tokens: (value) => value === null || isSafeInt(value) }),
  output_tokens: isSafeInt,
  output_tokens_details: looseObject(['reasoning_tokens'], { reasoning_tokens: (value) => value === null || isSafeInt(value) }),
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

const plainResponse = looseObject(Object.keys(ResponseSchema.shape), {
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

const plainCreateParams = strictObject(Object.keys(CreateParamsSchema.shape), {
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

// ---------------------------------------------------------------------------------------------------
// Validation entry points. On success the value is the caller's own object, untouched.

export function validateResponse(value: unknown): Validation<ResponseObject> {
  if (plainResponse(value)) return { ok: true, value: value as ResponseObject };
  const result = ResponseSchema.safeParse(value);
  if (result.success) return { ok: true, value: value as ResponseObject };
  return { ok: false, message: describeIssues(result.error.issues, value, []) };
}

export function validateCreateParams(value: unknown): Validation<CreateParams> {
  if (plainCreateParams(value)) return { ok: true, value: value as CreateParams };
  const result = CreateParamsSchema.safeParse(value);
  if (result.success) return { ok: true, value: value as CreateParams };
  return { ok: false, message: describeIssues(result.error.issues, value, []) };
}

/** `null` and `undefined` mean "no usage reported", which is valid; anything else must be complete. */
export function validateUsage(value: unknown): Validation<Usage | null> {
  if (value === null || value === undefined) return { ok: true, value: null };
  if (plainUsage(value)) return { ok: true, value: value as Usage };
  const result = UsageSchema.safeParse(value);
  if (result.success) return { ok: true, value: value as Usage };
  return { ok: false, message: describeIssues(result.error.issues, { usage: value }, ['usage']) };
}

// ---------------------------------------------------------------------------------------------------
// Helpers over validated data

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
    if (key === '__proto__') Object.defineProperty(copy, key, { value: item, enumerable: true, writable: true, configurable: true });
    else copy[key] = item;
  }
  return copy as T;
}

function addCounts(a: number | null | undefined, b: number | null | undefined): number | null {
  return a == null || b == null ? null : a + b;
}

/** The Responses object a failure row carries (remote-agent-cases.md §0.1). A fresh object per call. */
export function placeholderResponse(): ResponseObject {
  return {
    id: 'remote_agent_failure',
    created_at: 0,
    model: 'remote_agent',
    object: 'response',
    output: [
      {
        id: 'msg_0',
        type: 'message',
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: '', annotations: [] }],
      },
    ],
    parallel_tool_calls: false,
    tool_choice: 'auto',
    tools: [],
  };
}

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

// ---------------------------------------------------------------------------------------------------
// Error text: one readable line, naming the item index and field path.

type Issue = z.core.$ZodIssue;
type Path = readonly PropertyKey[];

const MAX_REPORTED_ISSUES = 3;
const ITEM_LIST_KEYS = new Set<PropertyKey>(['output', 'input', 'instructions']);

function describeIssues(issues: readonly Issue[], root: unknown, prefix: Path): string {
  const lines = [...new Set(issues.flatMap((issue) => describeIssue(issue, root, prefix)))];
  const shown = lines.slice(0, MAX_REPORTED_ISSUES).join('; ');
  const hidden = lines.length - MAX_REPORTED_ISSUES;
  return hidden > 0 ? `${shown} (+${hidden} more)` : shown;
}

function describeIssue(issue: Issue, root: unknown, prefix: Path): string[] {
  const path = [...prefix, ...issue.path];
  const value = valueAt(root, path);
  switch (issue.code) {
    case 'invalid_type':
      if (value === undefined) return [at(path, 'required')];
      if (issue.expected === 'int' && typeof value === 'number') {
        return [at(path, `expected integer, received ${value}`)];
      }
      return [at(path, `expected ${issue.expected}, received ${typeName(value)}`)];
    case 'invalid_value':
      if (value === undefined) return [at(path, 'required')];
      return [at(path, `expected ${issue.values.map(show).join('|')}, received ${show(value)}`)];
    case 'unrecognized_keys':
      return issue.keys.map((key) => at([...path, key], 'unknown field'));
    case 'invalid_union':
      return describeUnionIssue(issue, root, path, value);
    default:
      return [at(path, issue.message)];
  }
}

function describeUnionIssue(
  issue: Extract<Issue, { code: 'invalid_union' }>,
  root: unknown,
  path: Path,
  value: unknown,
): string[] {
  if (issue.discriminator !== undefined && issue.errors.length === 0) {
    // A discriminated union found no member for this `type` (the issue sits at `<holder>.type`).
    const holderPath = path.slice(0, -1);
    if (value === undefined) {
      return isItemPath(holderPath)
        ? [at(holderPath, 'Responses API output items must include a type discriminator')]
        : [at(path, 'required')];
    }
    return [at(path, `unknown ${kindOf(holderPath)} type ${show(value)}`)];
  }
  if (issue.errors.length === 0) return [at(path, issue.message)];

  // The only plain union at an item position is the message union (MESSAGE_FORM order).
  if (isItemPath(path) && issue.errors.length === Object.keys(MESSAGE_FORM).length) {
    const form = issue.errors[messageFormOf(value)] ?? [];
    return form.flatMap((inner) => describeIssue(inner, root, path));
  }

  const branch = closestBranch(issue.errors);
  if (branch.length > 0 && isRootMismatch(branch)) {
    if (value === undefined) return [at(path, 'required')];
    const expected = [...new Set(issue.errors.flatMap((errors) => errors.map(expectedOf)))];
    return [at(path, `expected ${expected.join(' or ')}, received ${typeName(value)}`)];
  }
  return branch.flatMap((inner) => describeIssue(inner, root, path));
}

/** Which message form the sender meant, judged from the content, so errors describe that form only. */
function messageFormOf(message: unknown): number {
  if (!isRecord(message)) return MESSAGE_FORM.easyInput;
  const content = message.content;
  if (!Array.isArray(content)) return MESSAGE_FORM.easyInput;
  const hasOutputParts = content.some(
    (part) => isRecord(part) && (part.type === 'output_text' || part.type === 'refusal'),
  );
  return hasOutputParts || message.role === undefined ? MESSAGE_FORM.output : MESSAGE_FORM.easyInput;
}

/** The union member that got furthest: not a plain type mismatch, deepest issue, fewest issues. */
function closestBranch(branches: readonly (readonly Issue[])[]): readonly Issue[] {
  let best: readonly Issue[] = [];
  let bestScore: number[] | undefined;
  for (const branch of branches) {
    const score = [
      isRootMismatch(branch) ? 0 : 1,
      Math.max(0, ...branch.map((issue) => issue.path.length)),
      -branch.length,
    ];
    if (bestScore === undefined || compareScores(score, bestScore) > 0) {
      best = branch;
      bestScore = score;
    }
  }
  return best;
}

function compareScores(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < a.length; i++) {
    const diff = (a[i] ?? 0) - (b[i] ?? 0);
    if (diff !== 0) return diff;
  }
  return 0;
}

function isRootMismatch(branch: readonly Issue[]): boolean {
  return branch.every(
    (issue) => issue.path.length === 0 && (issue.code === 'invalid_type' || issue.code === 'invalid_value'),
  );
}

function expectedOf(issue: Issue): string {
  if (issue.code === 'invalid_type') return issue.expected === 'int' ? 'integer' : issue.expected;
  if (issue.code === 'invalid_value') return issue.values.map(show).join('|');
  return issue.message;
}

function isItemPath(path: Path): boolean {
  return path.length === 2 && ITEM_LIST_KEYS.has(path[0]!) && typeof path[1] === 'number';
}

function kindOf(holderPath: Path): string {
  if (isItemPath(holderPath)) return 'item';
  const parentKey = holderPath[holderPath.length - 2];
  if (parentKey === 'content' || parentKey === 'output') return 'content part';
  if (parentKey === 'annotations') return 'annotation';
  if (parentKey === 'tools') return 'tool';
  return holderPath[holderPath.length - 1] === 'tool_choice' ? 'tool_choice' : 'value';
}

function at(path: Path, text: string): string {
  const rendered = formatPath(path);
  return rendered === '' ? text : `${rendered}: ${text}`;
}

function formatPath(path: Path): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else if (typeof key === 'string' && /^[A-Za-z_$][\w$]*$/.test(key)) out += out === '' ? key : `.${key}`;
    else out += `[${JSON.stringify(String(key))}]`;
  }
  return out;
}

function valueAt(root: unknown, path: Path): unknown {
  let current = root;
  for (const key of path) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<PropertyKey, unknown>)[key];
  }
  return current;
}

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

/** A short rendering of a primitive for error text; containers are named by type, never dumped. */
function show(value: unknown): string {
  if (typeof value === 'string') return `'${value.length > 40 ? `${value.slice(0, 40)}…` : value}'`;
  if (value === null || typeof value === 'number' || typeof value === 'boolean') return String(value);
  return typeName(value);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
