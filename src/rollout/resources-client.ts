import { isUtf8 } from 'node:buffer';
import { JsonTooDeep, MAX_ENVELOPED_JSON_DEPTH, parseBoundedJson } from '../bounded-json/index.js';
import { finiteNumberMember } from '../bounded-json/member.js';
import { RetryableRolloutError } from '../errors.js';
import { HttpTransportError, type HttpResponse } from '../http/client.js';
import { transportFor, type Transport } from '../http/in-process.js';
import { CookieJar } from '../http/cookies.js';
import { SERVER_BOOT_HEADER } from '../contract/gym-wire.js';
import { RESERVED_ROUTES } from '../server/resources-server.js';
import type { RunBudget } from './budget.js';

/**
 * The rollout's side of the resources server: seed a session, run Gym-hosted tools on it (a call Gym refuses, D5 and
 * D6, is answered here without reaching the server), verify it. Every call carries the rollout's environment cookie
 * jar (never the service's) and the rollout's budget; connection failures are retried a bounded number of times by
 * `callInternal` and then fail the rollout with a text naming the resources server and its URL (decision D12),
 * instead of waiting out the run timeout.
 */
/** Tool outputs and verify bodies are held whole (and echoed to the service): bounded like a service answer (D14). */
const RESOURCES_MAX_BODY_BYTES = 64 * 1024 * 1024;

/**
 * A rollout's session with the resources server: its cookies, and the boot id (`SERVER_BOOT_HEADER`) of the server
 * that answered `/seed_session`. A tool call or `/verify` answered under another boot id reached a restarted server
 * whose in-memory session is gone (D20): the rollout fails as retryable rather than being scored on an empty session.
 * A server that sends no boot header (NeMo Gym's Python servers) is not checked: there is nothing to compare.
 */
export class ResourcesJar extends CookieJar {
  seededOnBoot: string | undefined;
}

export class ResourcesClient {
  /**
   * How calls reach the server: over HTTP, or in-process to a co-located one (D23) — the same request and reply
   * either way, so everything below (and any header a caller adds) is the same on both paths.
   */
  private readonly transport: Transport;

  constructor(
    readonly name: string,
    readonly url: string,
    transport?: Transport,
  ) {
    this.transport = transport ?? transportFor(url);
  }

  async seed(row: Record<string, unknown>, jar: ResourcesJar, budget: RunBudget): Promise<void> {
    const res = await this.call('/seed_session', JSON.stringify(row), jar, budget);
    if (!isSuccess(res)) throw statusError(res);
    jar.seededOnBoot = bootOf(res);
  }

  /**
   * Run one tool the service asked for. A call Gym refuses (D5, D6) is answered here, shaped as the reference shapes it,
   * without contacting the server; otherwise, whatever the status, the body text is the tool's result (an unknown
   * tool's 404 included).
   */
  async callTool(name: string, argumentsJson: string, jar: ResourcesJar, budget: RunBudget): Promise<string> {
    const refusal = toolNameRefusal(name);
    if (refusal) return errorOutput(refusal);
    const args = checkArguments(argumentsJson);
    if (!args.ok) return errorOutput(`Invalid tool call arguments: ${args.reason}`);
    const res = await this.call(`/${name}`, argumentsJson, jar, budget);
    this.checkSameBoot(res, jar);
    return res.text();
  }

  /**
   * `/verify`, checked: a JSON object (nesting bounded) with a finite numeric `reward`. The answer is kept as the bytes
   * it arrived in, not as the parsed value nor as text: it becomes the `/run` reply as is (C4), so the agent neither
   * holds the parsed trajectory nor encodes it again; the parse only checks it and is dropped. `body` is the encoded
   * `{ ...row, response }` (`verifyBody`).
   */
  async verify(body: Buffer, jar: ResourcesJar, budget: RunBudget): Promise<VerifiedRow> {
    const res = await this.call('/verify', body, jar, budget);
    this.checkSameBoot(res, jar);
    if (!isSuccess(res)) throw statusError(res);
    const reward = checkedReward(res);
    if (budget.trace) budget.trace.reward = reward;
    // Bytes that are not UTF-8 were always sent on as their decoding (U+FFFD for each bad sequence): they still are.
    return new VerifiedRow(isUtf8(res.body) ? res.body : Buffer.from(res.text(), 'utf8'));
  }

