import { randomBytes, randomUUID } from 'node:crypto';
import { serializeSetCookie, SessionSigner } from '../http/cookies.js';
import type { GymRequest, Middleware } from '../http/server.js';

const SESSION_MAX_AGE_SECONDS = 1_209_600; // two weeks, as the reference's session middleware

/**
 * Reply header naming the server instance that holds the sessions: a random id made when the server is created.
 * Sessions live in memory, so a restarted server (a new process on the same port, decision D20) has lost them and
 * answers with a new id; the remote agent compares it with the one `/seed_session` answered with and fails the
 * rollout as retryable instead of carrying on against a fresh, empty session. A forged or stale cookie still just
 * starts a fresh session (as the reference does) — the header is what tells the client its session is gone.
 */
import { SERVER_BOOT_HEADER } from '../contract/gym-wire.js';

/**
 * Signed session cookie per server instance. The cookie is named `<ServerClass>___<instance>` (as the reference
 * names it, so one cookie map can carry several servers' cookies without collision); its value is a signed
 * session id. The secret is random per process: sessions are in-memory, so they cannot outlive the process anyway.
 *
 * Every reply — success, 404, 422 and handler errors alike — re-sends the cookie, so a client that replaces its
 * cookies with each response's keeps its session even after a failing tool call (reference quirk Q3, fixed). Every
 * reply also carries `SERVER_BOOT_HEADER`.
 */
export function sessionMiddleware(cookieName: string): Middleware {
  const cookies = new VerifiedCookies(new SessionSigner(randomBytes(32).toString('hex')));
  const bootId = randomUUID();
  return async (req, next) => {
    const sent = req.cookies[cookieName];
    const existing = cookies.verify(sent);
    const id = existing ?? randomUUID();
    req.locals.sessionId = id;
    const reply = await next();
    // A verified cookie already is sign(id) (signing is deterministic): re-send it rather than compute the HMAC again.
    const signed = existing !== undefined ? sent! : cookies.sign(id);
    const cookie = serializeSetCookie(cookieName, signed, { maxAgeSeconds: SESSION_MAX_AGE_SECONDS });
    reply.setCookies = [...(reply.setCookies ?? []), cookie];
    reply.headers = { ...reply.headers, [SERVER_BOOT_HEADER]: bootId };
    return reply;
  };
}

/**
 * Signing and verifying with a memory of the cookie values this process signed or verified, so each request of
 * a rollout does not recompute an HMAC (two per request were among the environment's top costs in the bench's
 * profile). A remembered value maps to exactly the id verification would return; the oldest are forgotten first.
 */
class VerifiedCookies {
  private readonly ids = new Map<string, string>();

  constructor(
    private readonly signer: SessionSigner,
    private readonly capacity = 10_000,
  ) {}

  sign(id: string): string {
    const value = this.signer.sign(id);
    this.remember(value, id);
    return value;
  }

  verify(value: string | undefined): string | undefined {
    if (!value) return undefined;
    const known = this.ids.get(value);
    if (known !== undefined) return known;
    const id = this.signer.verify(value);
    if (id !== undefined) this.remember(value, id);
    return id;
  }

  private remember(value: string, id: string): void {
    if (this.ids.size >= this.capacity) this.ids.delete(this.ids.keys().next().value!);
    this.ids.set(value, id);
  }
}

export function sessionIdOf(req: GymRequest): string {
  const id = req.locals.sessionId;
  if (typeof id !== 'string') throw new Error('session middleware is not installed');
  return id;
}
