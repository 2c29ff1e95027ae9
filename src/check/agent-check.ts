import { performance } from 'node:perf_hooks';
import { normalizeInput } from '../contract/index.js';
import { CookieJar } from '../http/cookies.js';
import type { Dispatcher } from 'undici';
import { redactSecrets, type ServiceAuth } from '../http/service-auth.js';
import { createDispatcher, HttpTransportError, request, type RequestOptions } from '../http/client.js';
import { CounterSimulation } from '../counter/simulation.js';
import { GET_COUNTER_VALUE_TOOL, INCREMENT_COUNTER_TOOL } from '../counter/tools.js';
import { inspectResponse, type Finding, type Level, type Reading } from './inspect.js';
import { argumentsProblem, type RowProbe } from './row-probes.js';

/**
 * `gym agent check`: drive a user's service through short conversations modelled on the counter tasks, running
 * the tools it asks for on a local counter simulation exactly as the remote agent would, and judge every answer
 * against the contract. The result is one verdict per named check, so a user learns what to fix before a big run.
 * With `rows` (an environment's dataset rows, `--rows FILE`), those rows are the probes instead (`row-probes.ts`).
 */

export interface AgentCheckOptions {
  /** Bound on each call. Default 60 s. */
  timeoutMs?: number;
  /** Calls per conversation before it counts as never finishing. Default 8. */
  maxSteps?: number;
  /** A call slower than this is a warning. Default 30 s. */
  slowCallMs?: number;
  /** The credential headers and CA the remote agent would use (`--api-key-env`, `--ca-file`). */
  auth?: ServiceAuth;
  /** Probe with these dataset rows instead of the counter conversations (adds the `row-probes` check). */
  rows?: RowProbe[];
}

export type CheckStatus = 'pass' | 'warn' | 'fail' | 'skip';

export interface CheckResult {
  name: string;
  status: CheckStatus;
  detail: string;
  /** What to change, on FAIL and WARN. */
  fix?: string;
}

export interface AgentCheckReport {
  url: string;
  endpoint: string;
  ok: boolean;
  checks: CheckResult[];
  summary: Record<CheckStatus, number>;
  latency: { calls: number; p50_ms: number | null; max_ms: number | null };
}

/** Every check, in report order, with the fix a failing user needs. */
export const CHECKS: readonly { name: string; fix: string }[] = [
  { name: 'reachable', fix: 'Start the service and check host and port (bind 0.0.0.0 to accept other machines); if it is just slow, raise +timeout_secs.' },
  { name: 'no-redirect', fix: 'Point the URL at the final address (the Location shown); Gym never follows redirects.' },
  { name: 'http-reply', fix: 'Answer POST /v1/responses with HTTP 200 and a JSON object; Gym records any other reply as a failed rollout.' },
  { name: 'responses-object', fix: 'Return every required field in its type (id, created_at, model, object, output, parallel_tool_calls, tool_choice, tools); an invalid object fails the rollout for good (never retried).' },
  { name: 'next-step', fix: 'End every response with unpaired function_call items (ask Gym to run tools) or an assistant message (finish).' },
  { name: 'declared-tools', fix: "Ask only for tools listed in the request's `tools`; run any other tool yourself and return it as a paired call + output record." },
  { name: 'arguments', fix: 'Set `arguments` to the JSON text of an object, e.g. JSON.stringify({count: 1}).' },
  { name: 'unique-call-ids', fix: 'Give every function_call in a response its own call_id; Gym runs only the last of duplicates.' },
  { name: 'pairing', fix: "When you ran a tool yourself, give its function_call_output the call's call_id; an unpaired call means 'Gym, run this'." },
  { name: 'usage', fix: 'Report all of input_tokens, output_tokens, total_tokens, input_tokens_details.cached_tokens and output_tokens_details.reasoning_tokens, or leave usage out.' },
  { name: 'conversation', fix: 'Return an assistant message once the tool results answer the task.' },
  { name: 'string-input', fix: 'Accept `input` as a plain string too (a user message); Gym itself always sends a list.' },
  { name: 'tool-subset', fix: "Plan with the tools each request declares, not a fixed list." },
  { name: 'cookies', fix: 'Keep per-rollout state only behind a cookie you set, and accept it back; a call without your cookie is a new rollout.' },
  { name: 'latency', fix: 'Keep each call well under remote_responses_timeout_secs (default 1800 s); slow calls hold a concurrency slot.' },
];

