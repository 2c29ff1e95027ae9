/**
 * How a server logs its requests. `logRequestFailure`: a request whose handler threw (an agent's or an environment's),
 * one `request failed` event in json mode, else the `[name] METHOD PATH failed: stack` line on stderr.
 * `requestLogMiddleware`: a resources server's request events in json log mode (src/logging/log.ts): one `request`
 * event per answered request with the method, path, status and duration, the trace id from the incoming `traceparent`
 * and the rollout keys from the `baggage` the remote agent sends (src/logging/baggage.ts). Installed only in json mode,
 * so a text-mode server does no work for it. Never a header value, a body or a cookie.
 */
import { stackOf, type GymRequest, type Middleware } from '../http/server.js';
import { parseRolloutBaggage } from '../logging/baggage.js';
import { jsonLogs, logEvent } from '../logging/log.js';
import { parseTraceparent } from '../runfiles/trace-context.js';
import { timedMiddleware } from './timed-middleware.js';

/** Longer paths are cut: a caller asking for made-up tools cannot write unbounded lines. */
const MAX_PATH = 200;

export function requestLogMiddleware(service: string): Middleware {
  return timedMiddleware((req, status, seconds) => {
    logEvent(service, status >= 500 ? 'error' : 'info', 'request', {
      method: req.method,
      path: req.path.length > MAX_PATH ? `${req.path.slice(0, MAX_PATH)}…` : req.path,
      status,
      duration_ms: Math.round(seconds * 1_000_000) / 1000,
      trace_id: parseTraceparent(req.headers.traceparent)?.traceId,
      ...parseRolloutBaggage(req.headers.baggage),
    });
  });
}

export function logRequestFailure(name: string, req: GymRequest, err: unknown): void {
  const error = stackOf(err);
  if (jsonLogs()) logEvent(name, 'error', 'request failed', { method: req.method, path: req.path, error });
  else process.stderr.write(`[${name}] ${req.method} ${req.path} failed: ${error}\n`);
}
