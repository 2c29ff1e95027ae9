/**
 * The one HTTP client of a tsgym process, over undici keep-alive pools (`dispatcher()` is the process-wide one;
 * `createDispatcher({ ca })` makes one that trusts a private CA). Behaviours are small pieces composed by the
 * caller rather than flags threaded through the rollout loop:
 *
 * - `request()`       one attempt: a deadline covering headers and body, a bounded body read, redirects never
 *                     followed, proxy variables never read (undici's `Agent` has no proxy support by design),
 *                     an optional per-peer cookie jar.
 * - `withRetries()`   a bounded retry budget around any attempt, deciding by the error.
 * - `callInternal()`  the internal hop (collector → agent → environment): JSON POST (GET without a body), with
 *                     connection failures retried within the D12 budget.
 *
 * Failures are `HttpTransportError`s with a `kind`, so callers classify by structure, never by message text;
 * `neverDelivered()` tells the failures where the request cannot have reached the server.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { createRequire } from 'node:module';
import { setFlagsFromString } from 'node:v8';
import type { Agent as UndiciAgent, Dispatcher } from 'undici';
import { MAX_ENVELOPED_JSON_DEPTH, parseBoundedJson } from '../bounded-json/index.js';
import { GymError } from '../errors.js';
import type { CookieJar } from './cookies.js';
import { exactUtf8 } from './utf8.js';

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
  /**
   * A pre-encoded JSON body (saves a re-encode when the caller already has the bytes); a list of buffers is the body
   * in pieces, written one after the other and never joined into one copy.
   */
  jsonText?: string | Buffer | readonly Buffer[];
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
//
// undici parses HTTP with llhttp compiled to WebAssembly. Once its parser function gets hot, V8 recompiles it with
// TurboFan in the background, which peaks at ~35 MiB of compiler memory in every process that makes requests (seen
// as VmHWM 56 → 90 MiB in a process making a few hundred requests). Liftoff's baseline code parses our traffic at
// no measurable extra CPU (20,000 exchanges: within run-to-run noise), so tier-up is switched off before undici
// compiles its module. The flag is process-wide: other WebAssembly in a tsgym process also stays on Liftoff.
setFlagsFromString('--liftoff-only');
const requireUndici = createRequire(import.meta.url);
const Agent = requireUndici('undici/lib/dispatcher/agent.js') as typeof UndiciAgent;

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

/** `<Name> <code>: <message> (<cause>)` of a transport failure. */
export function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const code = errorCode(err);
  const cause = err.cause instanceof Error && err.cause.message !== err.message ? ` (${err.cause.message})` : '';
  return `${err.name}${code ? ` ${code}` : ''}: ${err.message}${cause}`;
}

/** The kind of a failure before any response arrived. */
export function classify(err: unknown): TransportErrorKind {
  const code = errorCode(err);
  if (code === undefined) return 'other';
  if (CONNECT_CODES.has(code)) return 'connect';
  // OpenSSL's verify codes (UNABLE_TO_VERIFY_LEAF_SIGNATURE, SELF_SIGNED_CERT_IN_CHAIN, …) and node's TLS codes.
  if (/CERT|^ERR_TLS|^ERR_SSL|^UNABLE_TO_|SIGNATURE/.test(code)) return 'tls';
  return 'other';
}

export const { parseHeaders } = requireUndici('undici/lib/core/util.js') as {
  parseHeaders: (raw: Buffer[]) => Record<string, string | string[]>;
};
export const { RequestAbortedError } = requireUndici('undici/lib/core/errors.js') as {
  RequestAbortedError: new () => Error;
};

/** The origin and path of a URL, parsed once per distinct URL (a process calls a handful, each many times). */
const targets = new Map<string, { origin: string; path: string }>();
const MAX_CACHED_TARGETS = 1024;

