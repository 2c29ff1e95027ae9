/**
 * The environment's request metrics (src/prometheus/metrics.ts): every answered request counted by route kind
 * (`seed`, `verify`, `tool` for any other POST, `other` for GETs such as `/` and `/metrics`) and status class, and
 * timed by route kind. Route kinds, not paths, so a caller asking for made-up tools cannot grow the label set.
 */
import type { Middleware } from '../http/server.js';
import { environmentMetrics } from '../prometheus/metrics.js';

function routeKind(method: string, path: string): string {
  if (method !== 'POST') return 'other';
  if (path === '/seed_session') return 'seed';
  if (path === '/verify') return 'verify';
  if (path === '/aggregate_metrics') return 'aggregate';
  return 'tool';
}

export function environmentMetricsMiddleware(): Middleware {
  return async (req, next) => {
    const route = routeKind(req.method, req.path);
    const startedAt = performance.now();
    let status = 500;
    try {
      const reply = await next();
      status = reply.status ?? 200;
      return reply;
    } finally {
      environmentMetrics.requests.inc({ route, status_class: `${Math.floor(status / 100)}xx` });
      environmentMetrics.seconds.observe({ route }, (performance.now() - startedAt) / 1000);
    }
  };
}
