/**
 * One model call through the model server: the agent's request forwarded to the upstream with the configured model,
 * the answer relayed (whole, or as server-sent events chunk by chunk as they arrive), and the call's evaluation
 * record written when it ends, however it ends. A hostile upstream answer (too large, nested too deep, not JSON,
 * usage of the wrong types) fails that call alone, with its error category and a bounded message.
 */
import { isUtf8 } from 'node:buffer';
import { performance } from 'node:perf_hooks';
import { JsonTooDeep, parseBoundedJson } from '../bounded-json/index.js';
import { isRecord } from '../contract/records.js';
import { HttpTransportError, type HttpResponse } from '../http/client.js';
import { HttpError, type GymReply, type GymRequest } from '../http/server.js';
import type { StreamingResponse } from '../http/stream-client.js';
import { modelMetrics } from '../prometheus/metrics.js';
import type { FifoSemaphore } from '../server/agent-server.js';
import {
  BadUsage,
  newModelCallId,
  tokenStats,
  UNKNOWN_TOKENS,
  type Dialect,
  type ErrorCategory,
  type ModelCallRecord,
  type TokenStats,
} from './records.js';
import type { OpenRollout } from './rollouts.js';
import { chatAnswerToResponse, ResponsesRequestRefused, responsesToChatRequest } from './responses-chat.js';
import { ChatToResponsesEvents } from './responses-stream.js';
import { SseWatcher } from './sse.js';
import {
  answerTokens,
  ChatStreamTokens,
  chatOutputItems,
  TokenIdCaptureUnsupported,
  TokenIdsMalformed,
  type AnswerTokens,
  type CapturedTokens,
} from './token-ids.js';
import type { Upstream } from './upstream.js';

export interface CallContext {
  /** The model server's instance name (the records' `model_ref`). */
  name: string;
  upstream: Upstream;
  maxResponseBytes: number;
  log: (line: string) => void;
  /** `drop_input_reasoning_items`: strip `reasoning` input items before a Responses call (the reference's knob). */
  dropInputReasoningItems?: boolean;
  /** `max_concurrent_requests`: upstream calls in flight at once (a stream holds its slot until it ends). */
  limiter?: FifoSemaphore;
  /**
   * `vllm_model` unless `is_responses_native`: a `/v1/responses` call goes upstream as a chat completion and its
   * answer comes back as a Responses object (./responses-chat.ts), as the reference's vllm_model does.
   */
  translateResponses?: boolean;
  /**
   * vllm_model's `return_token_id_information`, as the reference gives it: every whole chat call asks the upstream for
   * token ids, and the answer carries them on `choices[0].message` (a translated Responses answer: on its last output
   * item) as `prompt_token_ids`, `generation_token_ids`, `generation_log_probs`; the transport fields are dropped.
   */
  tokensOnAnswer?: boolean;
}

const EXCERPT_CHARS = 500;

