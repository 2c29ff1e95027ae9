import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { z } from 'zod';
import { JsonTooDeep, MAX_ENVELOPED_JSON_DEPTH, parseBoundedJson } from '../bounded-json/index.js';
import { parseCookieHeader } from './cookies.js';
import { exactUtf8 } from './utf8.js';
import { jsonLogs, logEvent } from '../logging/log.js';

/**
 * A deliberately small HTTP framework on `node:http` for every tsgym server (resources servers, agents, the
 * head server, scripted test services). Handlers receive a parsed request and return a plain reply object;
 * the framework owns JSON encoding, 404/405/422/500 shapes (FastAPI-compatible, so tools written against the
 * reference read the same texts) and server timeouts suitable for 35-minute rollouts.
 *
 * Per-request isolation (decision D19): nothing one request does — reading its body, parsing it (nesting bounded
 * at 520 levels: a service's 512 plus Gym's envelopes), handling it, encoding the reply (`JSON.stringify` of a value it cannot encode) or writing it — can
 * throw past that request. A reply that cannot be built becomes a 500 with a text saying why; a reply that cannot be
 * written destroys that one connection. The process-level safety net for everything else is `guardProcess()`.
 */

export interface GymRequest {
  readonly method: string;
  readonly path: string;
  readonly query: URLSearchParams;
  readonly headers: http.IncomingHttpHeaders;
  readonly cookies: Record<string, string>;
  readonly body: Buffer;
  /** Scratch space for middleware (for example the session id). */
  readonly locals: Record<string, unknown>;
  /** The JSON body (undefined for an empty body). Malformed JSON answers 400 with the parser's reason. */
  json(): unknown;
  /** Resolves when the client goes away before the reply is sent: long handlers use it to stop early. */
  readonly signal: AbortSignal;
}

export interface GymReply {
  status?: number;
  /** JSON-encoded into the body. */
  body?: unknown;
  /**
   * Sent as-is instead of `body`. A list of buffers is sent one after the other in one write: a large reply made of
   * parts (a body with fields spliced in) goes out without being joined into one more copy first.
   */
  raw?: string | Buffer | readonly Buffer[];
  contentType?: string;
  headers?: Record<string, string>;
  setCookies?: string[];
}

export type Handler = (req: GymRequest) => GymReply | Promise<GymReply>;
export type Middleware = (req: GymRequest, next: () => Promise<GymReply>) => Promise<GymReply>;

/** Throw from a handler to answer with a status and a FastAPI-style `{"detail": …}` body. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly detail: unknown,
  ) {
    super(typeof detail === 'string' ? detail : JSON.stringify(detail));
    this.name = 'HttpError';
  }
}

export interface AppOptions {
  /** Requests with a larger body are answered 413 without buffering the rest. */
  maxBodyBytes?: number;
  /** Called for unexpected handler errors (500s), so servers can log them. */
  onError?: (err: unknown, req: GymRequest) => void;
}

export interface Listening {
  server: http.Server;
  url: string;
  port: number;
  close(): Promise<void>;
}

const LISTEN_BACKLOG = 4096;
const DEFAULT_MAX_BODY_BYTES = 512 * 1024 * 1024;

export class App {
  private readonly routes = new Map<string, Handler>();
  private readonly paths = new Set<string>();
  private readonly middleware: Middleware[] = [];
  private readonly maxBodyBytes: number;
  private readonly onError: ((err: unknown, req: GymRequest) => void) | undefined;

  constructor(options: AppOptions = {}) {
    this.maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
    this.onError = options.onError;
  }

  get(path: string, handler: Handler): this {
    return this.route('GET', path, handler);
  }

  post(path: string, handler: Handler): this {
    return this.route('POST', path, handler);
  }

  route(method: string, path: string, handler: Handler): this {
    this.routes.set(`${method} ${path}`, handler);
    this.paths.add(path);
    return this;
  }

  /** Middleware runs outermost-first and also wraps 404s and error replies (so a session cookie survives them). */
  use(middleware: Middleware): this {
    this.middleware.push(middleware);
    return this;
  }

  hasRoute(method: string, path: string): boolean {
    return this.routes.has(`${method} ${path}`);
  }

