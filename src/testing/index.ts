/**
 * Public test doubles for anything that talks to a `/v1/responses` service: a scripted service on a real
 * loopback port (no mocked HTTP client anywhere) and builders for the Responses objects it answers with.
 *
 * ```ts
 * const service = await startScriptedService([
 *   toolAsk(functionCall('increment_counter', { count: 1 })),
 *   finalAnswer('done'),
 * ]);
 * // … point the agent at service.url, run, then inspect service.calls[1].body.input …
 * await service.close();
 * ```
 *
 * A script is either one handler for every call or a list of steps, one per call in arrival order. A step is a
 * JSON body to answer with (status 200), a `reply.*` value for anything else (a status, cookies, raw bytes, a
 * dropped connection, a stall), or a function of the call returning either. Running out of steps answers 500
 * with a text saying so, which fails the rollout under test loudly.
 */
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { assistantTextMessage } from '../contract/messages.js';
import { isRecord } from '../contract/records.js';
import { parseCookieHeader } from '../http/cookies.js';
import type { ConversationItem } from '../service/conversation.js';

// ---------------------------------------------------------------------------------------------------
// What the service saw

/** A `/v1/responses` request body: the conversation (a string, or items), the declared tools, and the rest as sent. */
interface ResponsesRequestBody {
  input: string | ConversationItem[];
  tools: unknown[];
  [key: string]: unknown;
}

export interface ServiceCall {
  /** 0-based arrival order. */
  index: number;
  method: string;
  path: string;
  /**
   * The parsed JSON body, typed as the request the client under test is meant to send; nothing checks that it is
   * one. A body that is empty or not JSON is undefined here: a test of such bodies reads `rawBody`.
   */
  body: ResponsesRequestBody;
  rawBody: Buffer;
  headers: http.IncomingHttpHeaders;
  cookies: Record<string, string>;
  /** Aborted when the client goes away before the reply is complete (e.g. the caller's deadline fired). */
  signal: AbortSignal;
}

// ---------------------------------------------------------------------------------------------------
// What the service answers

interface ReplyOptions {
  status?: number;
  headers?: Record<string, string>;
  /** Full `Set-Cookie` header values, e.g. `svc=1; Path=/`. */
  setCookies?: string[];
}

type ReplySpec =
  | { kind: 'json'; body: unknown; options: ReplyOptions }
  | { kind: 'raw'; body: string | Buffer; contentType: string; options: ReplyOptions }
  | { kind: 'hang' }
  | { kind: 'disconnect' }
  | { kind: 'socketBytes'; bytes: string | Buffer }
  | { kind: 'truncated'; body: string; declaredLength: number; options: ReplyOptions }
  | { kind: 'stallAfterHeaders'; options: ReplyOptions }
  | { kind: 'stream'; totalBytes: number; options: ReplyOptions };

/** An explicit reply (as opposed to a plain JSON body answered with 200). */
export class Reply {
  /** @internal */
  constructor(readonly spec: ReplySpec) {}
}

export const reply = {
  /** JSON body with any status, headers and cookies. */
  json: (body: unknown, options: ReplyOptions = {}): Reply => new Reply({ kind: 'json', body, options }),
  /** A status with a plain-text (or binary) body, e.g. `reply.status(500, 'kaboom')`. */
  status: (status: number, body: string | Buffer = '', options: Omit<ReplyOptions, 'status'> = {}): Reply =>
    new Reply({ kind: 'raw', body, contentType: 'text/plain', options: { ...options, status } }),
  /** Bytes exactly as given, 200 unless a status is set. */
  raw: (body: string | Buffer, options: ReplyOptions & { contentType?: string } = {}): Reply =>
    new Reply({ kind: 'raw', body, contentType: options.contentType ?? 'application/octet-stream', options }),
  /** Never answer: the request stays open until the client gives up or the service closes. */
  hang: (): Reply => new Reply({ kind: 'hang' }),
  /** Drop the connection without a response ("server disconnected"). */
  disconnect: (): Reply => new Reply({ kind: 'disconnect' }),
  /** Write these bytes to the socket instead of an HTTP response, then close it (a broken server). */
  socketBytes: (bytes: string | Buffer): Reply => new Reply({ kind: 'socketBytes', bytes }),
  /** Send headers promising more bytes than `body`, send `body`, then drop the connection (mid-body death). */
  truncated: (body: string, options: ReplyOptions = {}): Reply =>
    new Reply({ kind: 'truncated', body, declaredLength: Buffer.byteLength(body) + 1024, options }),
  /** Send 200 headers, then nothing: the body never comes. */
  stallAfterHeaders: (options: ReplyOptions = {}): Reply => new Reply({ kind: 'stallAfterHeaders', options }),
  /** Stream `totalBytes` of filler as a chunked 200 body, produced as the client reads (never buffered). */
  stream: (totalBytes: number, options: ReplyOptions = {}): Reply => new Reply({ kind: 'stream', totalBytes, options }),
};

