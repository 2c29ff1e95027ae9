/**
 * `tsgym/service`: write an agent service that tsgym's remote agent can drive, in a few lines.
 *
 * You write `decide(conversation, tools, ctx)`: look at the conversation so far and return either
 * `{ toolCalls: [{ name, arguments }] }` (Gym runs them and calls you again with the results) or
 * `{ final: 'answer' }` (the rollout is done). The kit does the rest of the contract: the HTTP server,
 * request checks, ids, the exact Responses output shapes, a complete `usage`, per-rollout state behind a cookie,
 * and refusing asks for tools the request did not declare.
 *
 * ```ts
 * import { serve } from 'tsgym/service';
 *
 * await serve((conversation, tools, ctx) => {
 *   const results = conversation.filter((item) => item.type === 'function_call_output');
 *   if (results.length === 0) return { toolCalls: [{ name: 'get_counter_value', arguments: {} }] };
 *   return { final: String(JSON.parse(String(results[0]!.output)).count) };
 * }, { port: 9000 });
 * ```
 */
export {
  createHandler,
  createServiceApp,
  serve,
  RESPONSES_PATH,
  type Decide,
  type DecideContext,
  type RunningService,
  type ServeOptions,
  type ServiceOptions,
} from './handler.js';
export {
  parseJsonDecision,
  DecisionError,
  type Decision,
  type InternalToolRecord,
  type TokenUsage,
  type ToolCall,
} from './decision.js';
export {
  functionTools,
  messageText,
  normalizeInput,
  outputText,
  renderConversation,
  toolHistory,
  userMessages,
  type ConversationItem,
  type FunctionTool,
  type ToolCallRecord,
} from './conversation.js';
export type { RolloutStateOptions } from './rollout-state.js';
