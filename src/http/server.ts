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
 *
 * This module is the framework's one entry point; each part lives in a module of its own:
 *   app.ts           — the application: routes, middleware, serving over HTTP and in process;
 *   routes.ts        — which handler answers a request, and the 404/405 when none does;
 *   request.ts       — the request handlers see (lazy query, cookies and JSON), `parseBody`;
 *   body.ts          — reading a request body within the size limit;
 *   reply.ts         — encoding a reply and writing it, with the 500s when that fails;
 *   http-error.ts    — `HttpError`, the FastAPI-style error a handler throws;
 *   lifecycle.ts     — listening and closing;
 *   process-guard.ts — the process-level safety net;
 *   thrown.ts        — describing a thrown value for replies and logs.
 */
export { App, type Middleware } from './app.js';
export { HttpError } from './http-error.js';
export { closeServer, type Listening } from './lifecycle.js';
export { guardProcess } from './process-guard.js';
export type { GymReply, InjectedReply } from './reply.js';
export { ClientGone, parseBody, type GymRequest, type InjectedRequest } from './request.js';
export { stackOf } from './thrown.js';
