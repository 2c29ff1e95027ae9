import { performance } from 'node:perf_hooks';
import {
  isAssistantMessage,
  normalizeInput,
  validateCreateParams,
  type CreateParams,
  type ResponseObject,
} from '../contract/index.js';
import { describeError, isGymError, RetryableRolloutError, TerminalRolloutError, type GymError } from '../errors.js';
import { CookieJar } from '../http/cookies.js';
import { RESULT_KEYS } from '../runfiles/result-keys.js';
import { NG } from '../runfiles/ng-keys.js';
import { failureRow, type FailureRow, type Row } from '../runfiles/row.js';
import type { FifoSemaphore } from '../server/agent-server.js';
import { rolloutTracer } from '../tracing/spans.js';
import { withRunBudget, type RunBudget, type RunClock } from './budget.js';
import type { AgentLog } from './log.js';
import { ResourcesJar, VerifiedRow, type ResourcesClient } from './resources-client.js';
import type { ServiceClient } from './service-client.js';
import type { RemoteAgentConfig } from './settings.js';
import type { RolloutProgress, RolloutRegistry } from './status.js';
import { StepBody } from './step-body.js';
import { RolloutModelCapture, type ModelServerTarget } from './model-capture.js';
import { MODEL_BASE_URL_HEADER } from '../contract/gym-wire.js';
import { MODEL_CALL_CAPTURE_KEY } from '../model-server/records.js';
import { evaluationCapture, maskedFailureFields, rebuildTokenFields } from '../training/rebuild.js';
import { RolloutTrace, type TraceHeaders } from './trace.js';
import { Trajectory } from './trajectory.js';

/**
 * One `/run`: row in, result row out, never an exception. Seed a fresh environment session, run the loop against
 * the service, verify on the same session, and return what `/verify` returned, as the reference does (decision C4):
 * the environment decides what a row holds and may leave dataset fields out on purpose (answer keys, images, bulky
 * inputs); the collector adds its stamps. Every failure becomes a
 * reward-0 row (docs/design.md, "The failure row") whose `_ng_failure_terminal` comes from the typed error's class,
 * never from its text (D3), and which keeps the evidence: the partial trajectory and timing (D2).
 *
 * This file reads in the order a rollout runs: `runRollout` (the row, the run budget, the failure backstop), then
 * `seedLoopVerify` (the steps), then the loop (`runServiceLoop`: a service call, then the tools it asked for), then
 * the failure row. The hops themselves are the two clients': ./service-client.ts and ./resources-client.ts.
 */

export interface RolloutContext {
  config: RemoteAgentConfig;
  service: ServiceClient;
  resources: ResourcesClient;
  limiter: FifoSemaphore;
  log: AgentLog;
  /** In-flight rollouts for `GET /status`. */
  registry?: RolloutRegistry;
  /** The agent instance's name, for the rollout span (D25). */
  agentName?: string;
  /** `model_server`: each rollout's model calls go through it, and their records land on the row. */
  modelServer?: ModelServerTarget;
}

export const FAILURE_CLASS = 'remote_agent_error';

/** A row fed back as input without what a previous run's result added to it (RESULT_KEYS). */
export function stripStaleKeys(row: Row): Row {
  const clean: Row = { ...row };
  for (const key of RESULT_KEYS) delete clean[key];
  return clean;
}

export interface RunOptions {
  /** Aborted when the caller hangs up. */
  callerSignal?: AbortSignal;
  /**
   * Add `_ng_step_latency_secs` to a success result: only when the caller asked (tsgym's collector does, with the
   * `x-gym-step-latency: 1` header, then folds the list into the run status and takes it off the row). Any other
   * caller, NeMo Gym's collector included, gets exactly what `/verify` returned (C4). Failure rows always carry it.
   */
  stepLatency?: boolean;
  /** The `/run` request's `traceparent` and `tracestate`, continued by the rollout's spans (D25). */
  trace?: TraceHeaders;
}

/**
 * A success is the `/verify` answer as its bytes (`VerifiedRow`, passed through to the caller unparsed); a failure is a
 * row object.
 */
