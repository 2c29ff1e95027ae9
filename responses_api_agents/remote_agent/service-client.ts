import { isUtf8 } from 'node:buffer';
import { JsonTooDeep, parseBoundedJson } from '../../src/bounded-json/index.js';
import { validateResponse, type ResponseObject } from '../../src/contract.js';
import { RetryableRolloutError, TerminalRolloutError } from '../../src/errors.js';
import {
  delay,
  HttpTransportError,
  isConnectError,
  request,
  withRetries,
  type HttpResponse,
} from '../../src/http/client.js';
import type { CookieJar } from '../../src/http/cookies.js';
import type { RunBudget } from './budget.js';
import { pyFloat } from './config.js';

/**
 * The service hop: one `POST {agent_base_url}/v1/responses` per loop step, turned into a validated Responses
 * object or a typed rollout error whose text carries the reference's key phrases (cases §0.3, decision C3).
 *
 * Composed from the shared client's pieces: `request()` (deadline over headers and body, bounded body, no
 * redirects followed, no proxy) inside `withRetries()` for connection-class failures only — a timed-out call is
 * never re-sent, since the service may still be working on it. Overload answers (429/503 with `Retry-After`) get
 * their own small retry budget inside the rollout's deadline (D15).
 */

export interface ServiceClientOptions {
  baseUrl: string;
  timeoutSecs: number;
  maxResponseBytes: number;
  /** Total attempts for connection-class failures. */
  connectAttempts?: number;
  connectRetryDelayMs?: number;
  /** When set, full error bodies and validation messages are written here (the row keeps the excerpt). */
  debug?: (line: string) => void;
}

const OVERLOAD_STATUSES = new Set([429, 503]);
const MAX_OVERLOAD_RETRIES = 3;
const MAX_RETRY_AFTER_MS = 30_000;
const EXCERPT_BYTES = 500;

export class ServiceClient {
  readonly url: string;
  private readonly attempts: number;
  private readonly retryDelayMs: number;

  constructor(private readonly options: ServiceClientOptions) {
    this.url = `${options.baseUrl}/v1/responses`;
    this.attempts = options.connectAttempts ?? 3;
    this.retryDelayMs = options.connectRetryDelayMs ?? 500;
  }

  /**
   * One loop step: `body` is the encoded create-params (see StepBody). `jar` is this rollout's service cookie jar
   * (sent, and updated from the reply).
   */
  async respond(body: Buffer, jar: CookieJar, budget: RunBudget): Promise<ResponseObject> {
    for (let overloadRetries = 0; ; overloadRetries++) {
      const res = await this.post(body, jar, budget);
      if (OVERLOAD_STATUSES.has(res.status) && overloadRetries < MAX_OVERLOAD_RETRIES) {
        const waitMs = retryAfterMs(res.headers['retry-after']);
        if (waitMs !== undefined && waitMs < budget.remainingMs()) {
          await delay(waitMs, budget.signal);
          continue;
        }
      }
      return this.parse(res);
    }
  }

  private async post(body: Buffer, jar: CookieJar, budget: RunBudget): Promise<HttpResponse> {
    let tries = 0;
    try {
      return await withRetries(
        () => {
          tries++;
          return request(this.url, {
            method: 'POST',
            jsonText: body,
            jar,
            timeoutMs: this.options.timeoutSecs * 1000,
            maxBodyBytes: this.options.maxResponseBytes,
            signal: budget.signal,
          });
        },
        { attempts: this.attempts, delayMs: this.retryDelayMs, retryOn: isConnectError, signal: budget.signal },
      );
    } catch (err) {
      throw this.transportFailure(err, tries);
    }
  }