/** A JSON body or a `Reply`: any value, so `unknown`, which also admits the promise of one a handler may return. */
export type StepResult = unknown;
/** Answers a call with a `StepResult`, or with a promise of one. */
export type ServiceHandler = (call: ServiceCall) => StepResult;
/** A JSON body, a `Reply`, or a `ServiceHandler` returning either (`unknown` already admits each of them). */
export type ServiceStep = unknown;
export type ServiceScript = ServiceHandler | readonly ServiceStep[];

export interface ScriptedService {
  /** Base URL, e.g. `http://127.0.0.1:43121` (use it as `agent_base_url`). */
  url: string;
  port: number;
  /** Every call received, in arrival order. */
  calls: ServiceCall[];
  /** Calls whose reply has not completed yet (the client may still be waiting). */
  readonly inFlight: number;
  /** The most calls ever in flight at once. */
  readonly maxInFlight: number;
  /** Resolves with call number `index` (0-based) once it has arrived. */
  call(index: number): Promise<ServiceCall>;
  /** Resolves once `count` calls have arrived. */
  waitForCalls(count: number): Promise<ServiceCall[]>;
  close(): Promise<void>;
}

export interface ScriptedServiceOptions {
  /** Serve https with this key and certificate (PEM), e.g. from `makeTestCa()`; the URL is then `https://…`. */
  tls?: { key: string; cert: string };
}

/**
 * Start a scripted service on `127.0.0.1` at an ephemeral port. It answers any path (the agent only calls
 * `POST /v1/responses`; `path` in each call lets a test check that).
 */
export async function startScriptedService(
  script: ServiceScript,
  options: ScriptedServiceOptions = {},
): Promise<ScriptedService> {
  const calls: ServiceCall[] = [];
  const waiting = new Map<number, Array<(call: ServiceCall) => void>>();
  let inFlight = 0;
  let maxInFlight = 0;

  const onRequest = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    const abort = new AbortController();
    res.once('close', () => {
      inFlight--;
      if (!res.writableFinished) abort.abort();
    });
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.once('end', () => {
      const rawBody = Buffer.concat(chunks);
      const call: ServiceCall = {
        index: calls.length,
        method: req.method ?? 'GET',
        path: req.url ?? '/',
        body: parseJson(rawBody) as ResponsesRequestBody,
        rawBody,
        headers: req.headers,
        cookies: parseCookieHeader(req.headers.cookie),
        signal: abort.signal,
      };
      calls.push(call);
      for (const resolve of waiting.get(call.index) ?? []) resolve(call);
      waiting.delete(call.index);
      void answer(call, res);
    });
  };
  const serverOptions = { requestTimeout: 0, keepAliveTimeout: 30_000 };
  const server = options.tls
    ? https.createServer({ ...serverOptions, ...options.tls }, onRequest)
    : http.createServer(serverOptions, onRequest);

  async function answer(call: ServiceCall, res: http.ServerResponse): Promise<void> {
    let result: unknown;
    try {
      const step = typeof script === 'function' ? script : script[call.index];
      if (typeof script !== 'function' && call.index >= script.length) {
        result = reply.status(500, `scripted service: no step left for call #${call.index + 1}`);
      } else {
        result = typeof step === 'function' ? await (step as ServiceHandler)(call) : step;
      }
    } catch (err) {
      result = reply.status(500, `scripted service handler threw: ${err instanceof Error ? err.message : String(err)}`);
    }
    if (res.destroyed) return;
    send(res, result instanceof Reply ? result.spec : { kind: 'json', body: result, options: {} });
  }

  function callAt(index: number): Promise<ServiceCall> {
    const arrived = calls[index];
    if (arrived) return Promise.resolve(arrived);
    return new Promise((resolve) => waiting.set(index, [...(waiting.get(index) ?? []), resolve]));
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;

  return {
    url: `${options.tls ? 'https' : 'http'}://127.0.0.1:${port}`,
    port,
    calls,
    get inFlight() {
      return inFlight;
    },
    get maxInFlight() {
      return maxInFlight;
    },
    call: callAt,
    async waitForCalls(count) {
      if (count > 0) await callAt(count - 1);
      return calls.slice(0, count);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function send(res: http.ServerResponse, spec: ReplySpec): void {
  switch (spec.kind) {
    case 'json':
      return writeWhole(res, spec.options, 'application/json', JSON.stringify(spec.body) ?? 'null');
    case 'raw':
      return writeWhole(res, spec.options, spec.contentType, spec.body);
    case 'hang':
      return;
    case 'disconnect':
      res.socket?.destroy();
      return;
    case 'socketBytes':
      res.socket?.end(spec.bytes);
      return;
    case 'truncated':
      res.writeHead(spec.options.status ?? 200, {
        ...headersOf(spec.options, 'application/json'),
        'content-length': spec.declaredLength,
      });
      res.write(spec.body, () => res.socket?.destroy());
      return;
    case 'stallAfterHeaders':
      res.writeHead(spec.options.status ?? 200, {
        ...headersOf(spec.options, 'application/json'),
        'content-length': 100,
      });
      res.flushHeaders();
      return;
    case 'stream':
      return streamFiller(res, spec.totalBytes, spec.options);
  }
}

function writeWhole(res: http.ServerResponse, options: ReplyOptions, contentType: string, body: string | Buffer): void {
  res.writeHead(options.status ?? 200, {
    ...headersOf(options, contentType),
    'content-length': Buffer.byteLength(body),
  });
  res.end(body);
}

function headersOf(options: ReplyOptions, contentType: string): http.OutgoingHttpHeaders {
  const headers: http.OutgoingHttpHeaders = { 'content-type': contentType, ...options.headers };
  if (options.setCookies && options.setCookies.length > 0) headers['set-cookie'] = options.setCookies;
  return headers;
}

function streamFiller(res: http.ServerResponse, totalBytes: number, options: ReplyOptions): void {
  res.writeHead(options.status ?? 200, headersOf(options, 'application/json'));
  const chunk = Buffer.alloc(64 * 1024, 0x20);
  let sent = 0;
  const pump = (): void => {
    while (sent < totalBytes && !res.destroyed) {
      const piece = sent + chunk.length <= totalBytes ? chunk : chunk.subarray(0, totalBytes - sent);
      sent += piece.length;
      if (!res.write(piece)) {
        res.once('drain', pump);
        return;
      }
    }
    if (!res.destroyed) res.end();
  };
  pump();
}

function parseJson(raw: Buffer): unknown {
  if (raw.length === 0) return undefined;
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch {
    return undefined;
  }
}

// ---------------------------------------------------------------------------------------------------
// Builders for what a service returns

/** A complete usage object (every key the contract requires). */
export function fullUsage(input = 10, output = 5, details: { cached?: number | null; reasoning?: number | null } = {}) {
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: details.cached === undefined ? 0 : details.cached },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: details.reasoning === undefined ? 0 : details.reasoning },
    total_tokens: input + output,
  };
}

