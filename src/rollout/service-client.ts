import { isUtf8 } from 'node:buffer';
import { JsonTooDeep, parseBoundedJson } from '../bounded-json/index.js';
import { validateResponseFillingEchoes, type EchoSource } from '../contract/echo-fill.js';
import { validateResponse, type ResponseObject } from '../contract/index.js';
import { isGymError, RetryableRolloutError, TerminalRolloutError } from '../errors.js';
import { delay, HttpTransportError, isConnectError, withRetries, type HttpResponse } from '../http/client.js';
import type { CookieJar } from '../http/cookies.js';
import type { RunBudget } from './budget.js';
import { pyFloat } from './settings.js';
import { redactSecrets, type ServiceAuth } from '../http/service-auth.js';
import { ResponsesEndpoint } from './responses-endpoint.js';
import type { RolloutProgress } from './status.js';

/**
 * The service hop: one `POST {agent_base_url}/v1/responses` per loop step, turned into a validated Responses
 * object or a typed rollout error whose text carries the reference's key phrases (decision C3 in docs/design.md).
 *
 * Composed from the shared pieces: the `/v1/responses` call (`ResponsesEndpoint`: credentials, private CA, deadline
 * over headers and body, bounded body, no redirects followed, no proxy) inside `withRetries()` for connection-class
 * failures only — a timed-out call is never re-sent, since the service may still be working on it. Overload answers (429/503 with `Retry-After`) get
 * their own small retry budget inside the rollout's deadline (D15).
 *
 * A configured credential (`auth`) goes on every call as a header — never a cookie, never to a redirect target
 * (redirects are not followed) — and every error text and debug line is scrubbed of the secret values, since a
 * service may echo what it received.
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
  /** Credential headers and a private CA (`agent_api_key_env`, `agent_headers`, `agent_ca_file`). */
  auth?: ServiceAuth;
  /** `fill_echo_fields`: complete a response that lacks only request echoes or usage details (D24). */
  fillEchoFields?: boolean;
}

/** One validated answer, and what of it Gym filled in from the request (empty unless `fillEchoFields`). */
export interface ServiceAnswer {
  response: ResponseObject;
  filled: readonly string[];
  /** Usage detail objects were added as zeros: the row says so (`_ng_usage_filled`). */
  usageFilled: boolean;
}

const OVERLOAD_STATUSES = new Set([429, 503]);
const MAX_OVERLOAD_RETRIES = 3;
const MAX_RETRY_AFTER_MS = 30_000;
const EXCERPT_BYTES = 500;

export class ServiceClient {
  private readonly endpoint: ResponsesEndpoint;
  private readonly attempts: number;
  private readonly retryDelayMs: number;
  private readonly secrets: readonly string[];

  constructor(private readonly options: ServiceClientOptions) {
    this.endpoint = new ResponsesEndpoint({
      baseUrl: options.baseUrl,
      timeoutMs: options.timeoutSecs * 1000,
      maxBodyBytes: options.maxResponseBytes,
      ...(options.auth ? { auth: options.auth } : {}),
    });
    this.attempts = options.connectAttempts ?? 3;
    this.retryDelayMs = options.connectRetryDelayMs ?? 500;
    this.secrets = options.auth?.secrets ?? [];
  }

  /** Error text as it may be shown: secret values replaced by `****`. */
  private safe(text: string): string {
    return this.secrets.length > 0 ? redactSecrets(text, this.secrets) : text;
  }

  /**
   * One loop step: `body` is the encoded create-params, whole or in pieces (`StepBody.forCall`), and `sent` the
   * create-params it encodes, from which missing echo fields are filled when that is enabled. `jar` is this rollout's
   * service cookie jar (sent, and updated from the reply).
   */
  async respond(
    body: Buffer | readonly Buffer[],
    sent: EchoSource,
    jar: CookieJar,
    budget: RunBudget,
    progress?: RolloutProgress,
    headers?: Record<string, string>,
  ): Promise<ServiceAnswer> {
    // The step's span (D25): its id goes out in the call's traceparent; overload retries stay inside it.
    const hop = budget.trace?.serviceCall();
    if (!hop) return this.respondOnSpan(body, sent, jar, budget, progress, headers);
    try {
      const answer = await this.respondOnSpan(body, sent, jar, budget, progress, { ...headers, ...hop.headers });
      budget.trace?.usage(hop.span, answer.response.usage);
      hop.span.end();
      return answer;
    } catch (err) {
      hop.span.end(isGymError(err) ? err.code : 'error');
      throw err;
    }
  }

  private async respondOnSpan(
    body: Buffer | readonly Buffer[],
    sent: EchoSource,
    jar: CookieJar,
    budget: RunBudget,
    progress: RolloutProgress | undefined,
    /** The call's own headers: its trace context, the rollout's model base URL. */
    traceHeaders: Record<string, string> | undefined,
  ): Promise<ServiceAnswer> {
    for (let overloadRetries = 0; ; overloadRetries++) {
      const res = await this.post(body, jar, budget, traceHeaders);
      budget.trace?.serviceStatus(res.status);
      if (OVERLOAD_STATUSES.has(res.status) && overloadRetries < MAX_OVERLOAD_RETRIES) {
        const waitMs = retryAfterMs(res.headers['retry-after']);
        if (waitMs !== undefined && waitMs < budget.remainingMs()) {
          progress?.enter('retrying_overload');
          budget.trace?.overloadRetry();
          await delay(waitMs, budget.signal);
          progress?.enter('calling_service');
          continue;
        }
      }
      return this.parse(res, sent);
    }
  }