/** A failure the model server answers itself, in OpenAI's error shape. */
class CallFailure extends Error {
  constructor(
    readonly category: ErrorCategory,
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** The running record of one call: filled in as the call goes, finished (and counted) exactly once. */
class CallRecorder {
  readonly startedMs = performance.now();
  readonly record: ModelCallRecord;
  private done = false;

  constructor(
    private readonly ctx: CallContext,
    private readonly rollout: OpenRollout | undefined,
    dialect: Dialect,
  ) {
    this.record = {
      model_call_id: newModelCallId(),
      response_id: null,
      call_index: rollout ? rollout.takeIndex() : 0,
      model_ref: { type: 'responses_api_models', name: ctx.name },
      model: ctx.upstream.model,
      dialect,
      status_code: null,
      response_status: null,
      finish_reason: null,
      started_at: Date.now() / 1000,
      completed_at: null,
      ...UNKNOWN_TOKENS,
      error_category: null,
      latency_total_ms: null,
      latency_ttft_ms: null,
    };
    rollout?.callStarted();
  }

  tokens(stats: TokenStats): void {
    Object.assign(this.record, stats);
  }

  finish(status: number | null, category: ErrorCategory | null, firstContentAt: number | null = null): void {
    if (this.done) return;
    this.done = true;
    const now = performance.now();
    const record = this.record;
    record.status_code = status;
    record.error_category = category;
    record.completed_at = Date.now() / 1000;
    record.latency_total_ms = round(now - this.startedMs);
    if (firstContentAt !== null) record.latency_ttft_ms = round(firstContentAt - this.startedMs);
    this.rollout?.callFinished(record);
    count(record, (now - this.startedMs) / 1000);
  }
}

function round(ms: number): number {
  return Math.round(ms * 100) / 100;
}

function count(record: ModelCallRecord, seconds: number): void {
  modelMetrics.calls.labels(record.dialect, record.error_category ?? 'ok').inc();
  modelMetrics.seconds.labels(record.dialect).observe(seconds);
  if (record.latency_ttft_ms !== null)
    modelMetrics.firstTokenSeconds.labels(record.dialect).observe(record.latency_ttft_ms / 1000);
  const kinds: [string, number | null][] = [
    ['in', record.tokens_in],
    ['out', record.tokens_out],
    ['reasoning', record.tokens_reasoning],
    ['cached', record.cached_tokens],
  ];
  for (const [kind, value] of kinds) if (value !== null && value > 0) modelMetrics.tokens.labels(kind).inc(value);
}

/** Answer one model call (`/v1/responses` or `/v1/chat/completions`), recording it against `rollout` when given. */
export async function modelCall(
  req: GymRequest,
  dialect: Dialect,
  rollout: OpenRollout | undefined,
  ctx: CallContext,
  captureTokens = false,
): Promise<GymReply> {
  const body = req.json(); // malformed JSON answers 400
  if (!isRecord(body)) {
    throw new HttpError(422, `the request body must be a JSON object (the ${dialect} create-params)`);
  }
  // A translated call is a chat call upstream (and for capture); the record keeps the agent's dialect. A body that
  // cannot be translated is the agent's mistake, refused before it is a model call.
  const translated = dialect === 'responses' && ctx.translateResponses === true ? body : undefined;
  const wire: Dialect = translated ? 'chat' : dialect;
  const wireBody = translated ? translateRequest(translated) : body;
  const recorder = new CallRecorder(ctx, rollout, dialect);
  // Not on the training-token-capture path: there the ids go on the rollout's record, and the answer is relayed as it
  // came (its bytes untouched, which also keeps that path as cheap as before).
  const bundle = ctx.tokensOnAnswer === true && !captureTokens && wire === 'chat' && body.stream !== true;
  let release: (() => void) | undefined;
  try {
    const capture =
      captureTokens || bundle
        ? startCapture(recorder, ctx, wireBody, wire, req.signal, { record: captureTokens, bundle })
        : undefined;
    const call = { dialect: wire, body: upstreamBody(capture?.sent ?? wireBody, wire, ctx), signal: req.signal };
    release = await ctx.limiter?.acquire(req.signal);
    if (body.stream !== true) {
      return await bufferedAnswer(await ctx.upstream.send(call), recorder, ctx, capture, translated);
    }
    const reply = await streamingCall(ctx.upstream.stream(call), recorder, ctx, release, capture, translated);
    if (reply.stream) release = undefined; // the relay releases the slot when the stream ends
    return reply;
  } catch (err) {
    const failure = err instanceof CallFailure ? err : transportFailure(err, ctx);
    recorder.finish(failure.status, failure.category);
    ctx.log(`model call failed (${failure.category}): ${failure.message}`);
    return failureReply(failure);
  } finally {
    release?.();
  }
}

function translateRequest(body: Record<string, unknown>): Record<string, unknown> {
  try {
    return responsesToChatRequest(body);
  } catch (err) {
    if (!(err instanceof ResponsesRequestRefused)) throw err;
    throw new HttpError(400, `this /v1/responses call cannot be sent to vLLM as a chat completion: ${err.message}`);
  }
}

/** The body the upstream gets: `extra_body` under the agent's keys, the configured model over them. */
function upstreamBody(body: Record<string, unknown>, dialect: Dialect, ctx: CallContext): Buffer {
  const sent =
    ctx.dropInputReasoningItems && dialect === 'responses' && Array.isArray(body.input)
      ? { ...body, input: body.input.filter((item) => !(isRecord(item) && item.type === 'reasoning')) }
      : body;
  return Buffer.from(JSON.stringify({ ...ctx.upstream.extraBody, ...sent, model: ctx.upstream.model }));
}

/** A captured call in progress: the body sent for it, and how its ids are read back. */
interface TokenCapture {
  sent: Record<string, unknown>;
  /** The ids go on the answer too (`tokensOnAnswer`). */
  bundle: boolean;
  read(tokens: AnswerTokens, outputItems: Record<string, unknown>[]): Promise<CapturedTokens>;
}

/**
 * Set a captured call up, or fail it (`token_id_capture_unsupported`) when its upstream or shape gives no ids. `record`:
 * the ids go on the rollout's record (the training-token-capture path); `bundle`: on the answer.
 */
function startCapture(
  recorder: CallRecorder,
  ctx: CallContext,
  body: Record<string, unknown>,
  dialect: Dialect,
  signal: AbortSignal,
  { record, bundle }: { record: boolean; bundle: boolean },
): TokenCapture {
  if (record) recorder.record.token_id_capture = true;
  const source = ctx.upstream.tokenIds;
  if (!source) {
    throw new CallFailure(
      'token_id_capture_unsupported',
      400,
      `token_id_capture is on for this rollout, but the model server '${ctx.name}' cannot get token ids from its ` +
        'upstream: use vllm_model with return_token_id_information: true (vLLM), or openai_model in front of ' +
        'llama-server; or turn token_id_capture off on the remote agent',
    );
  }
  const sent = guardCapture(() => source.askFor(body, dialect));
  const withModel = { ...sent, model: ctx.upstream.model };
  return {
    sent,
    bundle,
    read: async (tokens, outputItems) => {
      const captured = await guardCaptureAsync(() => source.read(tokens, withModel, signal));
      if (record) Object.assign(recorder.record, captured, { output_items: outputItems });
      return captured;
    },
  };
}

function captureFailure(err: unknown): never {
  if (err instanceof TokenIdCaptureUnsupported) throw new CallFailure('token_id_capture_unsupported', 400, err.message);
  if (err instanceof TokenIdsMalformed) {
    throw new CallFailure('upstream_bad_response', 502, `the upstream's token ids are unusable: ${err.message}`);
  }
  throw err;
}

function guardCapture<T>(work: () => T): T {
  try {
    return work();
  } catch (err) {
    return captureFailure(err);
  }
}

async function guardCaptureAsync<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    return captureFailure(err);
  }
}