  /** Forward an `/aggregate_metrics` body unchanged. */
  async aggregateMetrics(bodyText: string | Buffer, timeoutMs: number): Promise<HttpResponse> {
    try {
      return await this.transport(`${this.url}/aggregate_metrics`, { jsonText: bodyText, timeoutMs });
    } catch (err) {
      throw this.transportFailure(err, '/aggregate_metrics');
    }
  }

  private async call(
    path: string,
    jsonText: string | Buffer,
    jar: CookieJar,
    budget: RunBudget,
  ): Promise<HttpResponse> {
    const hop = budget.trace?.hop(spanName(path), { 'gym.environment': this.name });
    try {
      const res = await this.transport(`${this.url}${path}`, {
        jsonText,
        jar,
        maxBodyBytes: RESOURCES_MAX_BODY_BYTES,
        // The run deadline bounds every hop; the budget's signal cuts it at that moment.
        timeoutMs: Math.max(1, budget.remainingMs()),
        signal: budget.signal,
        ...(hop ? { headers: hop.headers } : {}),
      });
      hop?.span.setAttributes({ 'http.response.status_code': res.status });
      hop?.span.end(isSuccess(res) ? undefined : `HTTP ${res.status}`);
      return res;
    } catch (err) {
      hop?.span.end(err instanceof HttpTransportError ? err.kind : 'error');
      throw this.transportFailure(err, path);
    }
  }

  private checkSameBoot(res: HttpResponse, jar: ResourcesJar): void {
    if (jar.seededOnBoot === undefined || bootOf(res) === jar.seededOnBoot) return;
    throw new RetryableRolloutError(
      'RESOURCES_SERVER_RESTARTED',
      `the resources server '${this.name}' restarted during this rollout (its session state was lost); ` +
        'the rollout will be retried on resume',
    );
  }

  private transportFailure(err: unknown, path: string): unknown {
    if (!(err instanceof HttpTransportError) || err.kind === 'aborted') return err;
    const server = `the resources server '${this.name}' at ${this.url}`;
    const message =
      err.kind === 'connect'
        ? `could not reach ${server} (${path}: ${err.message}). Is it running?`
        : `${path} on ${server} failed: ${err.message}`;
    return new RetryableRolloutError('RESOURCES_SERVER_UNREACHABLE', message, { cause: err });
  }
}

const TOOL_NAME = /^[A-Za-z0-9_.-]{1,128}$/;

/** D5: a tool name is a plain identifier and never one of the environment's own routes. */
export function toolNameRefusal(name: unknown): string | undefined {
  const shown = JSON.stringify(String(name).slice(0, 128));
  if (typeof name !== 'string' || !TOOL_NAME.test(name) || name === '.' || name === '..') {
    return `Tool ${shown} is not available: tool names are plain identifiers ([A-Za-z0-9_.-], 1-128 characters).`;
  }
  if (RESERVED_ROUTES.has(name)) {
    return `Tool ${shown} is not available: '${name}' is a route the environment reserves, not a tool.`;
  }
  return undefined;
}

/** D6: arguments must be a JSON object; anything else is answered locally without contacting the environment. */
export function checkArguments(text: string): { ok: true } | { ok: false; reason: string } {
  if (text.trim() === '') return { ok: false, reason: 'arguments are empty, expected a JSON object' };
  let value: unknown;
  try {
    value = parseBoundedJson(text);
  } catch (err) {
    if (err instanceof JsonTooDeep) return { ok: false, reason: err.message };
    return { ok: false, reason: `${(err as Error).name}: ${(err as Error).message}` };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    const kind = value === null ? 'null' : Array.isArray(value) ? 'an array' : `a ${typeof value}`;
    return { ok: false, reason: `expected a JSON object, got ${kind}` };
  }
  return { ok: true };
}

