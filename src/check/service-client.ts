/**
 * How `gym agent check` calls the service: through the remote agent's own `/v1/responses` call (`ResponsesEndpoint`:
 * the same credential headers, CA and body bound), timing every answered call. A reply Gym could not use (no
 * connection, a redirect, a non-2xx status, a body that is not a JSON object) is recorded under the check that names
 * it, saying what to change.
 */
import { performance } from 'node:perf_hooks';
import { HttpTransportError } from '../http/client.js';
import type { CookieJar } from '../http/cookies.js';
import type { ServiceAuth } from '../http/service-auth.js';
import { ResponsesEndpoint } from '../rollout/responses-endpoint.js';
import { DEFAULTS } from '../rollout/settings.js';
import { excerpt } from './excerpt.js';
import type { CheckLedger } from './ledger.js';

type CallOutcome =
  | { ok: true; body: Record<string, unknown>; setCookies: string[] }
  | { ok: false; check: string; unreachable: boolean; refused?: boolean };

export class CheckClient {
  private readonly service: ResponsesEndpoint;
  private readonly durations: number[] = [];
  private answered = 0;

  constructor(
    readonly baseUrl: string,
    private readonly settings: { timeoutMs: number; auth: ServiceAuth },
    private readonly ledger: CheckLedger,
  ) {
    // The body bound is the remote agent's default `max_response_bytes`.
    this.service = new ResponsesEndpoint({
      baseUrl,
      auth: settings.auth,
      timeoutMs: settings.timeoutMs,
      maxBodyBytes: DEFAULTS.maxResponseBytes,
    });
  }

  get endpoint(): string {
    return this.service.url;
  }

  /** Milliseconds each answered call took, in call order. */
  get latencies(): readonly number[] {
    return this.durations;
  }

  /**
   * One call, reporting under `where`. With `demoteTo`, a 4xx refusal is a warning under that check instead of a
   * failure (the caller sent something Gym itself never sends).
   */
  async call(body: unknown, jar: CookieJar, where: string, demoteTo?: string): Promise<CallOutcome> {
    const started = performance.now();
    let res;
    try {
      res = await this.service.post(JSON.stringify(body), { jar });
    } catch (err) {
      // Unreachable only if nothing ever answered: a later connection error is one failed call among others.
      const unreachable = this.answered === 0 && err instanceof HttpTransportError && err.kind === 'connect';
      this.ledger.add('reachable', 'fail', `${where}: ${this.transportText(err)}`);
      return { ok: false, check: 'reachable', unreachable };
    }
    this.durations.push(performance.now() - started);
    this.answered += 1;
    const fail = (check: string, detail: string): CallOutcome => {
      // Only a refusal (4xx) says "I do not take this input"; anything else is a failure like on any call.
      const refused = demoteTo !== undefined && res.status >= 400 && res.status < 500;
      this.ledger.add(refused ? demoteTo : check, refused ? 'warn' : 'fail', `${where}: ${detail}`);
      return { ok: false, check, unreachable: false, refused };
    };
    if (res.status >= 300 && res.status < 400) {
      const location = res.headers.location;
      return fail(
        'no-redirect',
        `HTTP ${res.status} redirect${location ? ` to ${String(location)}` : ' (no Location header)'}`,
      );
    }
    if (res.status < 200 || res.status >= 300) {
      return fail('http-reply', `HTTP ${res.status}${this.credentialHint(res.status)}: ${excerpt(res.text())}`);
    }
    let parsed: unknown;
    try {
      parsed = res.json();
    } catch {
      return fail('http-reply', `HTTP ${res.status} but the body is not valid JSON: ${excerpt(res.text())}`);
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      return fail(
        'http-reply',
        `expected a JSON object from /v1/responses, got ${Array.isArray(parsed) ? 'a list' : String(parsed === null ? 'null' : typeof parsed)}`,
      );
    }
    return { ok: true, body: parsed as Record<string, unknown>, setCookies: res.setCookies };
  }

  /** The same call again without cookies, untimed and unreported: does the service take it that way? */
  async succeedsWithoutCookies(body: unknown): Promise<boolean> {
    try {
      const res = await this.service.post(JSON.stringify(body), { anySize: true });
      return res.status >= 200 && res.status < 300;
    } catch {
      return false;
    }
  }

  /** What a 401/403 says about the credential (named by flag and variable, never by value). */
  private credentialHint(status: number): string {
    if (status !== 401 && status !== 403) return '';
    const { apiKeyEnv } = this.settings.auth;
    if (apiKeyEnv === undefined)
      return ' (the service wants a credential: pass --api-key-env NAME, as agent_api_key_env does)';
    return ` (the service refused the credential from --api-key-env ${apiKeyEnv})`;
  }

  private transportText(err: unknown): string {
    if (err instanceof HttpTransportError) {
      if (err.kind === 'timeout') return `no answer within ${this.settings.timeoutMs / 1000}s (+timeout_secs)`;
      if (err.kind === 'tls') {
        const ca = this.settings.auth.ca;
        return `TLS failed (${err.message}); ${ca ? `the CA in --ca-file ${ca.file} did not verify it` : 'for a private CA pass --ca-file PATH (agent_ca_file)'}`;
      }
      if (err.kind === 'connect')
        return `could not connect (${err.message}). Is your service running at ${this.baseUrl}?`;
      return err.message;
    }
    return err instanceof Error ? err.message : String(err);
  }
}
