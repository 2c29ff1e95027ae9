/**
 * Zod schemas of the items a Responses body carries: messages in their three forms,
 * function calls and their outputs, reasoning, MCP and hosted-tool items, and the content parts inside them.
 * One union serves a response's `output` and a request's `input` and `instructions`; only whether a message must
 * name its `type` differs.
 *
 * Item and part unions are discriminated on `type`, so a known item is checked against its one member and errors
 * name that member's fields instead of the whole union. Every object here is loose: unknown fields are tolerated.
 */
import { z } from 'zod';
import { AnyObject, Int, nullableString } from './scalars.js';
import { ITEM_STATUSES, MESSAGE_ROLES } from './declared.js';

const ItemStatus = z.enum(ITEM_STATUSES);

// ---------------------------------------------------------------------------------------------------
// Content parts

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
export const tokenMetadataShape = {
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
// Items. One union serves input, output and instructions; only the message `type` differs.

const MessageRole = z.enum(MESSAGE_ROLES);

/**
 * The three message forms, in the order the error text relies on (MESSAGE_FORM, read by issue-text.ts):
 * assistant output message (first because it is the commonest and a union stops at the first match), easy
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

/** Where each form sits in `messageForms`' union, so the error text can pick the failed form's issues. */
export const MESSAGE_FORM = { output: 0, easyInput: 1, input: 2 } as const;

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

export const ReasoningItem = z
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

export type OutputItem = z.infer<typeof OutputItemSchema>;
export type InputItem = z.infer<typeof InputItemSchema>;
export type FunctionCall = z.infer<typeof FunctionCallSchema>;
export type FunctionCallOutput = z.infer<typeof FunctionCallOutputSchema>;
