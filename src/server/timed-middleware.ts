/**
 * A middleware that learns how each request ended: its status (500 when the handler threw) and its duration in
 * seconds, reported after the reply is built, whatever happened. The metrics and the json request log both stand on it.
 */
import type { GymRequest, Middleware } from '../http/server.js';

export function timedMiddleware(onAnswered: (req: GymRequest, status: number, seconds: number) => void): Middleware {
  return async (req, next) => {
    const startedAt = performance.now();
    let status = 500;
    try {
      const reply = await next();
      status = reply.status ?? 200;
      return reply;
    } finally {
      onAnswered(req, status, (performance.now() - startedAt) / 1000);
    }
  };
}