  private async post(
    body: Buffer | readonly Buffer[],
    jar: CookieJar,
    budget: RunBudget,
    traceHeaders?: Record<string, string>,
  ): Promise<HttpResponse> {
    let tries = 0;
    try {
      return await withRetries(
        () => {
          tries++;
          return this.endpoint.post(body, {
            jar,
            signal: budget.signal,
            ...(traceHeaders ? { headers: traceHeaders } : {}),
          });
        },
        { attempts: this.attempts, delayMs: this.retryDelayMs, retryOn: isConnectError, signal: budget.signal },
      );
    } catch (err) {
      budget.trace?.serviceStatus(undefined);
      const failure = this.transportFailure(err, tries);
      if (failure instanceof RetryableRolloutError && this.secrets.length > 0) {
        throw new RetryableRolloutError(failure.code, this.safe(failure.message));
      }
      throw failure;
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
        // A deadline that fires after the headers arrived is a body-read failure too.
        const duringBody = (err as { phase?: string }).phase === 'body';
        return retryable('REMOTE_TIMEOUT', duringBody ? `reading the response body failed: ${timedOut}` : timedOut);
      }
      case 'too_large':
        return retryable('REMOTE_TOO_LARGE', err.message);
      case 'body_read':
        return retryable('REMOTE_BODY_READ', err.message);
      case 'tls': {
        const ca = this.options.auth?.ca;
        const trust = ca
          ? `agent_ca_file (${ca.file}) is trusted for it: check that this CA signed the certificate and that the ` +
            'certificate names the host of agent_base_url'
          : "if a private CA signed it, set agent_ca_file to that CA's PEM file";
        return retryable(
          'REMOTE_TLS',
          `TLS with the remote service failed (${err.message.trim()}); not retried, a certificate problem does not fix ` +
            `itself. Check the certificate served at ${this.options.baseUrl}; ${trust}.`,
        );
      }
      case 'aborted':
        return err; // the rollout's own deadline or caller: the budget reports why
      case 'other':
        return retryable('REMOTE_TRANSPORT', err.message);
    }
  }

  private parse(res: HttpResponse, sent: EchoSource): ServiceAnswer {
    if (res.status >= 300) throw this.statusFailure(res);
    // Checked in place, then decoded once: a fatal TextDecoder held a second copy of large bodies at the peak.
    if (!isUtf8(res.body))
      throw new RetryableRolloutError('REMOTE_NOT_JSON', 'response is not valid JSON: the body is not valid UTF-8');
    let value: unknown;
    try {
      value = parseBoundedJson(res.body.toString('utf8'));
    } catch (err) {
      // Valid JSON too deep to hold is an invalid Responses object, classed as any other (D19).
      if (err instanceof JsonTooDeep) {
        throw new TerminalRolloutError(
          'REMOTE_INVALID_RESPONSE',
          `remote service returned an invalid Responses API object: ${err.message}`,
        );
      }
      throw new RetryableRolloutError(
        'REMOTE_NOT_JSON',
        `response is not valid JSON: ${this.safe((err as Error).message)}`,
      );
    }
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      throw new RetryableRolloutError(
        'REMOTE_NOT_OBJECT',
        `expected a JSON object from /v1/responses, got ${pythonTypeName(value)}`,
      );
    }
    const checked = this.options.fillEchoFields
      ? validateResponseFillingEchoes(value as Record<string, unknown>, sent)
      : { ...validateResponse(value), filled: [], usageFilled: false };
    if (!checked.ok) {
      this.options.debug?.(
        this.safe(`[remote_agent] invalid Responses API object from ${this.endpoint.url}: ${checked.message}`),
      );
      throw new TerminalRolloutError(
        'REMOTE_INVALID_RESPONSE',
        `remote service returned an invalid Responses API object: ${this.safe(checked.message.slice(0, EXCERPT_BYTES))}`,
      );
    }
    if (checked.filled.length > 0) {
      this.options.debug?.(`[remote_agent] filled from the request (fill_echo_fields): ${checked.filled.join(', ')}`);
    }
    return { response: checked.value, filled: checked.filled, usageFilled: checked.usageFilled };
  }

  private statusFailure(res: HttpResponse): RetryableRolloutError {
    this.options.debug?.(
      this.safe(`[remote_agent] HTTP ${res.status} from ${this.endpoint.url}, full body: ${res.text()}`),
    );
    const excerpt = this.safe(res.body.subarray(0, EXCERPT_BYTES).toString('utf8'));
    if (res.status < 400) {
      const location = res.headers.location;
      const hint = location
        ? ` (redirect to ${this.safe(String(location))}; fix agent_base_url to point at the final address)`
        : '';
      return new RetryableRolloutError('REMOTE_REDIRECT', `HTTP ${res.status}${hint}: ${excerpt}`);
    }
    if (res.status === 401 || res.status === 403) {
      return new RetryableRolloutError(
        'REMOTE_HTTP_STATUS',
        `HTTP ${res.status}${this.credentialHint(res.status)}: ${excerpt}`,
      );
    }
    return new RetryableRolloutError('REMOTE_HTTP_STATUS', `HTTP ${res.status}: ${excerpt}`);
  }

  /** What a 401/403 means given the credential configured (named by key and variable, never by value). */
  private credentialHint(status: number): string {
    const auth = this.options.auth;
    const sent = Object.keys(auth?.headers ?? {});
    if (sent.length === 0) {
      return (
        ' (the service wants a credential and none was sent: set agent_api_key_env to the name of an environment ' +
        'variable holding its bearer token, or agent_headers for another scheme)'
      );
    }
    const source = auth?.apiKeyEnv !== undefined ? `agent_api_key_env (${auth.apiKeyEnv})` : 'agent_headers';
    return status === 401
      ? ` (the service refused the credential sent from ${source}: check the token's value and that it has not expired)`
      : ` (the service accepted no access with the credential sent from ${source}: check its permissions)`;
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