/** The check `--rows` adds: every row's first answer is usable by its environment. */
export const ROW_PROBES_CHECK = {
  name: 'row-probes',
  fix: "Answer each row's first call with an ask for tools the row declares, with arguments matching each tool's `parameters`, or with an assistant message.",
} as const;

/** The conversation checks that need the rows' environment to run tools, so `--rows` cannot judge them. */
const CONVERSATION_ONLY = ['conversation', 'tool-subset'];

interface Probe {
  /** The check that judges this conversation. */
  check: 'conversation' | 'string-input' | 'tool-subset';
  input: string | Record<string, unknown>[];
  tools: Record<string, unknown>[];
  initialCount: number;
  expectedCount: number;
}

const PROBES: Probe[] = [
  {
    check: 'conversation',
    input: [{ role: 'user', content: 'add 1 then add 2 then get the count' }],
    tools: [INCREMENT_COUNTER_TOOL, GET_COUNTER_VALUE_TOOL],
    initialCount: 3,
    expectedCount: 6,
  },
  {
    check: 'string-input',
    input: 'add 4 then add 5 then get the count',
    tools: [INCREMENT_COUNTER_TOOL, GET_COUNTER_VALUE_TOOL],
    initialCount: 6,
    expectedCount: 15,
  },
  {
    check: 'tool-subset',
    input: [{ role: 'user', content: 'get the count' }],
    tools: [GET_COUNTER_VALUE_TOOL],
    initialCount: 5,
    expectedCount: 5,
  },
];

type CallOutcome =
  | { ok: true; body: Record<string, unknown>; setCookies: string[] }
  | { ok: false; check: string; unreachable: boolean; refused?: boolean };

interface ProbeOutcome {
  probe: Probe;
  calls: number;
  /** How the conversation ended. */
  end: 'finished' | 'incomplete' | 'exhausted' | 'stopped' | 'refused';
  stoppedBy?: string;
  finalText?: string;
  trace: string[];
  counter: number;
  firstReading?: Reading;
  cookiesSet: string[];
  /** Set when a call carrying the service's cookies failed and the same call without them succeeded. */
  cookieRejectedAt?: string;
}

const SUMMARY_KEYS: CheckStatus[] = ['pass', 'warn', 'fail', 'skip'];

export async function runAgentCheck(baseUrl: string, options: AgentCheckOptions = {}): Promise<AgentCheckReport> {
  const run = new CheckRun(baseUrl, {
    timeoutMs: options.timeoutMs ?? 60_000,
    maxSteps: options.maxSteps ?? 8,
    slowCallMs: options.slowCallMs ?? 30_000,
    auth: options.auth ?? { headers: {}, secrets: [] },
    ...(options.rows ? { rows: options.rows } : {}),
  });
  return run.execute();
}

class CheckRun {
  private readonly endpoint: string;
  private readonly findings: Finding[] = [];
  private readonly latencies: number[] = [];
  private readonly passNotes = new Map<string, string>();
  private readonly skipped = new Map<string, string>();
  private responses = 0;
  private asks = 0;
  private answered = 0;
  /** What every call carries besides its body: the credential headers and, for a private CA, its own pool. */
  private readonly transport: Pick<RequestOptions, 'headers' | 'dispatcher'>;

  private readonly checks: readonly { name: string; fix: string }[];

  constructor(
    private readonly baseUrl: string,
    private readonly options: Required<Omit<AgentCheckOptions, 'rows'>> & Pick<AgentCheckOptions, 'rows'>,
  ) {
    this.endpoint = `${baseUrl}/v1/responses`;
    this.checks = options.rows ? [...CHECKS, ROW_PROBES_CHECK] : CHECKS;
    const { auth } = options;
    const pool: Dispatcher | undefined = auth.ca ? createDispatcher({ ca: auth.ca.pem }) : undefined;
    this.transport = { headers: auth.headers, ...(pool ? { dispatcher: pool } : {}) };
  }