/**
 * A valid Responses object around `output`. It reports `fullUsage()` unless `extra` says otherwise; pass
 * `{ usage: undefined }` to leave `usage` out of the JSON entirely.
 */
export function responseObject(output: unknown[], extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: 'resp_scripted',
    created_at: 0,
    model: 'scripted-service',
    object: 'response',
    output,
    parallel_tool_calls: false,
    tool_choice: 'auto',
    tools: [],
    status: 'completed',
    usage: fullUsage(),
    ...extra,
  };
}

let callCounter = 0;

/** An unpaired function call ("Gym, run this"). Arguments may be an object (JSON-encoded) or a raw string. */
export function functionCall(name: string, args: unknown = {}, callId = `call_${++callCounter}`) {
  return {
    type: 'function_call',
    id: `fc_${callId}`,
    call_id: callId,
    name,
    arguments: typeof args === 'string' ? args : JSON.stringify(args),
    status: 'completed',
  };
}

/** The output of a call the service ran itself (pair it with a `functionCall` of the same id). */
export function functionCallOutput(callId: string, output: string) {
  return { type: 'function_call_output', call_id: callId, output };
}

/** An assistant message in output form. */
export function assistantMessage(text: string, id = `msg_${++callCounter}`) {
  return assistantTextMessage(text, id);
}

export function reasoningItem(text: string, id = `rs_${++callCounter}`) {
  return { type: 'reasoning', id, summary: [{ type: 'summary_text', text }] };
}

/** A response that only asks Gym to run the given calls. */
export function toolAsk(...calls: unknown[]): Record<string, unknown> {
  return responseObject(calls);
}

/** A response that finishes the rollout with one assistant message. */
export function finalAnswer(text: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return responseObject([assistantMessage(text)], extra);
}

/** The `function_call_output` items of a request's `input` (what Gym executed for the service). */
export function toolOutputsIn(input: unknown): Array<{ call_id: string; output: string }> {
  if (!Array.isArray(input)) return [];
  return input.filter((item: unknown) => isRecord(item) && item.type === 'function_call_output') as Array<{
    call_id: string;
    output: string;
  }>;
}

export { makeTestCa, type TestCa } from './tls.js';

// Scripted `/run` agents and a fake head server, for testing collectors and reporting without real agents.
export * from './fake-agent.js';
/** The rows those doubles take and answer with. */
export type { Row } from '../runfiles/row.js';