function failureReply(failure: CallFailure): GymReply {
  return {
    status: failure.status,
    body: { error: { message: failure.message, type: failure.category, code: failure.category } },
  };
}

function transportFailure(err: unknown, ctx: CallContext): CallFailure {
  if (!(err instanceof HttpTransportError)) {
    return new CallFailure('upstream_bad_response', 502, ctx.upstream.redact(String(err)).slice(0, EXCERPT_CHARS));
  }
  const message = ctx.upstream.redact(`the upstream model failed: ${err.message}`).slice(0, EXCERPT_CHARS);
  switch (err.kind) {
    case 'timeout':
      return new CallFailure('upstream_timeout', 504, `${message} (request_timeout_secs)`);
    case 'too_large':
      return new CallFailure(
        'too_large',
        502,
        `the upstream's answer is larger than ${ctx.maxResponseBytes} bytes (max_response_bytes)`,
      );
    case 'aborted':
      return new CallFailure('client_gone', 499, 'the agent went away before the answer was complete');
    case 'body_read':
      return new CallFailure('upstream_bad_response', 502, message);
    default:
      return new CallFailure('upstream_unreachable', 502, message);
  }
}

/**
 * A whole answer: relayed as it came when it is the JSON object it should be, else the call fails. A captured call
 * also fails when its token ids cannot be read: the agent must not act on an answer the row cannot train on.
 */
async function bufferedAnswer(
  res: HttpResponse,
  recorder: CallRecorder,
  ctx: CallContext,
  capture: TokenCapture | undefined,
  translated?: Record<string, unknown>,
): Promise<GymReply> {
  if (res.status >= 400) {
    const text = ctx.upstream.redact(res.body.subarray(0, 64 * 1024).toString('utf8'));
    recorder.finish(res.status, 'upstream_http_error');
    ctx.log(`upstream answered HTTP ${res.status}: ${text.slice(0, EXCERPT_CHARS)}`);
    return { status: res.status, raw: text, contentType: contentTypeOf(res.headers['content-type']) };
  }
  const answer = parseAnswer(res.body);
  const record = recorder.record;
  record.response_id = typeof answer.id === 'string' ? answer.id : null;
  if (typeof answer.model === 'string') record.model = answer.model;
  record.response_status = typeof answer.status === 'string' ? answer.status : null;
  record.finish_reason = finishReasonOf(answer);
  recorder.tokens(usageOf(answer.usage));
  const captured = capture
    ? await capture.read(
        guardCapture(() => answerTokens(answer)),
        chatOutputItems(answer),
      )
    : undefined;
  const bundle = capture?.bundle === true ? captured : undefined;
  if (bundle) moveTokensOntoMessage(answer, bundle);
  if (translated) {
    const response = chatAnswerToResponse(answer, translated, ctx.upstream.model);
    if (bundle) tokensOnLastItem(response, bundle);
    record.response_id = response.id as string;
    record.response_status = response.status as string;
    recorder.finish(res.status, null);
    return { status: res.status, body: response };
  }
  recorder.finish(res.status, null);
  if (bundle) return { status: res.status, body: answer };
  return { status: res.status, raw: res.body, contentType: 'application/json' };
}

