import { performance } from 'node:perf_hooks';
import {
  isAssistantMessage,
  normalizeInput,
  sumUsage,
  type CreateParams,
  type ResponseObject,
  type Usage,
} from '../contract/index.js';
import { JsonTooDeep, parseBoundedJson } from '../bounded-json/index.js';
import { RetryableRolloutError, TerminalRolloutError } from '../errors.js';
import type { CookieJar } from '../http/cookies.js';
import { RESERVED_ROUTES } from '../server/resources-server.js';
import type { RunBudget } from './budget.js';
import type { Environment, EnvironmentJar } from './resources-client.js';
import type { ServiceClient } from './service-client.js';
import type { RolloutProgress } from './status.js';
import { encodeElement, StepBody, verifyBody, type EncodedResponse } from './step-body.js';

/**
 * The agent loop, in process (no internal HTTP hop, so the run deadline reaches the in-flight service call).
 *
 * Each step sends the row's `responses_create_params` exactly as the dataset set them, with `input` = the
 * original input + every item so far (the service's items exactly as sent, Gym's tool outputs). What the service
 * returns decides the next step:
 *
 *   incomplete_details set             → stop before running anything; verify what we have
 *   unpaired function_calls            → run each against the environment, append the outputs, call again
 *                                        (an assistant message alongside them does not end the rollout)
 *   an assistant message, no asks      → done
 *   none of these                      → fail at once (D4: the contract gives exactly two reasons to return)
 *
 * `max_steps` stops the loop after the step's tools ran.
 */

export interface LoopContext {
  service: ServiceClient;
  environment: Environment;
  /** The rollout's cookies for the service and for the environment: two jars that never mix (D7). */
  serviceJar: CookieJar;
  envJar: EnvironmentJar;
  maxSteps: number | null;
  budget: RunBudget;
  /** The rollout's live stage for `GET /status` (absent on the `/v1/responses` route). */
  progress?: RolloutProgress;
}

/** Run the loop to its end; what it produced is in `trajectory` (also when it throws). */
export async function runAgentLoop(params: CreateParams, ctx: LoopContext, trajectory: Trajectory): Promise<void> {
  const body = new StepBody(params, normalizeInput(params.input));
  for (let step = 1; ; step++) {
    const asks = await serviceStep(params, body, ctx, trajectory, step);
    if (asks === undefined) break;
    for (const call of asks) {
      ctx.progress?.enter('running_tool', step, call.name);
      trajectory.addToolOutput(await runTool(call, ctx));
    }
    if (ctx.maxSteps !== null && step >= ctx.maxSteps) break;
  }
}

/**
 * One service call: its answer goes into the trajectory (encoded), then the asks to run, or undefined when the
 * rollout is done. The parsed answer ends here: only the asks outlive the call.
 */
async function serviceStep(
  params: CreateParams,
  body: StepBody,
  ctx: LoopContext,
  trajectory: Trajectory,
  step: number,
): Promise<FunctionCallItem[] | undefined> {
  ctx.progress?.enter('calling_service', step);
  const sentAt = performance.now();
  const answer = await ctx.service.respond(
    body.forCall(trajectory.items),
    params,
    ctx.serviceJar,
    ctx.budget,
    ctx.progress,
  );
  const response = answer.response;
  trajectory.addResponse(response, performance.now() - sentAt, answer.usageFilled);
  checkResponseStatus(response);
  if (response.incomplete_details) return undefined;

  const { asks, hasAssistantMessage } = planStep(response.output);
  if (asks.length > 0) return asks;
  if (hasAssistantMessage) return undefined;
  throw new RetryableRolloutError(
    'REMOTE_NO_PROGRESS',
    'the remote service returned neither a tool call nor a final message (no unpaired function_call, no ' +
      'assistant message, no incomplete_details); each response must ask for Gym tools or finish',
  );
}

// ---------------------------------------------------------------------------------------------------
// Reading one response

export interface FunctionCallItem {
  type: 'function_call';
  call_id: string;
  name: string;
  arguments: string;
}

