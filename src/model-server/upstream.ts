/**
 * Where a model server sends its calls. `Upstream` is the seam later upstreams plug into (an in-process GGUF model,
 * a token-capturing vLLM); `OpenAiUpstream` is any OpenAI-compatible HTTP server (OpenAI, vLLM, llama-server,
 * Ollama): `POST <base>/responses` and `<base>/chat/completions`, with the configured model name and api key.
 *
 * The api key goes out as `Authorization: Bearer …` on each call and nowhere else: `redact` scrubs it from any text
 * the server shows (an upstream error body may echo what it received).
 */
import type { HttpResponse } from '../http/client.js';
import { isConnectError, request } from '../http/client.js';
import { streamRequest, type StreamingResponse } from '../http/stream-client.js';
import { parseBoundedJson } from '../bounded-json/index.js';
import type { Dialect } from './records.js';
import { TokenIdSource, TokenIdsMalformed, type TokenIdShape } from './token-ids.js';

export interface UpstreamCall {
  dialect: Dialect;
  /** The agent's request body with the upstream's model name set, encoded. */
  body: Buffer;
  signal: AbortSignal;
}

export interface Upstream {
  /** The model name every call is sent with (replacing the agent's). */
  readonly model: string;
  /** Keys merged under the agent's body on every call (`extra_body`). */
  readonly extraBody: Record<string, unknown>;
  /** One call, its answer read whole (bounded). */
  send(call: UpstreamCall): Promise<HttpResponse>;
  /** One call whose answer streams. */
  stream(call: UpstreamCall): Promise<StreamingResponse>;
  /** `text` with every secret this upstream holds replaced by `****`. */
  redact(text: string): string;
  /** How this upstream gives token ids for `token_id_capture`; undefined when it cannot. */
  readonly tokenIds?: TokenIdSource | undefined;
}

export interface OpenAiUpstreamOptions {
  /** The API's base URL, `/v1` included (`http://localhost:8000/v1`); no trailing slash. */
  baseUrl: string;
  apiKey: string | undefined;
  model: string;
  defaultHeaders: Record<string, string>;
  extraBody: Record<string, unknown>;
  timeoutMs: number;
  maxResponseBytes: number;
  /** Which token-id shape the upstream answers with (token_id_capture); unset: it gives none. */
  tokenIdShape?: TokenIdShape | undefined;
}

const PATHS: Record<Dialect, string> = { responses: '/responses', chat: '/chat/completions' };

export class OpenAiUpstream implements Upstream {
  private readonly headers: Record<string, string>;
  private readonly secrets: string[];
  readonly tokenIds: TokenIdSource | undefined;

  constructor(private readonly options: OpenAiUpstreamOptions) {
    this.headers = { ...options.defaultHeaders };
    if (options.apiKey) this.headers.authorization = `Bearer ${options.apiKey}`;
    // Header values may carry credentials too (an `api-key` header): each long enough to matter is scrubbed.
    this.secrets = [options.apiKey ?? '', ...Object.values(options.defaultHeaders)].filter((s) => s.length >= 8);
    this.tokenIds = options.tokenIdShape
      ? new TokenIdSource(options.tokenIdShape, (path, body, signal) => this.postToRoot(path, body, signal))
      : undefined;
  }

  /** A POST to the server's root (`/tokenize`, `/apply-template` live beside `/v1`, not under it). */
  private async postToRoot(path: string, body: Record<string, unknown>, signal: AbortSignal): Promise<unknown> {
    const root = this.options.baseUrl.replace(/\/v1$/, '');
    const res = await request(root + path, {
      method: 'POST',
      jsonText: Buffer.from(JSON.stringify(body)),
      headers: this.headers,
      timeoutMs: this.options.timeoutMs,
      maxBodyBytes: this.options.maxResponseBytes,
      signal,
    });
    if (res.status !== 200) throw new TokenIdsMalformed(`${path} answered HTTP ${res.status}`);
    try {
      return parseBoundedJson(res.body.toString('utf8'));
    } catch (err) {
      throw new TokenIdsMalformed(`${path} answered no usable JSON: ${(err as Error).message.slice(0, 200)}`);
    }
  }

  get model(): string {
    return this.options.model;
  }

  get extraBody(): Record<string, unknown> {
    return this.options.extraBody;
  }

  send(call: UpstreamCall): Promise<HttpResponse> {
    return twiceOnLostConnection(call.signal, () => this.sendOnce(call));
  }

  stream(call: UpstreamCall): Promise<StreamingResponse> {
    return twiceOnLostConnection(call.signal, () => this.streamOnce(call));
  }

  private sendOnce(call: UpstreamCall): Promise<HttpResponse> {
    return request(this.options.baseUrl + PATHS[call.dialect], {
      method: 'POST',
      jsonText: call.body,
      headers: this.headers,
      timeoutMs: this.options.timeoutMs,
      maxBodyBytes: this.options.maxResponseBytes,
      signal: call.signal,
    });
  }

  private streamOnce(call: UpstreamCall): Promise<StreamingResponse> {
    return streamRequest(this.options.baseUrl + PATHS[call.dialect], {
      jsonText: call.body,
      headers: { ...this.headers, accept: 'text/event-stream' },
      timeoutMs: this.options.timeoutMs,
      maxBodyBytes: this.options.maxResponseBytes,
      signal: call.signal,
    });
  }

  redact(text: string): string {
    let out = text;
    for (const secret of this.secrets) out = out.split(secret).join('****');
    return out;
  }
}

/**
 * A model call changes nothing upstream, so sending it twice is safe. One whose connection failed before any reply
 * (most often a pooled connection the upstream closed after its keep-alive just as the call went out: uvicorn, which
 * vLLM runs on, closes idle ones after 5 s) is sent once more, on a new connection; a second failure is the call's.
 */
async function twiceOnLostConnection<T>(signal: AbortSignal, attempt: () => Promise<T>): Promise<T> {
  try {
    return await attempt();
  } catch (err) {
    if (!isConnectError(err) || signal.aborted) throw err;
    return attempt();
  }
}