/**
 * The reference's training message: the ids on `choices[0].message`, the transport fields they came in (the
 * log-probs, vLLM's top-level and per-choice ids) dropped, as its vllm_model does.
 */
function moveTokensOntoMessage(answer: Record<string, unknown>, tokens: CapturedTokens): void {
  delete answer.prompt_token_ids;
  const choice = Array.isArray(answer.choices) && isRecord(answer.choices[0]) ? answer.choices[0] : undefined;
  if (!choice) return;
  delete choice.logprobs;
  delete choice.token_ids;
  if (isRecord(choice.message)) Object.assign(choice.message, tokens);
}

/** A translated answer's ids go on its last output item, the one the generation ended with (the reference's place). */
function tokensOnLastItem(response: Record<string, unknown>, tokens: CapturedTokens): void {
  const output = Array.isArray(response.output) ? response.output : [];
  const last: unknown = output[output.length - 1];
  if (isRecord(last)) Object.assign(last, tokens);
}

function parseAnswer(body: Buffer): Record<string, unknown> {
  const bad = (why: string): CallFailure =>
    new CallFailure('upstream_bad_response', 502, `the upstream's answer is not a usable JSON object: ${why}`);
  if (!isUtf8(body)) throw bad('it is not valid UTF-8');
  let value: unknown;
  try {
    value = parseBoundedJson(body.toString('utf8'));
  } catch (err) {
    throw bad(err instanceof JsonTooDeep ? err.message : `not JSON (${(err as Error).message.slice(0, 200)})`);
  }
  if (!isRecord(value)) throw bad(`it is ${Array.isArray(value) ? 'a list' : typeof value}`);
  return value;
}

function usageOf(usage: unknown): TokenStats {
  try {
    return tokenStats(usage);
  } catch (err) {
    if (!(err instanceof BadUsage)) throw err;
    throw new CallFailure('upstream_bad_response', 502, `the upstream's usage is malformed: ${err.message}`);
  }
}

function finishReasonOf(answer: Record<string, unknown>): string | null {
  const choice = Array.isArray(answer.choices) && isRecord(answer.choices[0]) ? answer.choices[0] : undefined;
  if (typeof choice?.finish_reason === 'string') return choice.finish_reason;
  const details = isRecord(answer.incomplete_details) ? answer.incomplete_details : undefined;
  return typeof details?.reason === 'string' ? details.reason : null;
}

function contentTypeOf(header: string | string[] | undefined): string {
  const value = Array.isArray(header) ? header[0] : header;
  return value && /json|text\/plain/i.test(value) ? value : 'application/json';
}

/**
 * A streaming call: an event stream is relayed chunk by chunk; anything else (an error status, an upstream that
 * ignored `stream`) is read whole, bounded, and answered as a buffered call would be.
 */
async function streamingCall(
  pending: Promise<StreamingResponse>,
  recorder: CallRecorder,
  ctx: CallContext,
  release: (() => void) | undefined,
  capture: TokenCapture | undefined,
  translated?: Record<string, unknown>,
): Promise<GymReply> {
  const res = await pending;
  const type = String(res.headers['content-type'] ?? '');
  if (res.status >= 400 || !type.includes('text/event-stream')) {
    const chunks: Buffer[] = [];
    for await (const chunk of res.body) chunks.push(chunk);
    const whole: HttpResponse = {
      status: res.status,
      headers: res.headers,
      body: Buffer.concat(chunks),
      setCookies: [],
      text: () => Buffer.concat(chunks).toString('utf8'),
      json: () => undefined,
    };
    return bufferedAnswer(whole, recorder, ctx, capture, translated);
  }
  return {
    status: res.status,
    contentType: 'text/event-stream',
    headers: { 'cache-control': 'no-cache' },
    stream: translated
      ? translatedRelay(res, recorder, ctx, release, capture, new ChatToResponsesEvents(translated, ctx.upstream.model))
      : relay(res, recorder, ctx, release, capture),
  };
}