/** The output text of a call Gym refused, shaped as the reference shapes it (`json.dumps({"error": …})`). */
function errorOutput(message: string): string {
  return `{"error": ${JSON.stringify(message)}}`;
}

/**
 * The `reward` of a `/verify` answer, or why the answer is invalid. The answer goes on as its bytes, so the reward is
 * read from them without building the value (`finiteNumberMember`: exact when it answers); only an answer it is not
 * sure of is parsed, for the verdict and its text, and the parse is dropped on return.
 */
function checkedReward(res: HttpResponse): number {
  const read = finiteNumberMember(res.body, 'reward', MAX_ENVELOPED_JSON_DEPTH);
  if (read !== undefined) return read;
  let result: unknown;
  try {
    result = res.json();
  } catch (err) {
    throw invalidVerifyBody(`not JSON (${(err as Error).message})`);
  }
  if (result === null || typeof result !== 'object' || Array.isArray(result)) {
    throw invalidVerifyBody('not a JSON object');
  }
  const reward = (result as Record<string, unknown>).reward;
  if (typeof reward !== 'number' || !Number.isFinite(reward)) {
    throw invalidVerifyBody(reward === undefined ? '`reward` is missing' : '`reward` is not a number');
  }
  return reward;
}

/**
 * A `/verify` answer that passed the checks, as the UTF-8 bytes of a JSON object, and the fields the agent adds to
 * it. The bytes are never decoded again nor copied: `toParts` splices the added fields in before the closing brace.
 */
export class VerifiedRow {
  constructor(
    private readonly bytes: Buffer,
    private readonly added = '',
  ) {}

  /** The same object with one more field last (a field of that name already there is overridden, as a spread would). */
  withField(name: string, value: unknown): VerifiedRow {
    return new VerifiedRow(this.bytes, `${this.added},${JSON.stringify(name)}:${JSON.stringify(value)}`);
  }

  /**
   * The row parsed whole (token-id capture rewrites its output). The bytes were checked on arrival; the parse is
   * still the bounded one, at the depth a row's envelope allows.
   */
  toObject(): Record<string, unknown> {
    const parts = this.toParts();
    const bytes = Buffer.isBuffer(parts) ? parts : Buffer.concat(parts);
    return parseBoundedJson(bytes.toString('utf8'), MAX_ENVELOPED_JSON_DEPTH) as Record<string, unknown>;
  }

  static fromObject(row: Record<string, unknown>): VerifiedRow {
    return new VerifiedRow(Buffer.from(JSON.stringify(row), 'utf8'));
  }

  /** The row's bytes, the answer with the added fields, as parts to be sent one after the other. */
  toParts(): Buffer | readonly Buffer[] {
    if (this.added === '') return this.bytes;
    // `}` is one byte in UTF-8 and never part of a longer sequence: the last one closes the object.
    const end = this.bytes.lastIndexOf(CLOSE_BRACE);
    return [this.bytes.subarray(0, end), Buffer.from(this.added, 'utf8'), this.bytes.subarray(end)];
  }
}

const CLOSE_BRACE = 0x7d;

/** `seed`, `verify`, or `tool NAME` (D25). */
function spanName(path: string): string {
  if (path === '/seed_session') return 'seed';
  if (path === '/verify') return 'verify';
  return `tool ${path.slice(1)}`;
}

function bootOf(res: HttpResponse): string | undefined {
  const value = res.headers[SERVER_BOOT_HEADER];
  return typeof value === 'string' ? value : undefined;
}

function isSuccess(res: HttpResponse): boolean {
  return res.status >= 200 && res.status < 300;
}

function statusError(res: HttpResponse): RetryableRolloutError {
  return new RetryableRolloutError(
    'RESOURCES_SERVER_HTTP_STATUS',
    `HTTP ${res.status}: ${res.body.subarray(0, 500).toString('utf8')}`,
  );
}

function invalidVerifyBody(reason: string): RetryableRolloutError {
  return new RetryableRolloutError(
    'RESOURCES_SERVER_INVALID_VERIFY',
    `/verify returned an invalid body (expected a JSON object with a numeric reward): ${reason}`,
  );
}
