import { randomBytes, randomUUID } from 'node:crypto';
import { serializeSetCookie, SessionSigner } from '../http/cookies.js';
import type { GymRequest, Middleware } from '../http/server.js';

const SESSION_MAX_AGE_SECONDS = 1_209_600; // two weeks, as the reference's session middleware

/**
 * Signed session cookie per server instance. The cookie is named `<ServerClass>___<instance>` (as the reference
 * names it, so one cookie map can carry several servers' cookies without collision); its value is a signed
 * session id. The secret is random per process: sessions are in-memory, so they cannot outlive the process anyway.
 *
 * Every reply — success, 404, 422 and handler errors alike — re-sends the cookie, so a client that replaces its
 * cookies with each response's keeps its session even after a failing tool call (reference quirk Q3, fixed).
 */
export function sessionMiddleware(cookieName: string): Middleware {
  const signer = new SessionSigner(randomBytes(32).toString('hex'));
  return async (req, next) => {
    const existing = signer.verify(req.cookies[cookieName]);
    const id = existing ?? randomUUID();
    req.locals.sessionId = id;
    const reply = await next();
    const cookie = serializeSetCookie(cookieName, signer.sign(id), { maxAgeSeconds: SESSION_MAX_AGE_SECONDS });
    reply.setCookies = [...(reply.setCookies ?? []), cookie];
    return reply;
  };
}

export function sessionIdOf(req: GymRequest): string {
  const id = req.locals.sessionId;
  if (typeof id !== 'string') throw new Error('session middleware is not installed');
  return id;
}
