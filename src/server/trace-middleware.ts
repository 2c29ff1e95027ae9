/**
 * A server span for each request that arrives with a `traceparent`, when span export is on (D25): the environment's
 * `POST /seed_session`, `POST /<tool>` and `POST /verify` join the rollout's trace under the agent's hop span.
 * With export off (or no `traceparent`) the middleware only passes the request on. Attributes: the route and the
 * status, never the body.
 */
import type { Middleware } from '../http/server.js';
import { parseTraceparent } from '../runfiles/trace-context.js';
import { exportRequested, rolloutTracer } from '../tracing/spans.js';

export function traceMiddleware(serviceName: string, instanceName: string): Middleware | undefined {
  if (!exportRequested()) return undefined;
  const tracer = rolloutTracer(serviceName);
  return async (req, next) => {
    const parent = parseTraceparent(req.headers.traceparent);
    if (!parent) return next();
    const span = (await tracer).start(`${req.method} ${req.path}`, parent, 'server', {
      'http.request.method': req.method,
      'url.path': req.path,
      'gym.environment': instanceName,
    });
    try {
      const reply = await next();
      const status = reply.status ?? 200;
      span.setAttributes({ 'http.response.status_code': status });
      span.end(status >= 500 ? `HTTP ${status}` : undefined);
      return reply;
    } catch (err) {
      span.end('error');
      throw err;
    }
  };
}
