/**
 * The request a handler receives: method, path, headers and body as they arrived, with the query, the cookies and the
 * JSON body parsed only when a handler asks for them, and a signal that fires when the client goes away.
 */
import type http from 'node:http';
import type { z } from 'zod';
import { JsonTooDeep, MAX_ENVELOPED_JSON_DEPTH, parseBoundedJson } from '../bounded-json/index.js';
import { parseCookieHeader } from './cookies.js';
import { HttpError } from './http-error.js';

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

/** A request handed to `App.inject`: headers as node:http would present them (lower-case names). */
export interface InjectedRequest {
  method: string;
  /** Path and query, as on the request line. */
  url: string;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  clientGone: ClientGone;
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

/** A request arriving over HTTP or in process: its target (path and query, as on the request line) split. */
export function incomingRequest(
  method: string,
  target: string,
  headers: http.IncomingHttpHeaders,
  body: Buffer,
  clientGone: ClientGone,
): GymRequest {
  const q = target.indexOf('?');
  return new IncomingRequest(
    method,
    q < 0 ? target : target.slice(0, q),
    q < 0 ? '' : target.slice(q + 1),
    headers,
    body,
    clientGone,
  );
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