export function targetOf(url: string): { origin: string; path: string } {
  let target = targets.get(url);
  if (target === undefined) {
    const parsed = new URL(url);
    target = { origin: parsed.origin, path: parsed.pathname + parsed.search };
    if (targets.size >= MAX_CACHED_TARGETS) targets.clear();
    targets.set(url, target);
  }
  return target;
}

class BodyTooLarge extends Error {}

/** A body declared larger than this is copied into one buffer of its size as it arrives (see `onHeaders`). */
const LARGE_BODY_BYTES = 1024 * 1024;

/**
 * One exchange as an undici dispatch handler: the response is collected straight from the connection's callbacks,
 * with none of the stream, promise and event plumbing of undici's `request()` (≈ 10 µs of CPU per exchange, and a
 * rollout makes about ten). The handler owns the exchange's deadline and its link to the caller's signal.
 */
class Exchange {
  private abortConnection: ((reason: Error) => void) | undefined;
  private abortReason: Error | undefined;
  private timedOut = false;
  private readonly timer: NodeJS.Timeout;
  private headersSeen = false;
  private status = 0;
  private headers: IncomingHttpHeaders = {};
  private setCookies: string[] = [];
  private chunks: Buffer[] = [];
  private size = 0;
  /** The whole body's buffer when its declared size is large (chunks are copied in as they arrive). */
  private whole: Buffer | undefined;

  constructor(
    private readonly url: string,
    private readonly options: RequestOptions,
    private readonly resolve: (res: HttpResponse) => void,
    private readonly reject: (err: unknown) => void,
  ) {
    this.timer = setTimeout(this.onTimeout, options.timeoutMs);
    const outer = options.signal;
    if (outer) {
      if (outer.aborted) this.abort();
      else outer.addEventListener('abort', this.abort, { once: true });
    }
  }

  private readonly onTimeout = (): void => {
    this.timedOut = true;
    this.abort();
  };

  private readonly abort = (): void => {
    if (this.abortReason) return;
    this.abortReason = new RequestAbortedError();
    // Before the request reached a connection there is nothing to cut yet: `onConnect` does it.
    this.abortConnection?.(this.abortReason);
  };

  onConnect(abort: (reason: Error) => void): void {
    if (this.abortReason) abort(this.abortReason);
    else this.abortConnection = abort;
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[]): boolean {
    if (statusCode < 200) return true; // 1xx: the real response follows
    this.headersSeen = true;
    this.status = statusCode;
    const headers = parseHeaders(rawHeaders);
    this.headers = headers;
    this.setCookies = toList(headers['set-cookie']);
    const contentLength = headers['content-length'];
    const declared = typeof contentLength === 'string' ? Number(contentLength) : Number.NaN;
    const limit = this.options.maxBodyBytes;
    // A body declared over the limit fails before a byte of it is buffered (throwing here aborts the exchange).
    if (limit !== undefined && declared > limit) throw new BodyTooLarge();
    // A large declared body goes into one buffer of its size: collecting chunks and joining them would hold it twice
    // at the peak (an agent under many large answers at once is bounded by those peaks). HTTP framing delivers
    // exactly the declared length.
    if (declared > LARGE_BODY_BYTES) this.whole = Buffer.allocUnsafe(declared);
    return true;
  }

  onData(chunk: Buffer): boolean {
    const limit = this.options.maxBodyBytes;
    if (this.whole !== undefined) {
      this.size += chunk.copy(this.whole, this.size, 0, Math.min(chunk.length, this.whole.length - this.size));
      return true;
    }
    this.size += chunk.length;
    if (limit !== undefined && this.size > limit) throw new BodyTooLarge();
    this.chunks.push(chunk);
    return true;
  }

  onComplete(): void {
    this.finish();
    this.options.jar?.absorb(this.setCookies);
    const whole = this.whole;
    // The chunks are views of the connection's read buffers: copied out, as a stream consumer would.
    const payload =
      whole !== undefined
        ? this.size === whole.length
          ? whole
          : whole.subarray(0, this.size)
        : Buffer.concat(this.chunks, this.size);
    this.chunks = [];
    let decoded: string | undefined;
    this.resolve({
      status: this.status,
      headers: this.headers,
      body: payload,
      setCookies: this.setCookies,
      text: () => (decoded ??= payload.toString('utf8')),
      json: () => parseBoundedJson((decoded ??= payload.toString('utf8')), MAX_ENVELOPED_JSON_DEPTH),
    });
  }

