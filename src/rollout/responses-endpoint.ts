/**
 * The one way tsgym calls a user's service: `POST {base URL}/v1/responses` with the configured credential headers,
 * through a connection pool of its own when a private CA is to be trusted, under a per-call deadline and a bound on
 * the answer's size, with the caller's cookie jar. The remote agent's service hop (./service-client.ts) and
 * `gym agent check` (src/check/service-client.ts) both call through it, so a service that passes the check is called
 * the same way by a rollout; each of them words its own failures.
 */
import type { Dispatcher } from 'undici';
import { createDispatcher, request, type HttpResponse } from '../http/client.js';
import type { CookieJar } from '../http/cookies.js';
import type { ServiceAuth } from '../http/service-auth.js';

export interface ResponsesEndpointOptions {
  /** The service's base URL (`agent_base_url`), normalised. */
  baseUrl: string;
  /** Credential headers and a private CA (`agent_api_key_env`, `agent_headers`, `agent_ca_file`). */
  auth?: ServiceAuth;
  /** Deadline for one call, headers and body. */
  timeoutMs: number;
  /** The largest answer read. */
  maxBodyBytes: number;
}

/** What one call carries besides its body. */
export interface ResponsesCall {
  /** The service's cookies for this conversation: sent, and updated from the answer. */
  jar?: CookieJar;
  signal?: AbortSignal;
  /** Headers of this call alone (its trace context), next to the credential headers. */
  headers?: Record<string, string>;
  /** Read the answer whatever its size: for a caller that only asks whether the call succeeds. */
  anySize?: true;
}

export class ResponsesEndpoint {
  readonly url: string;
  /** The credential headers, or undefined when there are none. */
  private readonly headers: Record<string, string> | undefined;
  /** A pool of its own only when a private CA is trusted; otherwise the process-wide one. */
  private readonly pool: Dispatcher | undefined;

  constructor(readonly options: ResponsesEndpointOptions) {
    this.url = `${options.baseUrl}/v1/responses`;
    const auth = options.auth;
    this.headers = auth && Object.keys(auth.headers).length > 0 ? auth.headers : undefined;
    this.pool = auth?.ca ? createDispatcher({ ca: auth.ca.pem }) : undefined;
  }

  get baseUrl(): string {
    return this.options.baseUrl;
  }

  /** One attempt; `body` is the encoded create-params, whole or in pieces (`StepBody.forCall`). */
  post(body: string | Buffer | readonly Buffer[], call: ResponsesCall = {}): Promise<HttpResponse> {
    const headers = call.headers ? { ...this.headers, ...call.headers } : this.headers;
    return request(this.url, {
      method: 'POST',
      jsonText: body,
      timeoutMs: this.options.timeoutMs,
      ...(call.anySize ? {} : { maxBodyBytes: this.options.maxBodyBytes }),
      ...(call.jar ? { jar: call.jar } : {}),
      ...(call.signal ? { signal: call.signal } : {}),
      ...(headers ? { headers } : {}),
      ...(this.pool ? { dispatcher: this.pool } : {}),
    });
  }
}