  private transportFailure(err: unknown, tries: number): unknown {
    if (!(err instanceof HttpTransportError)) return err;
    const retryable = (code: string, message: string): RetryableRolloutError =>
      new RetryableRolloutError(code, message, { cause: err });
    switch (err.kind) {
      case 'connect':
        return retryable(
          'REMOTE_UNREACHABLE',
          `could not reach the remote service after ${tries} ${tries === 1 ? 'try' : 'tries'} (${err.message}). ` +
            `Is your service running at ${this.options.baseUrl}?`,
        );
      case 'timeout': {
        const timedOut =
          `timed out after ${pyFloat(this.options.timeoutSecs)}s (remote_responses_timeout_secs; ` +
          'one call to the service took longer than the per-call bound)';
        // A deadline that fires after the headers arrived is a body-read failure too (case 41).
        const duringBody = (err as { phase?: string }).phase === 'body';
        return retryable('REMOTE_TIMEOUT', duringBody ? `reading the response body failed: ${timedOut}` : timedOut);
      }
      case 'too_large':
        return retryable('REMOTE_TOO_LARGE', err.message);
      case 'body_read':
        return retryable('REMOTE_BODY_READ', err.message);
      case 'tls':
        return retryable(
          'REMOTE_TLS',
          `TLS with the remote service failed (${err.message.trim()}); not retried, a certificate problem does not fix ` +
            `itself. Check the certificate served at ${this.options.baseUrl}.`,
        );
      case 'aborted':
        return err; // the rollout's own deadline or caller: the budget reports why
      case 'other':
        return retryable('REMOTE_TRANSPORT', err.message);
    }
  }

  private parse(res: HttpResponse): ResponseObject {
    if (res.status >= 300) throw this.statusFailure(res);
    // Checked in place, then decoded once: a fatal TextDecoder held a second copy of large bodies at the peak.
    if (!isUtf8(res.body)) throw new RetryableRolloutError('REMOTE_NOT_JSON', 'response is not valid JSON: the body is not valid UTF-8');
    let value: unknown;
    try {
      value = parseBoundedJson(res.body.toString('utf8'));
    } catch (err) {
      // Valid JSON too deep to hold is an invalid Responses object, classed as any other (D19).
      if (err instanceof JsonTooDeep) {
        throw new TerminalRolloutError('REMOTE_INVALID_RESPONSE', `remote service returned an invalid Responses API object: ${err.message}`);
      }
      throw new RetryableRolloutError('REMOTE_NOT_JSON', `response is not valid JSON: ${(err as Error).message}`);
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      throw new RetryableRolloutError(
        'REMOTE_NOT_OBJECT',
        `expected a JSON object from /v1/responses, got ${pythonTypeName(value)}`,
      );
    }
    const checked = validateResponse(value);
    if (!checked.ok) {
      this.options.debug?.(`[remote_agent] invalid Responses API object from ${this.url}: ${checked.message}`);
      throw new TerminalRolloutError(
        'REMOTE_INVALID_RESPONSE',
        `remote service returned an invalid Responses API object: ${checked.message.slice(0, EXCERPT_BYTES)}`,
      );
    }
    return checked.value;
  }

  private statusFailure(res: HttpResponse): RetryableRolloutError {
    this.options.debug?.(`[remote_agent] HTTP ${res.status} from ${this.url}, full body: ${res.text()}`);
    const excerpt = res.body.subarray(0, EXCERPT_BYTES).toString('utf8');
    if (res.status < 400) {
      const location = res.headers.location;
      const hint = location ? ` (redirect to ${location}; fix agent_base_url to point at the final address)` : '';
      return new RetryableRolloutError('REMOTE_REDIRECT', `HTTP ${res.status}${hint}: ${excerpt}`);
    }
    return new RetryableRolloutError('REMOTE_HTTP_STATUS', `HTTP ${res.status}: ${excerpt}`);
  }
}

/** `Retry-After` in seconds (the only form honoured), capped at 30 s; undefined when absent or a date. */
export function retryAfterMs(header: string | string[] | undefined): number | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined || !/^\s*\d+(\.\d+)?\s*$/.test(value)) return undefined;
  return Math.min(Number(value) * 1000, MAX_RETRY_AFTER_MS);
}

/** The type name Python would print for a decoded JSON value, as the reference's error text does. */
function pythonTypeName(value: unknown): string {
  if (value === null) return 'NoneType';
  if (Array.isArray(value)) return 'list';
  if (typeof value === 'string') return 'str';
  if (typeof value === 'boolean') return 'bool';
  if (typeof value === 'number') return Number.isInteger(value) ? 'int' : 'float';
  return typeof value;
}