  async execute(): Promise<AgentCheckReport> {
    if (this.options.rows) return this.executeRows(this.options.rows);
    const outcomes: ProbeOutcome[] = [];
    for (const probe of PROBES) {
      const outcome = await this.drive(probe);
      outcomes.push(outcome);
      if (outcome.stoppedBy === 'unreachable') return this.report(this.unreachableResults());
    }
    const probe = PROBES[0]!;
    const fresh = await this.firstAnswerWithoutCookies({ input: probe.input, tools: probe.tools }, probe.tools.map((tool) => String(tool.name)));
    for (const outcome of outcomes) this.judgeConversation(outcome);
    this.judgeCookies(outcomes[0]!, fresh);
    this.judgeLatency();
    return this.report(this.results());
  }

  /** Each row's first call, judged; then a string-input variant and a cookie-less repeat of the first row. */
  private async executeRows(rows: RowProbe[]): Promise<AgentCheckReport> {
    const ends: string[] = [];
    const problems: string[] = [];
    let first: { reading: Reading; cookiesSet: string[]; probe: RowProbe } | undefined;
    for (const probe of rows) {
      const reply = await this.call(probe.params, new CookieJar(), probe.label);
      if (!reply.ok) {
        if (reply.unreachable) return this.report(this.unreachableResults());
        problems.push(`${probe.label}: no usable answer (see ${reply.check})`);
        continue;
      }
      const reading = this.judgeAnswer(reply.body, probe, probe.label);
      first ??= { reading, cookiesSet: reply.setCookies, probe };
      if (!reading.valid) problems.push(`${probe.label}: invalid Responses object (see responses-object)`);
      else if (reading.asks.length > 0) ends.push('asked');
      else if (reading.hasAssistantMessage || reading.incomplete) ends.push('answered');
      else problems.push(`${probe.label}: neither asked for a tool nor answered (see next-step)`);
      for (const ask of reading.asks) {
        const problem = probe.declared.includes(ask.name) ? argumentsProblem(probe, ask.name, ask.arguments) : undefined;
        if (problem) {
          this.add('arguments', 'fail', `${probe.label}: ${ask.name} arguments do not match its parameters: ${problem}`);
          problems.push(`${probe.label}: ${ask.name} arguments do not match its parameters`);
        }
      }
    }
    await this.probeStringInput(rows);
    for (const name of CONVERSATION_ONLY) {
      this.skipped.set(name, "not run with --rows (the rows' tools live in their environment; gym eval run plays whole rollouts)");
    }
    if (first) {
      const fresh = await this.firstAnswerWithoutCookies(first.probe.params, first.probe.declared);
      this.judgeCookies({ firstReading: first.reading, cookiesSet: first.cookiesSet }, fresh);
      // Each row is one call, so no cookie was ever sent back: say only what was seen.
      if (this.passNotes.has('cookies')) {
        const names = [...new Set(first.cookiesSet.map((line) => cookiePair(line).split('=')[0]))];
        this.passNotes.set('cookies', `${names.length ? `sets ${names.join(', ')}; ` : 'sets no cookies; '}the first row again without cookies got the same first answer`);
      }
    } else {
      this.skipped.set('cookies', 'no successful answer to judge');
    }
    this.judgeLatency();
    const asked = ends.filter((end) => end === 'asked').length;
    if (problems.length > 0) {
      const more = problems.length > 1 ? ` (+${problems.length - 1} more)` : '';
      this.add(ROW_PROBES_CHECK.name, 'fail', `${problems.length} of ${rows.length} rows: ${problems[0]}${more}`);
    } else {
      this.passNotes.set(ROW_PROBES_CHECK.name, `${rows.length} rows: ${asked} asked for declared tools with matching arguments, ${rows.length - asked} answered`);
    }
    return this.report(this.results());
  }