/**
 * The asks of one response, single pass: a `function_call` is an ask unless the same response carries a
 * `function_call_output` with its `call_id` (before or after it). Asks run in order of first appearance; a
 * repeated `call_id` keeps its first position and its last arguments (a Map keeps insertion order on overwrite).
 */
export function planStep(output: readonly unknown[]): { asks: FunctionCallItem[]; hasAssistantMessage: boolean } {
  const pending = new Map<string, FunctionCallItem>();
  const answered = new Set<string>();
  let hasAssistantMessage = false;
  for (const item of output) {
    const it = item as { type?: unknown; call_id?: unknown };
    if (it.type === 'function_call') {
      const call = item as FunctionCallItem;
      if (!answered.has(call.call_id)) pending.set(call.call_id, call);
    } else if (it.type === 'function_call_output' && typeof it.call_id === 'string') {
      answered.add(it.call_id);
      pending.delete(it.call_id);
    } else if (isAssistantMessage(item)) {
      hasAssistantMessage = true;
    }
  }
  return { asks: [...pending.values()], hasAssistantMessage };
}

/** U13: a response that says the service did not finish is a failure, not a step. */
function checkResponseStatus(response: ResponseObject): void {
  const { status, error } = response;
  if (status === 'in_progress' || status === 'queued') {
    throw new TerminalRolloutError(
      'REMOTE_BACKGROUND_RESPONSE',
      `the remote service returned a response with status '${status}': background responses are not supported; ` +
        'answer each /v1/responses call with the finished step',
    );
  }
  if (status === 'failed' || status === 'cancelled' || error) {
    const detail = error ? `${error.code}: ${error.message}` : 'no error details given';
    throw new RetryableRolloutError(
      'REMOTE_REPORTED_FAILURE',
      `the remote service reported a failed response (status ${status ?? 'unset'}): ${detail}`,
    );
  }
}

// ---------------------------------------------------------------------------------------------------
// Running one ask

const TOOL_NAME = /^[A-Za-z0-9_.-]{1,128}$/;

async function runTool(call: FunctionCallItem, ctx: LoopContext): Promise<FunctionCallOutputItem> {
  const output = (text: string): FunctionCallOutputItem => ({
    type: 'function_call_output',
    call_id: call.call_id,
    output: text,
  });
  const refusal = toolNameRefusal(call.name);
  if (refusal) return output(errorOutput(refusal));
  const args = checkArguments(call.arguments);
  if (!args.ok) return output(errorOutput(`Invalid tool call arguments: ${args.reason}`));
  return output(await ctx.environment.callTool(call.name, call.arguments, ctx.envJar, ctx.budget));
}

/** D5: a tool name is a plain identifier and never one of the environment's own routes. */
export function toolNameRefusal(name: unknown): string | undefined {
  const shown = JSON.stringify(String(name).slice(0, 128));
  if (typeof name !== 'string' || !TOOL_NAME.test(name) || name === '.' || name === '..') {
    return `Tool ${shown} is not available: tool names are plain identifiers ([A-Za-z0-9_.-], 1-128 characters).`;
  }
  if (RESERVED_ROUTES.has(name)) {
    return `Tool ${shown} is not available: '${name}' is a route the environment reserves, not a tool.`;
  }
  return undefined;
}

/** D6: arguments must be a JSON object; anything else is answered locally without contacting the environment. */
export function checkArguments(text: string): { ok: true } | { ok: false; reason: string } {
  if (text.trim() === '') return { ok: false, reason: 'arguments are empty, expected a JSON object' };
  let value: unknown;
  try {
    value = parseBoundedJson(text);
  } catch (err) {
    if (err instanceof JsonTooDeep) return { ok: false, reason: err.message };
    return { ok: false, reason: `${(err as Error).name}: ${(err as Error).message}` };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    const kind = value === null ? 'null' : Array.isArray(value) ? 'an array' : `a ${typeof value}`;
    return { ok: false, reason: `expected a JSON object, got ${kind}` };
  }
  return { ok: true };
}