  onError(err: Error): void {
    this.finish();
    this.chunks = [];
    this.whole = undefined;
    if (err instanceof BodyTooLarge) {
      this.reject(
        new HttpTransportError(
          'too_large',
          this.url,
          `response body too large: more than ${this.options.maxBodyBytes} bytes (max_response_bytes)`,
          undefined,
          'body',
        ),
      );
      return;
    }
    // Cookies of a response whose body then failed still count, as they did when the headers arrived.
    if (this.headersSeen) {
      this.options.jar?.absorb(this.setCookies);
      this.reject(this.failure('body_read', `reading the response body failed: ${describe(err)}`, err, 'body'));
    } else {
      this.reject(this.failure(classify(err), describe(err), err, 'headers'));
    }
  }

  private failure(
    kind: TransportErrorKind,
    message: string,
    cause: unknown,
    phase: 'headers' | 'body',
  ): HttpTransportError {
    if (this.timedOut) {
      return new HttpTransportError(
        'timeout',
        this.url,
        `timed out after ${this.options.timeoutMs / 1000}s`,
        cause,
        phase,
      );
    }
    if (this.options.signal?.aborted)
      return new HttpTransportError('aborted', this.url, 'request aborted', cause, phase);
    return new HttpTransportError(kind, this.url, message, cause, phase);
  }

  private finish(): void {
    clearTimeout(this.timer);
    this.options.signal?.removeEventListener('abort', this.abort);
  }
}

/** One HTTP exchange. Never follows redirects: a 3xx comes back as a response for the caller to judge. */
export function request(url: string, options: RequestOptions): Promise<HttpResponse> {
  let body: string | Buffer | readonly Buffer[] | undefined;
  if (options.jsonText !== undefined)
    body = typeof options.jsonText === 'string' ? exactUtf8(options.jsonText) : options.jsonText;
  else if (options.json !== undefined) body = exactUtf8(JSON.stringify(options.json));
  // Headers as undici's flat [name, value, …] list: no object is built and walked per exchange.
  // The body's content type and the jar's cookies replace a caller's header of the same name.
  const cookie = options.jar?.header();
  const headers: string[] = [];
  if (options.headers) {
    for (const name in options.headers) {
      const lower = name.toLowerCase();
      if ((body !== undefined && lower === 'content-type') || (cookie && lower === 'cookie')) continue;
      headers.push(name, options.headers[name]!);
    }
  }
  if (body !== undefined) headers.push('content-type', 'application/json');
  // undici writes an iterable body chunk by chunk; its length is declared, as it is for a single buffer.
  if (isPieces(body)) headers.push('content-length', String(body.reduce((total, piece) => total + piece.length, 0)));
  if (cookie) headers.push('cookie', cookie);
  const target = targetOf(url);
  return new Promise<HttpResponse>((resolve, reject) => {
    const exchange = new Exchange(url, options, resolve, reject);
    try {
      (options.dispatcher ?? dispatcher()).dispatch(
        {
          origin: target.origin,
          path: target.path,
          method: options.method ?? (body === undefined ? 'GET' : 'POST'),
          headers,
          body: (body ?? null) as Dispatcher.DispatchOptions['body'],
        },
        exchange,
      );
    } catch (err) {
      exchange.onError(err as Error);
    }
  });
}

function isPieces(body: string | Buffer | readonly Buffer[] | undefined): body is readonly Buffer[] {
  return Array.isArray(body);
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

export const isConnectError = (err: unknown): boolean => err instanceof HttpTransportError && err.kind === 'connect';

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
  /** Extra request headers (the body's content type and the jar's cookies take precedence). */
  headers?: Record<string, string>;
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