  /** Inspect one answer against the row's declared tools, reporting every finding under `where`. */
  private judgeAnswer(body: Record<string, unknown>, probe: { declared: string[] }, where: string): Reading {
    const reading = inspectResponse(body, probe.declared);
    this.responses += 1;
    this.asks += reading.asks.length;
    for (const finding of reading.findings) this.add(finding.check, finding.level, `${where}: ${finding.detail}`);
    return reading;
  }

  /** The first row whose prompt is one user message, sent with that text as a plain-string `input`. */
  private async probeStringInput(rows: RowProbe[]): Promise<void> {
    const candidate = rows.find((probe) => singleUserText(probe.params.input) !== undefined);
    if (!candidate) {
      this.skipped.set('string-input', 'no row whose input is a single user message to send as a string');
      return;
    }
    const where = `${candidate.label} as a string input`;
    const reply = await this.call({ ...candidate.params, input: singleUserText(candidate.params.input) }, new CookieJar(), where, 'string-input');
    if (!reply.ok) return;
    const reading = this.judgeAnswer(reply.body, candidate, where);
    if (reading.valid) this.passNotes.set('string-input', `${candidate.label} with its prompt as a plain string got a valid answer`);
  }

  /** One conversation, the way the remote agent drives a rollout: call, run the asks, append, call again. */
  private async drive(probe: Probe): Promise<ProbeOutcome> {
    const jar = new CookieJar();
    const counter = new CounterSimulation(probe.initialCount);
    const declared = probe.tools.map((tool) => String(tool.name));
    const conversation = normalizeInput(probe.input);
    const outcome: ProbeOutcome = { probe, calls: 0, end: 'exhausted', trace: [], counter: counter.value, cookiesSet: [] };
    for (let step = 1; step <= this.options.maxSteps; step++) {
      const where = `${probe.check} call ${step}`;
      const body = { input: step === 1 ? probe.input : conversation, tools: probe.tools };
      // Gym always sends a list, so an answer refused only because the input was a string is a warning.
      const demoteTo = step === 1 && typeof probe.input === 'string' ? 'string-input' : undefined;
      const hadCookies = jar.size > 0;
      const reply = await this.call(body, jar, where, demoteTo);
      outcome.calls = step;
      if (!reply.ok) {
        if (hadCookies && !reply.unreachable && (await this.succeedsWithoutCookies(body))) outcome.cookieRejectedAt = where;
        if (reply.refused) return { ...outcome, end: 'refused' }; // already reported as a warning
        return { ...outcome, end: 'stopped', stoppedBy: reply.unreachable ? 'unreachable' : reply.check };
      }
      outcome.cookiesSet.push(...reply.setCookies);
      const reading = this.judgeAnswer(reply.body, { declared }, where);
      if (step === 1) outcome.firstReading = reading;
      if (!reading.valid) {
        const blocking = reading.findings.find((f) => f.level === 'fail')?.check ?? 'responses-object';
        return { ...outcome, end: 'stopped', stoppedBy: blocking };
      }
      if (reading.incomplete) return { ...outcome, end: 'incomplete' };
      if (reading.asks.length === 0) {
        if (!reading.hasAssistantMessage) return { ...outcome, end: 'stopped', stoppedBy: 'next-step' };
        return { ...outcome, end: 'finished', finalText: reading.finalText ?? '', counter: counter.value };
      }
      conversation.push(...(reply.body.output as unknown[]));
      for (const ask of reading.asks) {
        const result = counter.execute(ask.name, ask.arguments);
        outcome.trace.push(`${ask.name}(${typeof ask.arguments === 'string' ? ask.arguments : JSON.stringify(ask.arguments)})`);
        conversation.push({ type: 'function_call_output', call_id: ask.callId, output: result });
      }
      outcome.counter = counter.value;
    }
    return outcome;
  }