async function* relay(
  res: StreamingResponse,
  recorder: CallRecorder,
  ctx: CallContext,
  release: (() => void) | undefined,
  capture: TokenCapture | undefined,
): AsyncGenerator<Buffer> {
  const gathered = capture ? new ChatStreamTokens() : undefined;
  const watcher = new SseWatcher(
    recorder.record.dialect,
    Math.min(ctx.maxResponseBytes, 16 * 1024 * 1024),
    gathered ? (chunk) => gathered.onChunk(chunk) : undefined,
  );
  let category: ErrorCategory | null = 'client_gone';
  try {
    for await (const chunk of res.body) {
      watcher.push(chunk, performance.now());
      yield chunk;
    }
    category = streamOutcome(watcher, recorder);
    if (category === null && capture && gathered) category = await readStreamTokens(capture, gathered, ctx);
  } catch (err) {
    const failure = transportFailure(err, ctx);
    // A connection lost mid-stream is a cut stream, whatever broke it.
    category = err instanceof HttpTransportError && err.kind === 'body_read' ? 'upstream_stream_cut' : failure.category;
    ctx.log(`model stream failed (${failure.category}): ${failure.message}`);
    // The status line went out long ago: the agent learns of the failure from an error event, then the stream ends.
    yield Buffer.from(
      `event: error\ndata: ${JSON.stringify({ type: 'error', error: { message: failure.message, type: category } })}\n\n`,
    );
  } finally {
    res.cancel();
    release?.();
    recorder.finish(res.status, category, watcher.facts.firstContentAt);
  }
}

/**
 * A translated stream: the upstream's chat chunks are read as they arrive and the agent gets the Responses events
 * they make. The closing `response.completed` goes out only once the call is known good (its stream complete, its
 * ids read when captured); otherwise the stream ends with an error event.
 */
async function* translatedRelay(
  res: StreamingResponse,
  recorder: CallRecorder,
  ctx: CallContext,
  release: (() => void) | undefined,
  capture: TokenCapture | undefined,
  events: ChatToResponsesEvents,
): AsyncGenerator<Buffer> {
  const gathered = capture ? new ChatStreamTokens() : undefined;
  const watcher = new SseWatcher('chat', Math.min(ctx.maxResponseBytes, 16 * 1024 * 1024), (chunk) => {
    gathered?.onChunk(chunk);
    events.onChunk(chunk);
  });
  let category: ErrorCategory | null = 'client_gone';
  try {
    let message = '';
    try {
      yield* events.drain();
      for await (const chunk of res.body) {
        watcher.push(chunk, performance.now());
        yield* events.drain();
      }
      category = streamOutcome(watcher, recorder);
      if (category === null && capture && gathered) category = await readStreamTokens(capture, gathered, ctx);
      message = `the upstream's chat stream could not be answered (${category})`;
    } catch (err) {
      const failure = transportFailure(err, ctx);
      category =
        err instanceof HttpTransportError && err.kind === 'body_read' ? 'upstream_stream_cut' : failure.category;
      message = failure.message;
      ctx.log(`model stream failed (${failure.category}): ${failure.message}`);
    }
    recorder.record.response_id = events.responseId;
    if (category === null) {
      const closing = events.finish(watcher.facts.usage);
      recorder.record.response_status = closing.status;
      yield* closing.events;
    } else if (category !== 'client_gone') {
      const error = { type: 'error', error: { message, type: category } };
      yield Buffer.from(`event: error\ndata: ${JSON.stringify(error)}\n\n`);
    }
  } finally {
    res.cancel();
    release?.();
    recorder.finish(res.status, category, watcher.facts.firstContentAt);
  }
}

/** A relayed stream's ids, read once it completed; a failure is the call's category (the answer is already sent). */
async function readStreamTokens(
  capture: TokenCapture,
  gathered: ChatStreamTokens,
  ctx: CallContext,
): Promise<ErrorCategory | null> {
  try {
    await capture.read(gathered.tokens(), gathered.outputItems());
    return null;
  } catch (err) {
    if (!(err instanceof CallFailure)) throw err;
    ctx.log(`model stream's token ids failed (${err.category}): ${err.message}`);
    return err.category;
  }
}

/** What a stream that ended told the record; its error category, or null. */
function streamOutcome(watcher: SseWatcher, recorder: CallRecorder): ErrorCategory | null {
  const facts = watcher.facts;
  const record = recorder.record;
  record.response_id = facts.responseId;
  if (facts.model !== null) record.model = facts.model;
  record.response_status = facts.responseStatus;
  record.finish_reason = facts.finishReason;
  if (facts.bad !== null) return 'upstream_bad_response';
  try {
    recorder.tokens(tokenStats(facts.usage));
  } catch (err) {
    if (err instanceof BadUsage) return 'upstream_bad_response';
    throw err;
  }
  return facts.terminal ? null : 'upstream_stream_cut';
}