export async function runRollout(
  body: unknown,
  ctx: RolloutContext,
  options: RunOptions = {},
): Promise<Row | VerifiedRow> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    return rejectRunBody(`/run expects a JSON object (one dataset row), got ${kindOf(body)}`, ctx);
  }
  const row = stripStaleKeys(body as Row);
  const capture = ctx.modelServer ? new RolloutModelCapture(ctx.modelServer, row) : undefined;
  const clock: RunClock = { queuedAt: performance.now() };
  const trajectory = new Trajectory();
  const progress = ctx.registry?.begin(row);
  const trace = new RolloutTrace(await rolloutTracer('tsgym-remote-agent'), options.trace ?? {}, row, {
    agent: ctx.agentName ?? 'remote_agent',
    environment: ctx.resources.name,
  });
  try {
    if ('skills_ref' in row) {
      ctx.log.warn(
        'skills_ref',
        'the row carries skills_ref, which the remote agent ignores (it is never sent to the service)',
      );
    }
    const params = validateCreateParams(row.responses_create_params);
    if (!params.ok) {
      throw terminal('REMOTE_AGENT_BAD_ROW', `the row's responses_create_params is invalid: ${params.message}`);
    }
    const verified = await withRunBudget(
      ctx.limiter,
      ctx.config.runTimeoutSecs,
      (budget) => {
        budget.trace = trace;
        const steps = { row, params: params.value, trajectory, capture, stepLatency: options.stepLatency === true };
        return seedLoopVerify(steps, budget, ctx, progress);
      },
      { clock, ...(options.callerSignal ? { callerSignal: options.callerSignal } : {}) },
    );
    trace.finish({ reward: trace.reward ?? 0 });
    return capture ? withCapture(verified, capture) : verified;
  } catch (err) {
    // The backstop: whatever went wrong, /run answers with a row (a non-2xx would abort the whole collection).
    const failure = rolloutFailureRow(row, err, ctx, trajectory, clock);
    failure[NG.traceId] = trace.traceId;
    trace.finish({
      failureClass: FAILURE_CLASS,
      terminal: failure[NG.failureTerminal] === true,
      reward: 0,
      error: isGymError(err) ? err.code : 'unexpected error',
    });
    if (capture) {
      const closed = await capture.close();
      failure[MODEL_CALL_CAPTURE_KEY] = capture.tokenIdCapture ? evaluationCapture(closed) : closed;
      if (capture.tokenIdCapture) Object.assign(failure, maskedFailureFields(closed));
    }
    return failure;
  } finally {
    if (progress) ctx.registry?.end(progress);
  }
}

/**
 * The row with its model calls: their evaluation records, and with token-id capture the token ids rebuilt onto its
 * output (or the row masked with the reason). Only then is the row parsed and written again; otherwise its bytes are
 * spliced as they came.
 */
async function withCapture(verified: VerifiedRow, capture: RolloutModelCapture): Promise<VerifiedRow> {
  const closed = await capture.close();
  if (!capture.tokenIdCapture) return verified.withField(MODEL_CALL_CAPTURE_KEY, closed);
  const row = verified.toObject();
  const rebuilt = rebuildTokenFields(row, closed);
  return VerifiedRow.fromObject({ ...row, ...rebuilt, [MODEL_CALL_CAPTURE_KEY]: evaluationCapture(closed) });
}

/** The terminal failure row for a `/run` body that is not a row at all. */
export function rejectRunBody(reason: string, ctx: RolloutContext): Row {
  return rolloutFailureRow({}, terminal('REMOTE_AGENT_BAD_ROW', reason), ctx);
}

/** What one rollout runs on: the row, its create-params, the trajectory it fills, its model capture. */
interface RolloutSteps {
  row: Row;
  params: CreateParams;
  trajectory: Trajectory;
  capture: RolloutModelCapture | undefined;
  stepLatency: boolean;
}

async function seedLoopVerify(
  { row, params, trajectory, capture, stepLatency }: RolloutSteps,
  budget: RunBudget,
  ctx: RolloutContext,
  progress: RolloutProgress | undefined,
): Promise<VerifiedRow> {
  // One jar per peer and per rollout: the service never sees the environment's cookies, nor the reverse (D7).
  const resourcesJar = new ResourcesJar();
  const serviceJar = new CookieJar();

  progress?.enter('seeding');
  await stage('/seed_session on the resources server failed: ', ctx.resources.seed(row, resourcesJar, budget));
  if (capture) await capture.open(budget.signal);
  const loop: LoopContext = {
    service: ctx.service,
    resources: ctx.resources,
    serviceJar,
    resourcesJar,
    maxSteps: ctx.config.maxSteps,
    budget,
    ...(progress ? { progress } : {}),
    ...(capture ? { serviceHeaders: { [MODEL_BASE_URL_HEADER]: capture.modelBaseUrl } } : {}),
  };
  await stage('agent loop failed: ', runServiceLoop(params, loop, trajectory));
  warnAboutUsage(trajectory, ctx.log);

  progress?.enter('verifying');
  const verified = await stage(
    '/verify on the resources server failed: ',
    ctx.resources.verify(trajectory.sealForVerify(row), resourcesJar, budget),
  );
  // The verify response is the row (C4): the dataset row is not merged back in. The latencies ride along only for
  // a collector that asked and strips them before writing the row. The usage mark is the agent's stamp on a row
  // whose token counts are partly Gym's zeros (D24); it exists only where the user opted in to the filling.
  const marked = trajectory.usageFilled ? verified.withField(NG.usageFilled, true) : verified;
  return stepLatency ? marked.withField(NG.stepLatencySecs, trajectory.stepLatenciesSecs()) : marked;
}

