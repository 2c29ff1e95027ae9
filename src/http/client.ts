import { EventEmitter } from 'node:events';
import type { IncomingHttpHeaders } from 'node:http';
import { createRequire } from 'node:module';
import type { Agent as UndiciAgent, Dispatcher } from 'undici';
import { MAX_ENVELOPED_JSON_DEPTH, parseBoundedJson } from '../bounded-json/index.js';
import { GymError } from '../errors.js';
import type { CookieJar } from './cookies.js';
import { exactUtf8 } from './utf8.js';

/**
 * The one HTTP client of a tsgym process. Behaviours are small pieces composed by the caller rather than
 * flags threaded through the rollout loop:
 *
 * - `request()`      one attempt: a deadline covering headers and body, a bounded body read, redirects never
 *                    followed, proxy variables never read (undici's `Agent` has no proxy support by design),
 *                    an optional per-peer cookie jar.
 * - `withRetries()`  a bounded retry budget around any attempt, deciding by the error's `kind`.
 * - `postJson()`     the internal hop (collector → agent → environment): both of the above with the D12 budget.
 *
 * Failures are `HttpTransportError`s with a `kind`, so callers classify by structure, never by message text.
 */

export type TransportErrorKind =
  | 'connect' // refused, reset, DNS, socket closed before the reply: the request may not have been processed
  | 'timeout' // our deadline fired
  | 'aborted' // the caller's signal fired
  | 'too_large' // the body exceeded maxBodyBytes
  | 'body_read' // headers arrived, then the body failed
  | 'tls' // certificate problems never fix themselves within a retry window
  | 'other';

export class HttpTransportError extends GymError {
  constructor(
    readonly kind: TransportErrorKind,
    readonly url: string,
    message: string,
    cause?: unknown,
    /** Whether the failure came before the response headers or while reading the body. */
    readonly phase: 'headers' | 'body' = 'headers',
  ) {
    super(`GYM_HTTP_${kind.toUpperCase()}`, 'retryable', message, { cause });
  }
}

export interface HttpResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** `Set-Cookie` header values of this response. */
  setCookies: string[];
  text(): string;
  /** The body parsed as JSON, nesting bounded at 520 levels (throws `JsonTooDeep` or the parser's `SyntaxError`). */
  json(): unknown;
}

export interface RequestOptions {
  method?: 'GET' | 'POST';
  /** JSON-encoded as the body with `Content-Type: application/json`. */
  json?: unknown;
  /** A pre-encoded JSON body (saves a re-encode when the caller already has the bytes). */
  jsonText?: string | Buffer;
  headers?: Record<string, string>;
  /** Sent as `Cookie`, and updated from the response's `Set-Cookie`. */
  jar?: CookieJar;
  /** Deadline for the whole exchange, headers and body. */
  timeoutMs: number;
  maxBodyBytes?: number;
  signal?: AbortSignal;
  /** The connection pool to use; default the process-wide one (`dispatcher()`). */
  dispatcher?: Dispatcher;
}

// undici's index also loads fetch, WebSocket, caches and mocks: ~120 ms of every tsgym process's start-up (seen in
// the bench's profile of a collector start), where the client needs only the Agent and its request API (~40 ms).
// These two module paths are undici internals, so its version is pinned exactly in package.json.
const requireUndici = createRequire(import.meta.url);
const Agent = requireUndici('undici/lib/dispatcher/agent.js') as typeof UndiciAgent;
const agentRequest = requireUndici('undici/lib/api/api-request.js') as (
  this: Dispatcher,
  options: Dispatcher.RequestOptions,
) => Promise<Dispatcher.ResponseData>;

let sharedDispatcher: Dispatcher | undefined;

export interface PoolOptions {
  /** PEM CA certificate(s) to trust for https:// peers instead of the system store (a private CA). */
  ca?: string;
}

/**
 * A keep-alive pool. Unbounded connections per origin: admission control belongs to callers. Pass `ca` for a peer
 * whose certificate a private CA signed; certificates are still verified (host name included).
 */
export function createDispatcher(options: PoolOptions = {}): Dispatcher {
  return new Agent({
    keepAliveTimeout: 15_000,
    keepAliveMaxTimeout: 60_000,
    // Our own deadline (timeoutMs) bounds every exchange; undici's 300 s defaults would cut 30-minute calls.
    headersTimeout: 0,
    bodyTimeout: 0,
    connect: { timeout: 10_000, ...(options.ca !== undefined ? { ca: options.ca } : {}) },
  });
}

