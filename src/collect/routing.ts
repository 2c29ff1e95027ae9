/**
 * What happens to one rollout: the `/run` call (failures contained as rows, decisions D11/D12), the stamps the
 * collector puts on every result (docs/design.md, "Result stamps and routing"), and where the result goes — successes
 * to `<stem>.jsonl`, rows with `_ng_failure_class` to the sidecar, `_ng_no_persist` rows nowhere.
 */
import { plainCreateParams } from '../contract/fast-path.js';
import { isPlainObject } from '../config/types.js';
import { HttpTransportError, neverDelivered, request, type HttpResponse } from '../http/client.js';
import type { AgentDirectory } from './agents.js';
import { NG } from '../runfiles/ng-keys.js';
import { failureRow, type Row, type RowStamps } from '../runfiles/row.js';
import type { RolloutExecutor } from './executor.js';
import { undeliveredResult, type AgentReachability } from './reachability.js';
import { STEP_LATENCY_HEADER } from '../contract/gym-wire.js';

const STEP_LATENCY_REQUEST = { [STEP_LATENCY_HEADER]: '1' };

/** A failure the collector itself observed (the agent could not be reached or answered badly); retryable. */
export const COLLECTOR_ERROR = 'collector_error';
/** A dataset row that cannot be run as written; terminal. */
export const INVALID_ROW = 'invalid_row';

const EXCERPT_CHARS = 500;

// The builder moved to the run files layer; src/queue/redis-queue.ts still imports it from here.

/**
 * Why a row cannot be sent at all (undefined when it can). The common shapes are settled by the contract's fast
 * path; only another shape loads the zod schemas (once), so a collection of ordinary rows never loads zod.
 */
export async function rowProblem(row: Row): Promise<string | undefined> {
  if (!Object.hasOwn(row, 'responses_create_params')) {
    return 'the row has no responses_create_params (every row needs the model request it runs); fix the dataset row';
  }
  if (plainCreateParams(row.responses_create_params)) return undefined;
  const { validateCreateParams } = await import('../contract/validate.js');
  const check = validateCreateParams(row.responses_create_params);
  return check.ok ? undefined : `the row's responses_create_params is invalid: ${check.message}; fix the dataset row`;
}

const STAMPS = [NG.taskIndex, NG.rolloutIndex, 'agent_ref'] as const;
const OPTIONAL_STAMPS = ['skills_ref', NG.attemptIndex, NG.rolloutId] as const;

/** The keys the collector copies from a row onto its result, as the reference does: the rollout key, agent_ref and run stamps. */
export function identityOf(row: Row): RowStamps {
  const identity: Row = {};
  for (const key of STAMPS) identity[key] = row[key];
  for (const key of OPTIONAL_STAMPS) if (Object.hasOwn(row, key)) identity[key] = row[key];
  // The row is a materialized input: materialize.ts numbered or checked both indices.
  return identity as RowStamps;
}

/** Copy a row's identity onto the result, overwriting, after the agent's own keys. */
export function stamp<Result extends Row>(result: Result, identity: RowStamps): Result & RowStamps {
  for (const key of [...STAMPS, ...OPTIONAL_STAMPS]) delete result[key];
  return Object.assign(result, identity);
}

export type Route = 'rollouts' | 'failures' | 'nowhere';

export function routeOf(result: Row): Route {
  if (result[NG.noPersist]) return 'nowhere';
  const failureClass = result[NG.failureClass];
  if (failureClass !== undefined && failureClass !== null) return 'failures';
  return 'rollouts';
}

export function isTerminal(result: Row): boolean {
  return result[NG.failureTerminal] === true;
}

function excerpt(text: string): string {
  return text.length > EXCERPT_CHARS ? `${text.slice(0, EXCERPT_CHARS)}…` : text;
}

function transportProblem(err: unknown, agent: string, url: string, timeoutMs: number): string {
  if (err instanceof HttpTransportError) {
    if (err.kind === 'timeout')
      return `/run on agent '${agent}' timed out after ${timeoutMs / 1000}s (run_request_timeout_secs)`;
    if (err.kind === 'connect') {
      return `the connection to agent '${agent}' at ${url} was lost after the rollout was sent (${err.message}); the agent may have crashed mid-rollout`;
    }
    return `/run on agent '${agent}' failed: ${err.message}`;
  }
  return `/run on agent '${agent}' failed: ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`;
}

/**
 * Executes jobs against the agents' `/run`, turning every way a call can fail into a failure row — except a call
 * that never reached the agent (connection refused): that one waits at the reachability gate and is re-sent, and
 * comes back `undeliveredResult()` (no row, no attempt spent) if the agent is given up (D20). A connection lost after
 * the request went out is a delivered call: the agent may have been running it, so it is a retryable failure row.
 */
export function httpAgentExecutor(
  agents: AgentDirectory,
  timeoutMs: number,
  reachability: AgentReachability,
): RolloutExecutor {
  return async (job) => {
    const url = `${agents.urlOf(job.agent)}/run`;
    const fail = (problem: string): Row => failureRow(JSON.parse(job.body) as Row, COLLECTOR_ERROR, problem, false);
    let res: HttpResponse;
    for (;;) {
      if (!(await reachability.ready(job.agent))) return undeliveredResult();
      try {
        // Asks the remote agent for step latencies on success results too (the status board folds them in).
        const headers = job.traceparent
          ? {
              ...STEP_LATENCY_REQUEST,
              traceparent: job.traceparent,
              ...(job.tracestate ? { tracestate: job.tracestate } : {}),
            }
          : STEP_LATENCY_REQUEST;
        res = await request(url, { method: 'POST', jsonText: job.body, headers, timeoutMs });
        break;
      } catch (err) {
        if (neverDelivered(err)) {
          reachability.reportUnreachable(job.agent, (err as Error).message);
          continue;
        }
        // A connection lost mid-call: the agent may have died. Later jobs wait at the gate until a probe on a fresh
        // connection answers, so none is sent down a pooled socket to the dead process (and failed for it).
        if (err instanceof HttpTransportError && (err.kind === 'connect' || err.kind === 'body_read')) {
          reachability.reportUnreachable(job.agent, err.message);
        }
        return fail(transportProblem(err, job.agent, url, timeoutMs));
      }
    }
    if (res.status < 200 || res.status >= 300) {
      return fail(`/run on agent '${job.agent}' answered HTTP ${res.status}: ${excerpt(res.text())}`);
    }
    let body: unknown;
    try {
      body = res.json();
    } catch (err) {
      return fail(
        `/run on agent '${job.agent}' answered with a body that is not valid JSON (${(err as Error).message}): ${excerpt(res.text())}`,
      );
    }
    if (!isPlainObject(body)) {
      return fail(
        `expected a JSON object from /run on agent '${job.agent}', got ${Array.isArray(body) ? 'an array' : body === null ? 'null' : typeof body}`,
      );
    }
    return body;
  };
}
