/**
 * The environment's request metrics (src/prometheus/metrics.ts): every answered request counted by route kind
 * (`seed`, `verify`, `tool` for any other POST, `other` for GETs such as `/` and `/metrics`) and status class, and
 * timed by route kind. Route kinds, not paths, so a caller asking for made-up tools cannot grow the label set.
 */
import type { Middleware } from '../http/server.js';
import { environmentMetrics } from '../prometheus/metrics.js';
import { timedMiddleware } from './timed-middleware.js';

function routeKind(method: string, path: string): string {
  if (method !== 'POST') return 'other';
  if (path === '/seed_session') return 'seed';
  if (path === '/verify') return 'verify';
  if (path === '/aggregate_metrics') return 'aggregate';
  return 'tool';
}

/** The labelled children, looked up once per (route, status class): label hashing stays off the request path. */
const requestChildren = new Map<string, { inc(): void }>();
const secondsChildren = new Map<string, { observe(value: number): void }>();

function count(route: string, statusClass: string, seconds: number): void {
  const key = `${route} ${statusClass}`;
  let requests = requestChildren.get(key);
  if (!requests) {
    requests = environmentMetrics.requests.labels(route, statusClass);
    requestChildren.set(key, requests);
  }
  requests.inc();
  let timer = secondsChildren.get(route);
  if (!timer) {
    timer = environmentMetrics.seconds.labels(route);
    secondsChildren.set(route, timer);
  }
  timer.observe(seconds);
}

export function environmentMetricsMiddleware(): Middleware {
  return timedMiddleware((req, status, seconds) =>
    count(routeKind(req.method, req.path), `${Math.floor(status / 100)}xx`, seconds),
  );
}