/** The process-wide pool. */
export function dispatcher(): Dispatcher {
  sharedDispatcher ??= createDispatcher();
  return sharedDispatcher;
}

const CONNECT_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_CONNECT_TIMEOUT',
]);

function errorCode(err: unknown): string | undefined {
  for (let e: unknown = err, depth = 0; e && depth < 4; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && code !== 'UND_ERR_ABORTED') return code;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const code = errorCode(err);
  const cause = err.cause instanceof Error && err.cause.message !== err.message ? ` (${err.cause.message})` : '';
  return `${err.name}${code ? ` ${code}` : ''}: ${err.message}${cause}`;
}

function classify(err: unknown): TransportErrorKind {
  const code = errorCode(err);
  if (code === undefined) return 'other';
  if (CONNECT_CODES.has(code)) return 'connect';
  // OpenSSL's verify codes (UNABLE_TO_VERIFY_LEAF_SIGNATURE, SELF_SIGNED_CERT_IN_CHAIN, …) and node's TLS codes.
  if (/CERT|^ERR_TLS|^ERR_SSL|^UNABLE_TO_|SIGNATURE/.test(code)) return 'tls';
  return 'other';
}

/**
 * The abort switch of one exchange (its deadline or the caller's signal). undici takes an EventEmitter with an
 * `aborted` flag as a request's signal; creating one costs a small fraction of an AbortController, and a rollout
 * makes about ten exchanges (the benchmark's CPU profile had AbortSignal creation among the agent's top costs).
 */
class ExchangeAbort extends EventEmitter {
  aborted = false;

  readonly fire = (): void => {
    if (this.aborted) return;
    this.aborted = true;
    this.emit('abort');
  };
}

/** One HTTP exchange. Never follows redirects: a 3xx comes back as a response for the caller to judge. */
export async function request(url: string, options: RequestOptions): Promise<HttpResponse> {
  const abort = new ExchangeAbort();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    abort.fire();
  }, options.timeoutMs);
  const outer = options.signal;
  if (outer) {
    if (outer.aborted) abort.fire();
    else outer.addEventListener('abort', abort.fire, { once: true });
  }
  const failure = (
    kind: TransportErrorKind,
    message: string,
    cause: unknown,
    phase: 'headers' | 'body',
  ): HttpTransportError => {
    if (timedOut) {
      return new HttpTransportError('timeout', url, `timed out after ${options.timeoutMs / 1000}s`, cause, phase);
    }
    if (outer?.aborted) return new HttpTransportError('aborted', url, 'request aborted', cause, phase);
    return new HttpTransportError(kind, url, message, cause, phase);
  };

  const headers: Record<string, string> = { ...options.headers };
  let body: string | Buffer | undefined;
  if (options.jsonText !== undefined) body = typeof options.jsonText === 'string' ? exactUtf8(options.jsonText) : options.jsonText;
  else if (options.json !== undefined) body = exactUtf8(JSON.stringify(options.json));
  if (body !== undefined) headers['content-type'] = 'application/json';
  const cookie = options.jar?.header();
  if (cookie) headers.cookie = cookie;

  const target = new URL(url);
  try {
    let res: Dispatcher.ResponseData;
    try {
      res = await agentRequest.call(options.dispatcher ?? dispatcher(), {
        origin: target.origin,
        path: target.pathname + target.search,
        method: options.method ?? (body === undefined ? 'GET' : 'POST'),
        headers,
        body,
        signal: abort,
      });
    } catch (err) {
      throw failure(classify(err), describe(err), err, 'headers');
    }
    const setCookies = toList(res.headers['set-cookie']);
    options.jar?.absorb(setCookies);
    let payload: Buffer;
    try {
      payload = await readBounded(res.body, options.maxBodyBytes, res.headers['content-length']);
    } catch (err) {
      if (err instanceof BodyTooLarge) {
        throw new HttpTransportError(
          'too_large',
          url,
          `response body too large: more than ${options.maxBodyBytes} bytes (max_response_bytes)`,
          undefined,
          'body',
        );
      }
      throw failure('body_read', `reading the response body failed: ${describe(err)}`, err, 'body');
    }
    let decoded: string | undefined;
    return {
      status: res.statusCode,
      headers: res.headers as IncomingHttpHeaders,
      body: payload,
      setCookies,
      text: () => (decoded ??= payload.toString('utf8')),
      json: () => parseBoundedJson((decoded ??= payload.toString('utf8')), MAX_ENVELOPED_JSON_DEPTH),
    };
  } finally {
    clearTimeout(timer);
    outer?.removeEventListener('abort', abort.fire);
  }
}