  /** A second conversation's first call, without cookies: a service must treat it as a new rollout. */
  private async firstAnswerWithoutCookies(body: Record<string, unknown>, declared: string[]): Promise<{ reading?: Reading; setCookies: string[] }> {
    const where = 'second conversation (no cookies) call 1';
    const reply = await this.call(body, new CookieJar(), where);
    if (!reply.ok) return { setCookies: [] };
    return { reading: this.judgeAnswer(reply.body, { declared }, where), setCookies: reply.setCookies };
  }

  private async call(body: unknown, jar: CookieJar, where: string, demoteTo?: string): Promise<CallOutcome> {
    const started = performance.now();
    let res;
    try {
      res = await request(this.endpoint, {
        method: 'POST',
        json: body,
        jar,
        timeoutMs: this.options.timeoutMs,
        maxBodyBytes: 64 * 1024 * 1024,
        ...this.transport,
      });
    } catch (err) {
      const unreachable = this.answered === 0 && err instanceof HttpTransportError && err.kind === 'connect';
      this.add('reachable', 'fail', `${where}: ${this.transportText(err)}`);
      return { ok: false, check: 'reachable', unreachable };
    }
    this.latencies.push(performance.now() - started);
    this.answered += 1;
    const fail = (check: string, detail: string): CallOutcome => {
      // Only a refusal (4xx) says "I do not take this input"; anything else is a failure like on any call.
      const refused = demoteTo !== undefined && res.status >= 400 && res.status < 500;
      this.add(refused ? demoteTo : check, refused ? 'warn' : 'fail', `${where}: ${detail}`);
      return { ok: false, check, unreachable: false, refused };
    };
    if (res.status >= 300 && res.status < 400) {
      const location = res.headers.location;
      return fail('no-redirect', `HTTP ${res.status} redirect${location ? ` to ${String(location)}` : ' (no Location header)'}`);
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
      return fail('http-reply', `expected a JSON object from /v1/responses, got ${Array.isArray(parsed) ? 'a list' : String(parsed === null ? 'null' : typeof parsed)}`);
    }
    return { ok: true, body: parsed as Record<string, unknown>, setCookies: res.setCookies };
  }

  private async succeedsWithoutCookies(body: unknown): Promise<boolean> {
    try {
      const res = await request(this.endpoint, { method: 'POST', json: body, timeoutMs: this.options.timeoutMs, ...this.transport });
      return res.status >= 200 && res.status < 300;
    } catch {
      return false;
    }
  }

  /** What a 401/403 says about the credential (named by flag and variable, never by value). */
  private credentialHint(status: number): string {
    if (status !== 401 && status !== 403) return '';
    const { apiKeyEnv } = this.options.auth;
    if (apiKeyEnv === undefined) return ' (the service wants a credential: pass --api-key-env NAME, as agent_api_key_env does)';
    return ` (the service refused the credential from --api-key-env ${apiKeyEnv})`;
  }

  private transportText(err: unknown): string {
    if (err instanceof HttpTransportError) {
      if (err.kind === 'timeout') return `no answer within ${this.options.timeoutMs / 1000}s (+timeout_secs)`;
      if (err.kind === 'tls') {
        const ca = this.options.auth.ca;
        return `TLS failed (${err.message}); ${ca ? `the CA in --ca-file ${ca.file} did not verify it` : 'for a private CA pass --ca-file PATH (agent_ca_file)'}`;
      }
      if (err.kind === 'connect') return `could not connect (${err.message}). Is your service running at ${this.baseUrl}?`;
      return err.message;
    }
    return err instanceof Error ? err.message : String(err);
  }

