/**
 * The in-process transport of co-located servers (decision D23): a call to a server that shares this process is
 * handed to its `App` without a socket, with exactly the shape and failure semantics of `callInternal` over HTTP —
 * the same request headers (the body's content type, the jar's cookies, the caller's own, e.g. a `traceparent`), the
 * same deadline and caller signal (`timeout` / `aborted` errors with the same texts; the server-side request sees its
 * client go away), the same reply body bound (`too_large`), and cookies absorbed into the jar exactly when HTTP would.
 *
 * `registerLocalServer(url, app)` is called by the co-location host for each server it runs; a call to any other URL,
 * or to a server whose listener has closed (it is shutting down), goes over the network as before (`callInternal`).
 */
import type { IncomingHttpHeaders } from 'node:http';
import { MAX_ENVELOPED_JSON_DEPTH, parseBoundedJson } from '../bounded-json/index.js';
import {
  callInternal,
  HttpTransportError,
  withRetries,
  type HttpResponse,
  type InternalCallOptions,
} from './client.js';
import { ClientGone, type InjectedReply, type InjectedRequest } from './server.js';

/** What the transport needs of a server: `App.inject` (an App of another tsgym copy qualifies too). */
export interface LocalServer {
  inject(call: InjectedRequest): Promise<InjectedReply>;
}

/** A hop to another tsgym server, HTTP or in-process: `callInternal`'s signature. */
export type Transport = (url: string, options: InternalCallOptions) => Promise<HttpResponse>;

const local = new Map<string, LocalServer>();

/** Serve calls to `baseUrl` (the server's own `http://host:port`) in-process until `unregisterLocalServer`. */
export function registerLocalServer(baseUrl: string, server: LocalServer): void {
  local.set(stripSlash(baseUrl), server);
}

export function unregisterLocalServer(baseUrl: string): void {
  local.delete(stripSlash(baseUrl));
}

/** The transport for calls to `baseUrl`: in-process while a co-located server is registered there, else HTTP. */
export function transportFor(baseUrl: string): Transport {
  const key = stripSlash(baseUrl);
  return (url, options) => {
    const server = local.get(key);
    if (server === undefined) return callInternal(url, options);
    const path = url.slice(key.length) || '/';
    const { attempts = 3, ...rest } = options;
    return withRetries(() => callInProcess(server, url, path, rest), {
      attempts,
      delayMs: 250,
      retryOn: (err) => err instanceof HttpTransportError && err.kind === 'connect',
      ...(options.signal ? { signal: options.signal } : {}),
    });
  };
}

function stripSlash(url: string): string {
  return url.endsWith('/') ? url.slice(0, -1) : url;
}

/** One exchange with a co-located server. */
function callInProcess(
  server: LocalServer,
  url: string,
  path: string,
  options: Omit<InternalCallOptions, 'attempts'>,
): Promise<HttpResponse> {
  const text = options.jsonText ?? (options.json !== undefined ? JSON.stringify(options.json) : undefined);
  const body = text === undefined ? EMPTY : typeof text === 'string' ? Buffer.from(text, 'utf8') : text;
  const headers: IncomingHttpHeaders = { host: hostOf(url) };
  const cookie = options.jar?.header();
  for (const name in options.headers) {
    const lower = name.toLowerCase();
    if ((text !== undefined && lower === 'content-type') || (cookie && lower === 'cookie')) continue;
    headers[lower] = options.headers[name]!;
  }
  if (text !== undefined) {
    headers['content-type'] = 'application/json';
    headers['content-length'] = String(body.length);
  }
  if (cookie) headers.cookie = cookie;
  const clientGone = new ClientGone();
  const call: InjectedRequest = {
    method: text === undefined ? 'GET' : 'POST',
    url: path,
    headers,
    body,
    clientGone,
  };
  return new Promise<HttpResponse>((resolve, reject) => {
    let settled = false;
    const finish = (): boolean => {
      if (settled) return false;
      settled = true;
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      return true;
    };
    const fail = (err: HttpTransportError): void => {
      if (!finish()) return;
      clientGone.fire(); // the server's request sees its client go away, as when the connection is cut
      reject(err);
    };
    const onAbort = (): void => fail(new HttpTransportError('aborted', url, 'request aborted'));
    const timer = setTimeout(
      () => fail(new HttpTransportError('timeout', url, `timed out after ${options.timeoutMs / 1000}s`)),
      options.timeoutMs,
    );
    if (options.signal?.aborted) {
      onAbort();
      return;
    }
    options.signal?.addEventListener('abort', onAbort, { once: true });
    // Handled after a turn of the event loop, as a request over a socket would be: I/O that is already pending (a
    // connection the caller just cut, a service's reply) is seen first, and chained calls never starve it.
    void new Promise<void>((next) => setImmediate(next))
      .then(() => server.inject(call))
      .then(
        (reply) => {
          if (settled) return;
          const limit = options.maxBodyBytes;
          const size = Buffer.byteLength(reply.payload);
          if (limit !== undefined && size > limit) {
            fail(
              new HttpTransportError(
                'too_large',
                url,
                `response body too large: more than ${limit} bytes (max_response_bytes)`,
                undefined,
                'body',
              ),
            );
            return;
          }
          finish();
          const response = toResponse(reply);
          options.jar?.absorb(response.setCookies);
          resolve(response);
        },
        // inject contains every failure of a request; one escaping it is a connection dropped without a reply.
        (err: unknown) =>
          fail(
            new HttpTransportError('connect', url, `the co-located server dropped the request: ${String(err)}`, err),
          ),
      );
  });
}

const EMPTY = Buffer.alloc(0);

/** `String.prototype.isWellFormed` (Node 20; not yet in the TypeScript lib this project targets). */
function isWellFormed(text: string): boolean {
  return (text as unknown as { isWellFormed(): boolean }).isWellFormed();
}

function hostOf(url: string): string {
  const start = url.indexOf('//') + 2;
  const end = url.indexOf('/', start);
  return end < 0 ? url.slice(start) : url.slice(start, end);
}

/** The reply as `request()` would have read it: lower-case header names, string values. */
function toResponse(reply: InjectedReply): HttpResponse {
  const headers: IncomingHttpHeaders = {};
  let setCookies: string[] = [];
  for (const name in reply.headers) {
    const value = reply.headers[name]!;
    const lower = name.toLowerCase();
    if (lower === 'set-cookie') {
      setCookies = Array.isArray(value) ? value.map(String) : [String(value)];
      // As undici's header parser leaves it: one value a string, several a list.
      (headers as Record<string, unknown>)['set-cookie'] = setCookies.length === 1 ? setCookies[0] : setCookies;
    } else {
      headers[lower] = Array.isArray(value) ? value.join(', ') : String(value);
    }
  }
  const payload = reply.payload;
  // A string payload is what the server would have encoded; when it is well-formed UTF-16 its decoded bytes are the
  // same string, so the text is taken as is (no encode and decode round trip) and bytes are made only when asked for.
  let bytes: Buffer | undefined = typeof payload === 'string' ? undefined : payload;
  let decoded: string | undefined = typeof payload === 'string' && isWellFormed(payload) ? payload : undefined;
  const body = (): Buffer => (bytes ??= Buffer.from(payload as string, 'utf8'));
  const text = (): string => (decoded ??= body().toString('utf8'));
  return {
    status: reply.status,
    headers,
    get body() {
      return body();
    },
    setCookies,
    text,
    json: () => parseBoundedJson(text(), MAX_ENVELOPED_JSON_DEPTH),
  };
}