  /** The `node:http` request listener. */
  readonly listener = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    this.serve(req, res).catch((err: unknown) => {
      // serve() contains its own failures; this is the last fence, so nothing escapes as an unhandled rejection.
      this.report(err, undefined);
      res.destroy();
    });
  };

  async listen(port = 0, host = '127.0.0.1'): Promise<Listening> {
    const server = http.createServer(
      // A rollout's /run may legitimately last 35 minutes: no request deadline at this layer.
      { requestTimeout: 0, headersTimeout: 60_000, keepAliveTimeout: 30_000 },
      this.listener,
    );
    // Longer than any client's keep-alive so a client never writes into a socket the server is closing.
    server.keepAliveTimeout = 30_000;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      // Node's default accept queue is 511 connections: a collector opening 2,000 at once overflowed it (the kernel's
      // ListenOverflows counter), and a connection the queue had dropped was reset after its request was sent, failing
      // that rollout. The kernel caps this at net.core.somaxconn (4096 by default).
      server.listen({ port, host, backlog: LISTEN_BACKLOG }, () => {
        server.off('error', reject);
        resolve();
      });
    });
    const address = server.address() as AddressInfo;
    const shownHost = host.includes(':') ? `[${host}]` : host;
    return {
      server,
      port: address.port,
      url: `http://${shownHost}:${address.port}`,
      close: () => closeServer(server),
    };
  }

  private async serve(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const abort = new ClientGone();
    res.once('close', () => {
      if (!res.writableFinished) abort.fire();
    });
    let body: Buffer;
    try {
      body = await readBody(req, this.maxBodyBytes);
    } catch (err) {
      if (err instanceof HttpError) {
        this.send(res, { status: err.status, body: { detail: err.detail } }, undefined);
        req.resume();
      } else {
        res.destroy();
      }
      return;
    }
    const rawUrl = req.url ?? '/';
    const q = rawUrl.indexOf('?');
    const path = q < 0 ? rawUrl : rawUrl.slice(0, q);
    const request = new IncomingRequest(
      req.method ?? 'GET',
      path,
      q < 0 ? '' : rawUrl.slice(q + 1),
      req.headers,
      body,
      abort,
    );
    const reply = await this.respond(request);
    if (!res.destroyed) this.send(res, reply, request);
  }

  private async respond(request: GymRequest): Promise<GymReply> {
    try {
      return await this.dispatch(request, 0);
    } catch (err) {
      return this.errorReply(err, request);
    }
  }

  /**
   * One request handled without a socket (decision D23: a co-located agent calls its environment this way): the same
   * body limit, middleware, routes, error replies and encoding as over HTTP, and the same header checks node:http
   * makes when writing. `clientGone` plays the closed connection: firing it aborts the request's `signal`.
   */
  async inject(call: InjectedRequest): Promise<InjectedReply> {
    if (call.body.length > this.maxBodyBytes) {
      const limit = this.maxBodyBytes;
      return joined(
        encodeReply({
          status: 413,
          body: { detail: `request body of ${call.body.length} bytes is too large (limit ${limit})` },
        }),
      );
    }
    const q = call.url.indexOf('?');
    const request = new IncomingRequest(
      call.method,
      q < 0 ? call.url : call.url.slice(0, q),
      q < 0 ? '' : call.url.slice(q + 1),
      call.headers,
      call.body,
      call.clientGone,
    );
    const reply = await this.respond(request);
    // As `send`: a reply that cannot be encoded is a 500 keeping the cookies; one whose headers could not be written
    // is a 500 without them; when even that fails the request is dropped (over HTTP: the connection is destroyed).
    let encoded: EncodedReply;
    try {
      encoded = encodeReply(reply);
    } catch (err) {
      this.report(err, request);
      encoded = encodeReply({
        status: 500,
        body: `the reply could not be built: ${describeThrown(err)}`,
        ...(reply.setCookies ? { setCookies: reply.setCookies } : {}),
      });
    }
    try {
      return joined(checkHeaders(encoded));
    } catch (err) {
      this.report(err, request);
      return joined(
        checkHeaders(encodeReply({ status: 500, body: `the reply could not be written: ${describeThrown(err)}` })),
      );
    }
  }

  /** Encode and write a reply; a reply that cannot be encoded is answered 500 instead, one that cannot be written is dropped. */
  private send(res: http.ServerResponse, reply: GymReply, req: GymRequest | undefined): void {
    let encoded: EncodedReply;
    try {
      encoded = encodeReply(reply);
    } catch (err) {
      this.report(err, req);
      // The session cookie is kept even on this 500, as on every other reply (Q3).
      encoded = encodeReply({
        status: 500,
        body: `the reply could not be built: ${describeThrown(err)}`,
        ...(reply.setCookies ? { setCookies: reply.setCookies } : {}),
      });
    }
    try {
      res.writeHead(encoded.status, encoded.headers);
      if (!inParts(encoded.payload)) res.end(encoded.payload);
      else {
        // Corked, the parts leave in one writev; `end` uncorks.
        res.cork();
        for (const part of encoded.payload) res.write(part);
        res.end();
      }
    } catch (err) {
      // Invalid header bytes from a handler, or a socket that failed mid-write: only this request is lost.
      this.report(err, req);
      if (!res.headersSent) {
        try {
          const fallback = encodeReply({ status: 500, body: `the reply could not be written: ${describeThrown(err)}` });
          res.writeHead(fallback.status, fallback.headers);
          res.end(fallback.payload);
          return;
        } catch {
          // fall through to destroy
        }
      }
      res.destroy();
    }
  }

  private report(err: unknown, req: GymRequest | undefined): void {
    try {
      if (this.onError && req) this.onError(err, req);
      else process.stderr.write(`[http] ${req ? `${req.method} ${req.path}: ` : ''}${describeThrown(err)}\n`);
    } catch {
      // A failing error hook must not become the request's failure.
    }
  }

  private dispatch(req: GymRequest, index: number): Promise<GymReply> {
    const mw = this.middleware[index];
    if (mw) return mw(req, () => this.dispatch(req, index + 1));
    return this.invoke(req);
  }

  private async invoke(req: GymRequest): Promise<GymReply> {
    // HEAD is GET without a body (node:http drops the body of a HEAD reply), so monitors and `curl -I` get the GET's status.
    const handler = this.routes.get(`${req.method === 'HEAD' ? 'GET' : req.method} ${req.path}`);
    if (!handler) {
      const status = this.paths.has(req.path) ? 405 : 404;
      return { status, body: { detail: status === 405 ? 'Method Not Allowed' : 'Not Found' } };
    }
    try {
      return await handler(req);
    } catch (err) {
      return this.errorReply(err, req);
    }
  }

  private errorReply(err: unknown, req: GymRequest): GymReply {
    if (err instanceof HttpError) return { status: err.status, body: { detail: err.detail } };
    this.report(err, req);
    return { status: 500, body: describeThrown(err) };
  }
}