  private judgeConversation(outcome: ProbeOutcome): void {
    const { probe } = outcome;
    const steps = outcome.trace.length ? `${outcome.trace.join(', ')} → ` : '';
    switch (outcome.end) {
      case 'finished': {
        const answer = JSON.stringify(excerpt(outcome.finalText ?? '', 60));
        const summary = `${steps}final answer ${answer} after ${outcome.calls} call${outcome.calls === 1 ? '' : 's'}`;
        if (outcome.counter !== probe.expectedCount) {
          this.add(probe.check, 'warn', `${summary}, but the counter ended at ${outcome.counter} (task expects ${probe.expectedCount}: reward would be 0)`);
        } else if (!(outcome.finalText ?? '').includes(String(probe.expectedCount))) {
          this.add(probe.check, 'warn', `${summary}, which does not state the count ${probe.expectedCount}`);
        } else {
          this.passNotes.set(probe.check, summary);
        }
        return;
      }
      case 'incomplete':
        this.add(probe.check, 'warn', `call ${outcome.calls} set incomplete_details, so Gym stops and verifies the trajectory so far`);
        return;
      case 'exhausted':
        this.add(probe.check, 'fail', `no final assistant message after ${outcome.calls} calls (asked: ${outcome.trace.join(', ') || 'nothing'})`);
        return;
      case 'stopped':
        this.add(
          probe.check,
          'fail',
          `could not go on after call ${outcome.calls}: see ${outcome.stoppedBy}`,
          `Fix the ${outcome.stoppedBy} failure; the conversation could not continue past it.`,
        );
        return;
      case 'refused':
        return;
    }
  }

  private judgeCookies(main: Pick<ProbeOutcome, 'firstReading' | 'cookiesSet' | 'cookieRejectedAt'>, fresh: { reading?: Reading; setCookies: string[] }): void {
    if (!main.firstReading && !main.cookieRejectedAt) {
      this.skipped.set('cookies', 'no successful conversation to judge');
      return;
    }
    if (main.cookieRejectedAt) {
      this.add('cookies', 'fail', `${main.cookieRejectedAt} carried the cookies the service set and failed; the same call without them succeeded`);
      return;
    }
    const shared = fresh.setCookies.filter((line) => main.cookiesSet.some((mine) => cookiePair(mine) === cookiePair(line)));
    if (shared.length > 0) {
      this.add('cookies', 'warn', `a second conversation was given the same cookie as the first (${cookiePair(shared[0]!)}): rollouts would share state`);
    }
    const first = main.firstReading ? signature(main.firstReading) : undefined;
    const again = fresh.reading ? signature(fresh.reading) : undefined;
    if (first !== undefined && again !== undefined && first !== again) {
      this.add(
        'cookies',
        'warn',
        `a second conversation without cookies got a different first answer (${again}) than the first conversation ` +
          `(${first}): the service may keep rollout state outside its cookie (a non-deterministic brain can also cause this)`,
      );
    }
    const names = [...new Set(main.cookiesSet.map((line) => cookiePair(line).split('=')[0]))];
    this.passNotes.set(
      'cookies',
      names.length
        ? `sets ${names.join(', ')} and accepts it back; a conversation without cookies starts clean`
        : 'sets no cookies; a conversation without cookies starts clean',
    );
  }

  private judgeLatency(): void {
    const { p50, max } = percentiles(this.latencies);
    if (p50 === null || max === null) return;
    const text = `p50 ${formatMs(p50)}, max ${formatMs(max)} over ${this.latencies.length} calls`;
    if (max > this.options.slowCallMs) {
      this.add('latency', 'warn', `${text}: slowest call above ${this.options.slowCallMs / 1000}s`);
    } else {
      this.passNotes.set('latency', text);
    }
  }

  private add(check: string, level: Level, detail: string, fix?: string): void {
    // A service may echo what it received: no secret value reaches the report.
    const safe = redactSecrets(detail, this.options.auth.secrets);
    this.findings.push({ check, level, detail: safe, ...(fix ? { fix } : {}) });
  }

  private defaultPassNote(name: string): string {
    const calls = this.latencies.length;
    switch (name) {
      case 'reachable':
        return `${calls} calls answered within ${this.options.timeoutMs / 1000}s`;
      case 'no-redirect':
        return `no 3xx among ${calls} answers`;
      case 'http-reply':
        return 'every answer was HTTP 2xx with a JSON object';
      case 'responses-object':
        return `${this.responses} responses are valid Responses API objects`;
      case 'next-step':
        return 'every response asked for a tool or finished';
      case 'declared-tools':
        return `${this.asks} asks, all for declared tools`;
      case 'arguments':
        return 'every arguments field is the JSON text of an object';
      case 'unique-call-ids':
        return 'call_ids are unique within every response';
      case 'pairing':
        return 'no function_call_output without its call';
      case 'usage':
        return 'complete usage on every response';
      default:
        return 'ok';
    }
  }