// ---------------------------------------------------------------------------------------------------
// The loop

/**
 * The loop, in process (no internal HTTP hop, so the run deadline reaches the in-flight service call).
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
  resources: ResourcesClient;
  /** The rollout's cookies for the service and for the environment: two jars that never mix (D7). */
  serviceJar: CookieJar;
  resourcesJar: ResourcesJar;
  maxSteps: number | null;
  budget: RunBudget;
  /** The rollout's live stage for `GET /status` (absent on the `/v1/responses` route). */
  progress?: RolloutProgress;
  /** Headers sent on every service call of the rollout (its model base URL, `MODEL_BASE_URL_HEADER`). */
  serviceHeaders?: Record<string, string>;
}

/** Run the loop to its end; what it produced is in `trajectory` (also when it throws). */
export async function runServiceLoop(params: CreateParams, ctx: LoopContext, trajectory: Trajectory): Promise<void> {
  const body = new StepBody(params, normalizeInput(params.input));
  for (let step = 1; ; step++) {
    const asks = await callService(params, body, ctx, trajectory, step);
    if (asks === undefined) break;
    for (const call of asks) {
      ctx.progress?.enter('running_tool', step, call.name);
      const output = await ctx.resources.callTool(call.name, call.arguments, ctx.resourcesJar, ctx.budget);
      trajectory.addToolOutput({ type: 'function_call_output', call_id: call.call_id, output });
    }
    if (ctx.maxSteps !== null && step >= ctx.maxSteps) break;
  }
}

/**
 * One service call: its answer goes into the trajectory (encoded), then the asks to run, or undefined when the
 * rollout is done. The parsed answer ends here: only the asks outlive the call.
 */
async function callService(
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
    ctx.serviceHeaders,
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

interface FunctionCallItem {
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
// Around the steps

function warnAboutUsage(trajectory: Trajectory, log: AgentLog): void {
  if (trajectory.stepsWithUsage === 0) {
    log.warn('no_usage', 'the remote service reported no usage on any step; token metrics for this rollout are empty');
  } else if (trajectory.stepsWithUsage < trajectory.steps) {
    log.warn(
      'mixed_usage',
      `the remote service reported usage on ${trajectory.stepsWithUsage} of ${trajectory.steps} steps; ` +
        'token totals undercount (report usage on every step or on none)',
    );
  }
}

/** Prefix a failure with where it happened, keeping its class and code. Unexpected errors pass unchanged. */
async function stage<T>(prefix: string, work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (err) {
    if (!isGymError(err)) throw err;
    const Class = err.errorClass === 'terminal' ? TerminalRolloutError : RetryableRolloutError;
    throw new Class(err.code, prefix + err.message, { cause: err });
  }
}

/**
 * The shared failure row (src/runfiles/row.ts) of a rollout that went wrong, with the evidence the engine holds: the
 * partial trajectory, its step latencies and usage mark, and the rollout's timings. `row` has had its stale result
 * keys stripped, so the builder keeps every key of it in place.
 */
function rolloutFailureRow(
  row: Row,
  err: unknown,
  ctx: RolloutContext,
  trajectory?: Trajectory,
  clock?: RunClock,
): FailureRow {
  const error = isGymError(err) ? err.message : `unexpected error: ${describeError(err)}`;
  const result = isGymError(err)
    ? failureRow(row, FAILURE_CLASS, error, err.errorClass === 'terminal', err.code)
    : failureRow(row, FAILURE_CLASS, error, false);
  if (trajectory && !trajectory.isEmpty) {
    result[NG.partialResponse] = trajectory.toResponse();
    result[NG.stepLatencySecs] = trajectory.stepLatenciesSecs();
    if (trajectory.usageFilled) result[NG.usageFilled] = true;
  }
  if (clock?.admittedAt !== undefined) {
    result[NG.queueWaitSecs] = seconds(clock.admittedAt - clock.queuedAt);
    result[NG.rolloutDurationSecs] = seconds(performance.now() - clock.admittedAt);
  }
  ctx.log.rolloutFailed(error);
  return result;
}

function terminal(code: string, message: string): GymError {
  return new TerminalRolloutError(code, message);
}

function seconds(ms: number): number {
  return Math.round(ms) / 1000;
}

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (value === undefined) return 'an empty body';
  return Array.isArray(value) ? 'an array' : `a ${typeof value}`;
}
