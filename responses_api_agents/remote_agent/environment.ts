import { RetryableRolloutError } from '../../src/errors.js';
import { callInternal, HttpTransportError, type HttpResponse } from '../../src/http/client.js';
import type { CookieJar } from '../../src/http/cookies.js';
import type { RunBudget } from './budget.js';

/**
 * The rollout's side of the resources server: seed a session, run Gym-hosted tools on it, verify it. Every call
 * carries the rollout's environment cookie jar (never the service's) and the rollout's budget; connection
 * failures are retried a bounded number of times by `callInternal` and then fail the rollout with a text naming
 * the resources server and its URL (decision D12), instead of waiting out the run timeout.
 */
/** Tool outputs and verify bodies are held whole (and echoed to the service): bounded like a service answer (D14). */
const ENVIRONMENT_MAX_BODY_BYTES = 64 * 1024 * 1024;

export class Environment {
  constructor(
    readonly name: string,
    readonly url: string,
  ) {}

  async seed(row: Record<string, unknown>, jar: CookieJar, budget: RunBudget): Promise<void> {
    const res = await this.call('/seed_session', JSON.stringify(row), jar, budget);
    if (!isSuccess(res)) throw statusError(res);
  }

  /** Run one tool. Whatever the status, the body text is the tool's result (an unknown tool's 404 included). */
  async callTool(name: string, argumentsJson: string, jar: CookieJar, budget: RunBudget): Promise<string> {
    const res = await this.call(`/${name}`, argumentsJson, jar, budget);
    return res.text();
  }

  async verify(body: Record<string, unknown>, jar: CookieJar, budget: RunBudget): Promise<Record<string, unknown>> {
    const res = await this.call('/verify', JSON.stringify(body), jar, budget);
    if (!isSuccess(res)) throw statusError(res);
    let result: unknown;
    try {
      result = res.json();
    } catch (err) {
      throw invalidVerifyBody(`not JSON (${(err as Error).message})`);
    }
    if (result === null || typeof result !== 'object' || Array.isArray(result)) {
      throw invalidVerifyBody('not a JSON object');
    }
    const reward = (result as Record<string, unknown>).reward;
    if (typeof reward !== 'number' || !Number.isFinite(reward)) {
      throw invalidVerifyBody(reward === undefined ? '`reward` is missing' : '`reward` is not a number');
    }
    return result as Record<string, unknown>;
  }

  /** Forward an `/aggregate_metrics` body unchanged. */
  async aggregateMetrics(bodyText: string | Buffer, timeoutMs: number): Promise<HttpResponse> {
    try {
      return await callInternal(`${this.url}/aggregate_metrics`, { jsonText: bodyText, timeoutMs });
    } catch (err) {
      throw this.transportFailure(err, '/aggregate_metrics');
    }
  }

  private async call(path: string, jsonText: string, jar: CookieJar, budget: RunBudget): Promise<HttpResponse> {
    try {
      return await callInternal(`${this.url}${path}`, {
        jsonText,
        jar,
        maxBodyBytes: ENVIRONMENT_MAX_BODY_BYTES,
        // The run deadline bounds every hop; the budget's signal cuts it at that moment.
        timeoutMs: Math.max(1, budget.remainingMs()),
        signal: budget.signal,
      });
    } catch (err) {
      throw this.transportFailure(err, path);
    }
  }

  private transportFailure(err: unknown, path: string): unknown {
    if (!(err instanceof HttpTransportError) || err.kind === 'aborted') return err;
    const server = `the resources server '${this.name}' at ${this.url}`;
    const message =
      err.kind === 'connect'
        ? `could not reach ${server} (${path}: ${err.message}). Is it running?`
        : `${path} on ${server} failed: ${err.message}`;
    return new RetryableRolloutError('RESOURCES_SERVER_UNREACHABLE', message, { cause: err });
  }
}

function isSuccess(res: HttpResponse): boolean {
  return res.status >= 200 && res.status < 300;
}

function statusError(res: HttpResponse): RetryableRolloutError {
  return new RetryableRolloutError(
    'RESOURCES_SERVER_HTTP_STATUS',
    `HTTP ${res.status}: ${res.body.subarray(0, 500).toString('utf8')}`,
  );
}

function invalidVerifyBody(reason: string): RetryableRolloutError {
  return new RetryableRolloutError(
    'RESOURCES_SERVER_INVALID_VERIFY',
    `/verify returned an invalid body (expected a JSON object with a numeric reward): ${reason}`,
  );
}
