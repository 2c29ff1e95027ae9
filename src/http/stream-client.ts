/**
 * One HTTP exchange whose answer is read as it arrives: the status and headers resolve first, then the body comes as
 * an async iterable of chunks, each handed on the moment the connection delivers it. For relaying a model's
 * server-sent events without buffering them whole. The same guarantees as `request()` (./client.ts): one deadline
 * over headers and body, a bound on the body's size, the caller's signal, redirects never followed, failures as
 * `HttpTransportError`s with a kind. Back-pressure reaches the connection: while the consumer lags more than a few
 * chunks behind, reading from the socket pauses.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Dispatcher } from 'undici';
import {
  classify,
  describe,
  dispatcher,
  HttpTransportError,
  parseHeaders,
  RequestAbortedError,
  targetOf,
  type TransportErrorKind,
} from './client.js';
import { exactUtf8 } from './utf8.js';

export interface StreamRequestOptions {
  /** The JSON body, already encoded. */
  jsonText: string | Buffer;
  headers?: Record<string, string>;
  /** Deadline for the whole exchange, the last chunk included. */
  timeoutMs: number;
  /** The most body bytes read; more fails the stream with kind `too_large`. */
  maxBodyBytes: number;
  signal?: AbortSignal;
  dispatcher?: Dispatcher;
}

export interface StreamingResponse {
  status: number;
  headers: IncomingHttpHeaders;
  /** The body's chunks, in order; iterating to the end consumes it. Throws `HttpTransportError` on a failure. */
  body: AsyncIterable<Buffer>;
  /** Stop reading (the consumer went away): the connection is cut. Safe to call more than once. */
  cancel(): void;
}

/** Chunks the consumer may lag behind before reading from the socket pauses. */
const HIGH_WATER_CHUNKS = 16;

class StreamExchange {
  private abortConnection: ((reason: Error) => void) | undefined;
  private abortReason: Error | undefined;
  private timedOut = false;
  private readonly timer: NodeJS.Timeout;
  private headersSeen = false;
  private size = 0;
  private readonly queue: Buffer[] = [];
  private ended = false;
  private failure: HttpTransportError | undefined;
  private wake: (() => void) | undefined;
  private resumeSocket: (() => void) | undefined;
  private paused = false;

  constructor(
    private readonly url: string,
    private readonly options: StreamRequestOptions,
    private readonly resolve: (res: StreamingResponse) => void,
    private readonly reject: (err: unknown) => void,
  ) {
    this.timer = setTimeout(this.onTimeout, options.timeoutMs);
    const outer = options.signal;
    if (outer) {
      if (outer.aborted) this.abort();
      else outer.addEventListener('abort', this.abort, { once: true });
    }
  }

  private readonly onTimeout = (): void => {
    this.timedOut = true;
    this.abort();
  };

  readonly abort = (): void => {
    if (this.abortReason) return;
    this.abortReason = new RequestAbortedError();
    this.abortConnection?.(this.abortReason);
  };

  onConnect(abort: (reason: Error) => void): void {
    if (this.abortReason) abort(this.abortReason);
    else this.abortConnection = abort;
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[], resume: () => void): boolean {
    if (statusCode < 200) return true;
    this.headersSeen = true;
    this.resumeSocket = resume;
    const headers = parseHeaders(rawHeaders) as IncomingHttpHeaders;
    this.resolve({ status: statusCode, headers, body: this.chunks(), cancel: this.abort });
    return true;
  }

  onData(chunk: Buffer): boolean {
    this.size += chunk.length;
    if (this.size > this.options.maxBodyBytes) {
      throw new HttpTransportError(
        'too_large',
        this.url,
        `response body too large: more than ${this.options.maxBodyBytes} bytes`,
        undefined,
        'body',
      );
    }
    // The chunk is a view of the connection's read buffer: copied out before the socket reads on.
    this.queue.push(Buffer.from(chunk));
    this.wakeUp();
    this.paused = this.queue.length >= HIGH_WATER_CHUNKS;
    return !this.paused;
  }

  onComplete(): void {
    this.finish();
    this.ended = true;
    this.wakeUp();
  }

  onError(err: Error): void {
    this.finish();
    const failure =
      err instanceof HttpTransportError
        ? err
        : this.classified(this.headersSeen ? 'body_read' : classify(err), describe(err), err);
    if (!this.headersSeen) {
      this.reject(failure);
      return;
    }
    this.failure = failure;
    this.wakeUp();
  }

  private classified(kind: TransportErrorKind, message: string, cause: unknown): HttpTransportError {
    const phase = this.headersSeen ? 'body' : 'headers';
    if (this.timedOut) {
      return new HttpTransportError(
        'timeout',
        this.url,
        `timed out after ${this.options.timeoutMs / 1000}s`,
        cause,
        phase,
      );
    }
    if (this.options.signal?.aborted || this.abortReason) {
      return new HttpTransportError('aborted', this.url, 'request aborted', cause, phase);
    }
    return new HttpTransportError(kind, this.url, message, cause, phase);
  }

  private async *chunks(): AsyncGenerator<Buffer> {
    try {
      for (;;) {
        const chunk = this.queue.shift();
        if (chunk !== undefined) {
          if (this.paused && this.queue.length < HIGH_WATER_CHUNKS / 2) {
            this.paused = false;
            this.resumeSocket?.();
          }
          yield chunk;
          continue;
        }
        if (this.failure) throw this.failure;
        if (this.ended) return;
        await new Promise<void>((resolve) => (this.wake = resolve));
      }
    } finally {
      // The consumer stopped early (or the body ended): a still-open exchange is cut.
      if (!this.ended && !this.failure) this.abort();
    }
  }

  private wakeUp(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  private finish(): void {
    clearTimeout(this.timer);
    this.options.signal?.removeEventListener('abort', this.abort);
  }
}

/** A POST whose answer streams; resolves once the status and headers arrived. */
export function streamRequest(url: string, options: StreamRequestOptions): Promise<StreamingResponse> {
  const body = typeof options.jsonText === 'string' ? exactUtf8(options.jsonText) : options.jsonText;
  const headers: string[] = [];
  for (const name in options.headers) {
    if (name.toLowerCase() !== 'content-type') headers.push(name, options.headers[name]!);
  }
  headers.push('content-type', 'application/json');
  const target = targetOf(url);
  return new Promise<StreamingResponse>((resolve, reject) => {
    const exchange = new StreamExchange(url, options, resolve, reject);
    try {
      (options.dispatcher ?? dispatcher()).dispatch(
        { origin: target.origin, path: target.path, method: 'POST', headers, body },
        exchange,
      );
    } catch (err) {
      exchange.onError(err as Error);
    }
  });
}