  private results(): CheckResult[] {
    const inspectedOnly = new Set(['responses-object', 'next-step', 'declared-tools', 'arguments', 'unique-call-ids', 'pairing', 'usage']);
    return this.checks.map(({ name, fix }) => {
      const mine = this.findings.filter((finding) => finding.check === name);
      const fails = mine.filter((finding) => finding.level === 'fail');
      const warns = mine.filter((finding) => finding.level === 'warn');
      const chosen = fails.length ? fails : warns;
      if (chosen.length > 0) {
        const more = chosen.length > 1 ? ` (+${chosen.length - 1} more)` : '';
        return { name, status: fails.length ? 'fail' : 'warn', detail: `${chosen[0]!.detail}${more}`, fix: chosen[0]!.fix ?? fix };
      }
      if (inspectedOnly.has(name) && this.responses === 0) {
        return { name, status: 'skip', detail: 'no response to inspect' };
      }
      const skip = this.skipped.get(name);
      if (skip) return { name, status: 'skip', detail: skip };
      return { name, status: 'pass', detail: this.passNotes.get(name) ?? this.defaultPassNote(name) };
    });
  }

  private unreachableResults(): CheckResult[] {
    return this.checks.map(({ name, fix }) => {
      const finding = this.findings.find((f) => f.check === name);
      if (finding) return { name, status: 'fail', detail: finding.detail, fix };
      return { name, status: 'skip', detail: 'not run: the service is unreachable' };
    });
  }

  private report(checks: CheckResult[]): AgentCheckReport {
    const summary = Object.fromEntries(SUMMARY_KEYS.map((key) => [key, 0])) as Record<CheckStatus, number>;
    for (const check of checks) summary[check.status] += 1;
    const { p50, max } = percentiles(this.latencies);
    return {
      url: this.baseUrl,
      endpoint: this.endpoint,
      ok: summary.fail === 0,
      checks,
      summary,
      latency: { calls: this.latencies.length, p50_ms: round(p50), max_ms: round(max) },
    };
  }
}

/** The text of an input that is exactly one user message (string content or one text part), else undefined. */
function singleUserText(input: unknown): string | undefined {
  if (typeof input === 'string') return input;
  if (!Array.isArray(input) || input.length !== 1) return undefined;
  const item = input[0] as Record<string, unknown> | null;
  if (item === null || typeof item !== 'object' || item.role !== 'user') return undefined;
  if (typeof item.content === 'string') return item.content;
  if (Array.isArray(item.content) && item.content.length === 1) {
    const part = item.content[0] as Record<string, unknown> | null;
    if (part && part.type === 'input_text' && typeof part.text === 'string') return part.text;
  }
  return undefined;
}

/** What a first answer decided, comparable across conversations: the asks with their arguments, or "final". */
function signature(reading: Reading): string {
  if (reading.asks.length === 0) return reading.hasAssistantMessage ? 'a final answer' : 'nothing';
  return reading.asks.map((ask) => `${ask.name}(${typeof ask.arguments === 'string' ? ask.arguments : JSON.stringify(ask.arguments)})`).join(', ');
}

function cookiePair(setCookie: string): string {
  return (setCookie.split(';', 1)[0] ?? '').trim();
}

function percentiles(values: readonly number[]): { p50: number | null; max: number | null } {
  if (values.length === 0) return { p50: null, max: null };
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  const p50 = sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
  return { p50, max: sorted[sorted.length - 1]! };
}

function round(value: number | null): number | null {
  return value === null ? null : Math.round(value * 10) / 10;
}

function formatMs(ms: number): string {
  return ms >= 1000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms)} ms`;
}

function excerpt(text: string, max = 200): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
}