/**
 * "The client went away", as an AbortSignal created only when a handler asks for one: most requests (every tool
 * call) never do, and an AbortController per request was one of the environment's top costs in the profile.
 */
export class ClientGone {
  private controller: AbortController | undefined;
  private gone = false;

  fire(): void {
    this.gone = true;
    this.controller?.abort();
  }

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.gone) this.controller.abort();
    }
    return this.controller.signal;
  }
}

class IncomingRequest implements GymRequest {
  readonly locals: Record<string, unknown> = {};
  private parsedCookies: Record<string, string> | undefined;
  private parsedQuery: URLSearchParams | undefined;
  private parsed = false;
  private parsedBody: unknown;

  constructor(
    readonly method: string,
    readonly path: string,
    private readonly rawQuery: string,
    readonly headers: http.IncomingHttpHeaders,
    readonly body: Buffer,
    private readonly clientGone: ClientGone,
  ) {}

  get signal(): AbortSignal {
    return this.clientGone.signal;
  }

  get cookies(): Record<string, string> {
    this.parsedCookies ??= parseCookieHeader(this.headers.cookie);
    return this.parsedCookies;
  }

  get query(): URLSearchParams {
    this.parsedQuery ??= new URLSearchParams(this.rawQuery);
    return this.parsedQuery;
  }

  json(): unknown {
    if (!this.parsed) {
      this.parsed = true;
      if (this.body.length === 0) {
        this.parsedBody = undefined;
      } else {
        try {
          this.parsedBody = parseBoundedJson(this.body.toString('utf8'), MAX_ENVELOPED_JSON_DEPTH);
        } catch (err) {
          if (err instanceof JsonTooDeep) throw new HttpError(400, `request body is ${err.message}`);
          throw new HttpError(400, `request body is not valid JSON: ${(err as Error).message}`);
        }
      }
    }
    return this.parsedBody;
  }
}

/**
 * Validate a JSON body against a zod schema; a mismatch answers 422 with FastAPI's detail shape, one entry per
 * issue, each naming the field (`loc: ["body", "count"]`).
 */
