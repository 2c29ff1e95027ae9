import { performance } from 'node:perf_hooks';
import { USAGE_FILLED_KEY } from '../contract/echo-fill.js';
import { STEP_LATENCY_KEY } from '../contract/gym-wire.js';
import { placeholderResponse, validateCreateParams, type CreateParams } from '../contract/index.js';
import { describeError, isGymError, RetryableRolloutError, TerminalRolloutError, type GymError } from '../errors.js';
import { CookieJar } from '../http/cookies.js';
import { RESULT_KEYS } from '../runfiles/result-keys.js';
import type { Row } from '../runfiles/row.js';
import type { FifoSemaphore } from '../server/agent-server.js';
import { withRunBudget, type RunBudget, type RunClock } from './budget.js';
import type { RemoteAgentConfig } from './settings.js';
import { EnvironmentJar, VerifiedRow, type Environment } from './resources-client.js';
import type { AgentLog } from './log.js';
import { runAgentLoop, Trajectory } from './loop.js';
import type { ServiceClient } from './service-client.js';
import type { RolloutProgress, RolloutRegistry } from './status.js';
import { rolloutTracer } from '../tracing/spans.js';
import { TRACE_ID_KEY } from '../runfiles/trace-context.js';
import { RolloutTrace, type TraceHeaders } from './trace.js';

/**
 * One `/run`: row in, result row out, never an exception. Seed a fresh environment session, run the loop against
 * the service, verify on the same session, and return what `/verify` returned, as the reference does (decision C4):
 * the environment decides what a row holds and may leave dataset fields out on purpose (answer keys, images, bulky
 * inputs); the collector adds its stamps. Every failure becomes a
 * reward-0 row (docs/design.md, "The failure row") whose `_ng_failure_terminal` comes from the typed error's class,
 * never from its text (D3), and which keeps the evidence: the partial trajectory and timing (D2).
 */

export interface RolloutContext {
  config: RemoteAgentConfig;
  service: ServiceClient;
  environment: Environment;
  limiter: FifoSemaphore;
  log: AgentLog;
  /** In-flight rollouts for `GET /status`. */
  registry?: RolloutRegistry;
  /** The agent instance's name, for the rollout span (D25). */
  agentName?: string;
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
  const clock: RunClock = { queuedAt: performance.now() };
  const trajectory = new Trajectory();
  const progress = ctx.registry?.begin(row);
  const trace = new RolloutTrace(await rolloutTracer('tsgym-remote-agent'), options.trace ?? {}, row, {
    agent: ctx.agentName ?? 'remote_agent',
    environment: ctx.environment.name,
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
        return seedLoopVerify(row, params.value, budget, trajectory, ctx, progress, options.stepLatency === true);
      },
      { clock, ...(options.callerSignal ? { callerSignal: options.callerSignal } : {}) },
    );
    trace.finish({ reward: trace.reward ?? 0 });
    return verified;
  } catch (err) {
    // The backstop: whatever went wrong, /run answers with a row (a non-2xx would abort the whole collection).
    const failure = failureRow(row, err, ctx, trajectory, clock);
    failure[TRACE_ID_KEY] = trace.traceId;
    trace.finish({
      failureClass: FAILURE_CLASS,
      terminal: failure._ng_failure_terminal === true,
      reward: 0,
      error: isGymError(err) ? err.code : 'unexpected error',
    });
    return failure;
  } finally {
    if (progress) ctx.registry?.end(progress);
  }
}

/** The terminal failure row for a `/run` body that is not a row at all. */
export function rejectRunBody(reason: string, ctx: RolloutContext): Row {
  return failureRow({}, terminal('REMOTE_AGENT_BAD_ROW', reason), ctx);
}

async function seedLoopVerify(
  row: Row,
  params: CreateParams,
  budget: RunBudget,
  trajectory: Trajectory,
  ctx: RolloutContext,
  progress: RolloutProgress | undefined,
  stepLatency: boolean,
): Promise<VerifiedRow> {
  // One jar per peer and per rollout: the service never sees the environment's cookies, nor the reverse (D7).
  const envJar = new EnvironmentJar();
  const serviceJar = new CookieJar();

  progress?.enter('seeding');
  await stage('/seed_session on the resources server failed: ', ctx.environment.seed(row, envJar, budget));
  await stage(
    'agent loop failed: ',
    runAgentLoop(
      params,
      {
        service: ctx.service,
        environment: ctx.environment,
        serviceJar,
        envJar,
        maxSteps: ctx.config.maxSteps,
        budget,
        ...(progress ? { progress } : {}),
      },
      trajectory,
    ),
  );
  warnAboutUsage(trajectory, ctx.log);
  progress?.enter('verifying');
  const verified = await stage(
    '/verify on the resources server failed: ',
    ctx.environment.verify(trajectory.sealForVerify(row), envJar, budget),
  );
  // The verify response is the row (C4): the dataset row is not merged back in. The latencies ride along only for
  // a collector that asked and strips them before writing the row. The usage mark is the agent's stamp on a row
  // whose token counts are partly Gym's zeros (D24); it exists only where the user opted in to the filling.
  const marked = trajectory.usageFilled ? verified.withField(USAGE_FILLED_KEY, true) : verified;
  return stepLatency ? marked.withField(STEP_LATENCY_KEY, trajectory.stepLatenciesSecs()) : marked;
}

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

function failureRow(row: Row, err: unknown, ctx: RolloutContext, trajectory?: Trajectory, clock?: RunClock): Row {
  const error = isGymError(err) ? err.message : `unexpected error: ${describeError(err)}`;
  const result: Row = {
    ...row,
    reward: 0.0,
    response: placeholderResponse(),
    error,
    _ng_failure_class: FAILURE_CLASS,
  };
  if (isGymError(err) && err.errorClass === 'terminal') result._ng_failure_terminal = true;
  if (trajectory && !trajectory.isEmpty) {
    result._ng_partial_response = trajectory.toResponse();
    result[STEP_LATENCY_KEY] = trajectory.stepLatenciesSecs();
    if (trajectory.usageFilled) result[USAGE_FILLED_KEY] = true;
  }
  if (clock?.admittedAt !== undefined) {
    result._ng_queue_wait_secs = seconds(clock.admittedAt - clock.queuedAt);
    result._ng_rollout_duration_secs = seconds(performance.now() - clock.admittedAt);
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