/** The output text of a call Gym refused, shaped as the reference shapes it (`json.dumps({"error": …})`). */
function errorOutput(message: string): string {
  return `{"error": ${JSON.stringify(message)}}`;
}

// ---------------------------------------------------------------------------------------------------
// The trajectory

export interface FunctionCallOutputItem {
  type: 'function_call_output';
  call_id: string;
  output: string;
}

/**
 * Everything the rollout produced so far: the service's items exactly as sent plus Gym's tool outputs, in order,
 * and the usage summed over the steps that reported it. Kept outside the loop so a failed rollout still has its
 * evidence (D2).
 *
 * The items are kept only encoded, each as `JSON.stringify` writes it, the moment it arrives: every body the rollout
 * sends (service calls, `/verify`, the `/v1/responses` reply) is written from these bytes, and a parsed item is
 * dropped with the step that read it. Only a failure row parses them back (`toResponse`).
 */
export class Trajectory {
  /** Every item so far, encoded. */
  readonly items: Buffer[] = [];
  /** Wall time of each step's service call (overload waits included), in milliseconds. */
  readonly stepLatenciesMs: number[] = [];
  steps = 0;
  stepsWithUsage = 0;
  /** Some step's usage detail objects were zeros filled in by Gym, not counts from the service (D24). */
  usageFilled = false;
  /** The last response's members, its `output` emptied (its items are in `items`). */
  private last: ResponseObject | undefined;
  private usage: Usage | null = null;
  /** Set by `sealForVerify`: the `/verify` body, which then holds the items. */
  private sealedBody: Buffer | undefined;

  addResponse(response: ResponseObject, latencyMs = 0, usageFilled = false): void {
    this.last = { ...response, output: [] };
    if (usageFilled) this.usageFilled = true;
    this.stepLatenciesMs.push(latencyMs);
    this.steps++;
    for (const item of response.output) this.items.push(encodeElement(item));
    if (response.usage != null) {
      this.stepsWithUsage++;
      this.usage = sumUsage(this.usage, response.usage);
    }
  }

  addToolOutput(item: FunctionCallOutputItem): void {
    this.items.push(encodeElement(item));
  }

  get isEmpty(): boolean {
    return this.last === undefined;
  }

  /** `_ng_step_latency_secs`: each step's service latency in seconds (millisecond precision). */
  stepLatenciesSecs(): number[] {
    return this.stepLatenciesMs.map((ms) => Math.round(ms) / 1000);
  }

  /** The last response, encoded, with `output` = every item so far and `usage` = the sum (null if none reported). */
  encoded(): EncodedResponse {
    if (!this.last) throw new Error('Trajectory.encoded() before any response');
    if (this.sealedBody) throw new Error('Trajectory.encoded() after sealForVerify');
    return { fields: { ...this.last, usage: this.usage }, items: this.items };
  }

  /**
   * The `/verify` body for `row` (`verifyBody`), after which the trajectory holds only that body: its items are in
   * it, and while the environment verifies, a rollout holds its trajectory once, not twice (the rollouts of a run
   * reach their verify steps together). Nothing is added after this.
   */
  sealForVerify(row: Record<string, unknown>): Buffer {
    const body = verifyBody(row, this.encoded());
    this.items.length = 0;
    this.sealedBody = body;
    return body;
  }

  /**
   * The same response as an object, its items parsed back from their encodings, or once sealed from the `/verify`
   * body (for a failure row's evidence, written as JSON: the same text either way).
   */
  toResponse(): ResponseObject {
    if (!this.last) throw new Error('Trajectory.toResponse() before any response');
    if (this.sealedBody) return (JSON.parse(this.sealedBody.toString('utf8')) as { response: ResponseObject }).response;
    const output = this.items.map((item) => JSON.parse(item.toString('utf8')) as unknown);
    return { ...this.last, output: output as ResponseObject['output'], usage: this.usage };
  }
}