export function parseBody<T>(schema: z.ZodType<T>, req: GymRequest): T {
  const body = req.json();
  const result = schema.safeParse(body ?? {});
  if (result.success) return result.data;
  throw new HttpError(
    422,
    result.error.issues.map((issue) => ({
      type: issue.code,
      loc: ['body', ...issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p))],
      msg: `${issue.path.length ? issue.path.join('.') : 'body'}: ${issue.message}`,
    })),
  );
}

function readBody(req: http.IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) {
    return Promise.reject(new HttpError(413, `request body of ${declared} bytes is too large (limit ${limit})`));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.removeAllListeners('data');
        reject(new HttpError(413, `request body is too large (limit ${limit} bytes)`));
        return;
      }
      chunks.push(chunk);
    });
    req.once('end', () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size)));
    req.once('error', reject);
  });
}

interface EncodedReply {
  status: number;
  headers: http.OutgoingHttpHeaders;
  payload: string | Buffer | readonly Buffer[];
}

/** A request handed to `App.inject`: headers as node:http would present them (lower-case names). */
export interface InjectedRequest {
  method: string;
  /** Path and query, as on the request line. */
  url: string;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  clientGone: ClientGone;
}

/** An in-process reply: its payload in one piece, as a client reading it from a connection would have it. */
export interface InjectedReply extends EncodedReply {
  payload: string | Buffer;
}

/** The header checks `writeHead` makes (a bad header name or value throws). */
function checkHeaders(encoded: EncodedReply): EncodedReply {
  for (const name in encoded.headers) {
    http.validateHeaderName(name);
    const value = encoded.headers[name]!;
    if (Array.isArray(value)) for (const item of value) http.validateHeaderValue(name, item);
    else http.validateHeaderValue(name, String(value));
  }
  return encoded;
}

/** Throws when the body cannot be encoded (a cycle, a BigInt, nesting deeper than the stack). */
function encodeReply(reply: GymReply): EncodedReply {
  const payload =
    reply.raw !== undefined
      ? reply.raw
      : reply.body === undefined
        ? ''
        : exactUtf8(JSON.stringify(reply.body) ?? 'null');
  const headers: http.OutgoingHttpHeaders = {
    'content-type': reply.contentType ?? 'application/json',
    'content-length': byteLength(payload),
    ...reply.headers,
  };
  if (reply.setCookies && reply.setCookies.length > 0) headers['set-cookie'] = reply.setCookies;
  return { status: reply.status ?? 200, headers, payload };
}

function inParts(payload: EncodedReply['payload']): payload is readonly Buffer[] {
  return typeof payload !== 'string' && !Buffer.isBuffer(payload);
}

function byteLength(payload: EncodedReply['payload']): number {
  if (!inParts(payload)) return Buffer.byteLength(payload);
  let size = 0;
  for (const part of payload) size += part.length;
  return size;
}

function joined(encoded: EncodedReply): InjectedReply {
  const { payload } = encoded;
  return inParts(payload) ? { ...encoded, payload: Buffer.concat(payload) } : { ...encoded, payload };
}

function describeThrown(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

/**
 * The process-level safety net of a server process, installed once by its entry point. Decision: an
 * `uncaughtException` means some code's state is unknown (Node's own guidance is not to resume), so it is logged
 * with its stack and context and the process exits with code 70; `gym env start` restarts it on the same address
 * (decision D20). An `unhandledRejection` is a promise nobody awaited: its request (if any) has already been
 * answered or contained, so it is logged with context and the process keeps serving.
 */
export function guardProcess(name: string): void {
  if (guarded) return;
  guarded = true;
  // One event in json mode, else the `[name] message: stack` line.
  const report = (message: string, thrown: unknown): void => {
    if (jsonLogs()) logEvent(name, 'error', message, { error: stackOf(thrown) });
    else process.stderr.write(`[${name}] ${message}: ${stackOf(thrown)}\n`);
  };
  process.on('uncaughtException', (err, origin) => {
    report(`fatal ${origin} (the process exits for the supervisor to restart it)`, err);
    process.exit(70);
  });
  process.on('unhandledRejection', (reason) =>
    report('unhandled promise rejection (logged; the server keeps serving)', reason),
  );
}

let guarded = false;

/** A thrown value's stack (or its text), never throwing itself: for log lines about failures. */
export function stackOf(err: unknown): string {
  try {
    return err instanceof Error ? (err.stack ?? describeThrown(err)) : String(err);
  } catch {
    return 'an unprintable value';
  }
}

export function closeServer(server: http.Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
    // In-flight long requests (a hung handler) must not keep a shutdown waiting.
    setTimeout(() => server.closeAllConnections(), 500).unref();
  });
}