class BodyTooLarge extends Error {}

async function readBounded(
  body: Dispatcher.ResponseData['body'],
  limit: number | undefined,
  contentLength: string | string[] | undefined,
): Promise<Buffer> {
  // HTTP framing delivers exactly the declared length, so a body declared within the limit is read whole: undici's
  // own reader is much cheaper than a stream async iterator (a rollout reads about ten small bodies).
  const declared = typeof contentLength === 'string' ? Number(contentLength) : Number.NaN;
  // A large declared body is copied into one buffer of its size as it arrives: collecting chunks and joining them
  // would hold it twice at the peak (an agent under many large answers at once is bounded by those peaks).
  if (declared > LARGE_BODY_BYTES && (limit === undefined || declared <= limit)) return readIntoBuffer(body, declared);
  if (limit === undefined || declared <= limit) return Buffer.from(await body.arrayBuffer());
  // A body declared over the limit fails before a byte of it is buffered.
  if (declared > limit) {
    body.destroy();
    throw new BodyTooLarge();
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const buf = chunk as Buffer;
    size += buf.length;
    if (limit !== undefined && size > limit) {
      body.destroy();
      throw new BodyTooLarge();
    }
    chunks.push(buf);
  }
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
}

const LARGE_BODY_BYTES = 1024 * 1024;

async function readIntoBuffer(body: Dispatcher.ResponseData['body'], declared: number): Promise<Buffer> {
  const out = Buffer.allocUnsafe(declared);
  let at = 0;
  for await (const chunk of body) {
    const buf = chunk as Buffer;
    // HTTP framing never delivers more than the declared length; the bound is kept anyway.
    at += buf.copy(out, at, 0, Math.min(buf.length, declared - at));
  }
  return at === declared ? out : out.subarray(0, at);
}

function toList(value: string | string[] | undefined): string[] {
  if (value === undefined) return [];
  return Array.isArray(value) ? value : [value];
}

export interface RetryPolicy {
  /** Total attempts, the first included. */
  attempts: number;
  delayMs: number;
  /** Whether this failure may be retried. */
  retryOn: (err: unknown) => boolean;
  signal?: AbortSignal;
}

/** Run `attempt` until it succeeds, a failure is not retryable, or the budget is spent (then the last error). */
export async function withRetries<T>(attempt: (index: number) => Promise<T>, policy: RetryPolicy): Promise<T> {
  for (let index = 0; ; index++) {
    try {
      return await attempt(index);
    } catch (err) {
      if (index + 1 >= policy.attempts || !policy.retryOn(err) || policy.signal?.aborted) throw err;
      await delay(policy.delayMs, policy.signal);
    }
  }
}

export function delay(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

export const isConnectError = (err: unknown): boolean =>
  err instanceof HttpTransportError && err.kind === 'connect';

/** Failures that happen while opening the connection: the request cannot have reached the server. */
const NEVER_DELIVERED_CODES = new Set([
  'ECONNREFUSED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/**
 * True when the request certainly never reached the server (the connection was refused or never opened). A reset
 * or a socket closed later is not: the server may have received the request and started on it.
 */
export function neverDelivered(err: unknown): boolean {
  if (!(err instanceof HttpTransportError) || err.kind !== 'connect') return false;
  const code = errorCode(err.cause);
  return code !== undefined && NEVER_DELIVERED_CODES.has(code);
}

export interface InternalCallOptions {
  /** JSON body; without one (and without `jsonText`) the call is a GET. */
  json?: unknown;
  jsonText?: string | Buffer;
  jar?: CookieJar;
  timeoutMs: number;
  /** Bound on the reply body (D14); unbounded when unset. */
  maxBodyBytes?: number;
  /** Total attempts for connection-class failures (D12: bounded, never forever). */
  attempts?: number;
  signal?: AbortSignal;
}

/**
 * An internal hop between tsgym processes: JSON POST (GET without a body), bounded deadline, connection
 * failures retried a bounded number of times. HTTP error statuses come back as responses.
 */
export function callInternal(url: string, options: InternalCallOptions): Promise<HttpResponse> {
  const { attempts = 3, ...rest } = options;
  return withRetries(() => request(url, rest), {
    attempts,
    delayMs: 250,
    retryOn: isConnectError,
    ...(options.signal ? { signal: options.signal } : {}),
  });
}
