import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * A per-peer cookie jar with the merge semantics of decision D7: a response that sets no cookie leaves the
 * jar as it was, a later value for the same name wins, and a deleting `Set-Cookie` (`Max-Age<=0` or an
 * `Expires` in the past) removes the cookie instead of re-sending it empty. Only names and values are kept:
 * every jar belongs to exactly one rollout and one peer, so Domain/Path scoping has nothing to choose between.
 */
export class CookieJar {
  private readonly cookies = new Map<string, string>();

  /** Merge the `Set-Cookie` header values of one response into the jar. */
  absorb(setCookies: readonly string[] | string | undefined, now = Date.now()): void {
    if (setCookies === undefined) return;
    for (const line of typeof setCookies === 'string' ? [setCookies] : setCookies) {
      const parsed = parseSetCookie(line, now);
      if (parsed === undefined) continue;
      if (parsed.deleted) this.cookies.delete(parsed.name);
      else this.cookies.set(parsed.name, parsed.value);
    }
  }

  /** The `Cookie` request header for this jar, or undefined when it is empty. */
  header(): string | undefined {
    if (this.cookies.size === 0) return undefined;
    let out = '';
    for (const [name, value] of this.cookies) out += (out ? '; ' : '') + `${name}=${value}`;
    return out;
  }

  get(name: string): string | undefined {
    return this.cookies.get(name);
  }

  get size(): number {
    return this.cookies.size;
  }

  toJSON(): Record<string, string> {
    return Object.fromEntries(this.cookies);
  }
}

interface ParsedSetCookie {
  name: string;
  value: string;
  deleted: boolean;
}

export function parseSetCookie(line: string, now = Date.now()): ParsedSetCookie | undefined {
  const parts = line.split(';');
  const pair = parts[0] ?? '';
  const eq = pair.indexOf('=');
  if (eq <= 0) return undefined;
  const name = pair.slice(0, eq).trim();
  if (!name) return undefined;
  const value = pair.slice(eq + 1).trim();
  let deleted = false;
  for (let i = 1; i < parts.length; i++) {
    const attr = parts[i] ?? '';
    const aeq = attr.indexOf('=');
    const key = (aeq < 0 ? attr : attr.slice(0, aeq)).trim().toLowerCase();
    const val = aeq < 0 ? '' : attr.slice(aeq + 1).trim();
    if (key === 'max-age') {
      const seconds = Number(val);
      if (Number.isFinite(seconds) && seconds <= 0) deleted = true;
    } else if (key === 'expires') {
      const at = Date.parse(val);
      if (Number.isFinite(at) && at <= now) deleted = true;
    }
  }
  return { name, value, deleted };
}

/** Parse a `Cookie` request header into name → value (first occurrence wins, as browsers send most specific first). */
export function parseCookieHeader(header: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (!header) return out;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq <= 0) continue;
    const name = part.slice(0, eq).trim();
    if (name && !(name in out)) out[name] = part.slice(eq + 1).trim();
  }
  return out;
}

export interface SetCookieOptions {
  maxAgeSeconds?: number;
  path?: string;
  httpOnly?: boolean;
  sameSite?: 'lax' | 'strict' | 'none';
}

export function serializeSetCookie(name: string, value: string, options: SetCookieOptions = {}): string {
  let out = `${name}=${value}; Path=${options.path ?? '/'}`;
  if (options.maxAgeSeconds !== undefined) out += `; Max-Age=${options.maxAgeSeconds}`;
  if (options.httpOnly ?? true) out += '; HttpOnly';
  out += `; SameSite=${options.sameSite ?? 'lax'}`;
  return out;
}

/**
 * Signs session ids so a client cannot forge another rollout's session: the cookie value is
 * `<id>.<base64url HMAC-SHA256(id)>`. The cookie is opaque to every client.
 */
export class SessionSigner {
  private readonly secret: Buffer;

  constructor(secret: string) {
    this.secret = Buffer.from(secret, 'utf8');
  }

  sign(id: string): string {
    return `${id}.${this.mac(id)}`;
  }

  /** The session id inside a signed value, or undefined when the value was not signed by this secret. */
  verify(value: string | undefined): string | undefined {
    if (!value) return undefined;
    const dot = value.lastIndexOf('.');
    if (dot <= 0) return undefined;
    const id = value.slice(0, dot);
    const given = Buffer.from(value.slice(dot + 1));
    const expected = Buffer.from(this.mac(id));
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    return id;
  }

  private mac(id: string): string {
    return createHmac('sha256', this.secret).update(id).digest('base64url');
  }
}
