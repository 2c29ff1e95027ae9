/**
 * The application object of every tsgym server: its routes and middleware, and the two ways a request reaches them,
 * over HTTP (`listener`, `listen`) and in process (`inject`). Nothing one request does can throw past it (D19).
 */
import type http from 'node:http';
import { readBody } from './body.js';
import { bodyTooLarge, HttpError } from './http-error.js';
import { listenWith, type Listening } from './lifecycle.js';
import {
  collectStream,
  encodeOrExplain,
  encodeReply,
  injectedReply,
  joined,
  writeReply,
  writeStream,
  type GymReply,
  type InjectedReply,
} from './reply.js';
import { ClientGone, incomingRequest, type GymRequest, type InjectedRequest } from './request.js';
import { RouteTable, type Handler } from './routes.js';
import { describeThrown } from './thrown.js';

export type Middleware = (req: GymRequest, next: () => Promise<GymReply>) => Promise<GymReply>;

export interface AppOptions {
  /** Requests with a larger body are answered 413 without buffering the rest. */
  maxBodyBytes?: number;
  /** Called for unexpected handler errors (500s), so servers can log them. */
  onError?: (err: unknown, req: GymRequest) => void;
}

const DEFAULT_MAX_BODY_BYTES = 512 * 1024 * 1024;

/** The FastAPI-style reply of a thrown `HttpError`. */
function detailReply(err: HttpError): GymReply {
  return { status: err.status, body: { detail: err.detail } };
}

export class App {
  private readonly routes = new RouteTable();
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
    this.routes.add(method, path, handler);
    return this;
  }

  /** Middleware runs outermost-first and also wraps 404s and error replies (so a session cookie survives them). */
  use(middleware: Middleware): this {
    this.middleware.push(middleware);
    return this;
  }

  hasRoute(method: string, path: string): boolean {
    return this.routes.has(method, path);
  }

  /** The `node:http` request listener. */
  readonly listener = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    this.serve(req, res).catch((err: unknown) => {
      // serve() contains its own failures; this is the last fence, so nothing escapes as an unhandled rejection.
      this.report(err, undefined);
      res.destroy();
    });
  };

  listen(port = 0, host = '127.0.0.1'): Promise<Listening> {
    return listenWith(this.listener, port, host);
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
        this.send(res, detailReply(err), undefined);
        req.resume();
      } else {
        res.destroy();
      }
      return;
    }
    const request = incomingRequest(req.method ?? 'GET', req.url ?? '/', req.headers, body, abort);
    const reply = await this.respond(request);
    if (reply.stream) await writeStream(res, { ...reply, stream: reply.stream }, (err) => this.report(err, request));
    else if (!res.destroyed) this.send(res, reply, request);
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
      return joined(encodeReply(detailReply(bodyTooLarge(call.body.length, this.maxBodyBytes))));
    }
    const request = incomingRequest(call.method, call.url, call.headers, call.body, call.clientGone);
    const answered = await this.respond(request);
    const reply = answered.stream ? await collectStream({ ...answered, stream: answered.stream }) : answered;
    // As `send`: a reply that cannot be encoded is a 500 keeping the cookies; one whose headers could not be written
    // is a 500 without them; when even that fails the request is dropped (over HTTP: the connection is destroyed).
    const report = (err: unknown): void => this.report(err, request);
    return injectedReply(encodeOrExplain(reply, report), report);
  }

  /** Encode and write a reply; a reply that cannot be encoded is answered 500 instead, one that cannot be written is dropped. */
  private send(res: http.ServerResponse, reply: GymReply, req: GymRequest | undefined): void {
    const report = (err: unknown): void => this.report(err, req);
    writeReply(res, encodeOrExplain(reply, report), report);
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
    const handler = this.routes.handlerFor(req);
    if (!handler) return this.routes.unmatched(req.path);
    try {
      return await handler(req);
    } catch (err) {
      return this.errorReply(err, req);
    }
  }

  private errorReply(err: unknown, req: GymRequest): GymReply {
    if (err instanceof HttpError) return detailReply(err);
    this.report(err, req);
    return { status: 500, body: describeThrown(err) };
  }
}
