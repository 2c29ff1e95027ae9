/**
 * Reading a relayed stream of server-sent events on the side, for the call's record: when the first event carrying
 * content arrived (time to first token), the answer's id, model and status, the finish reason, and the usage of the
 * final event (`response.completed` on the Responses API, the last chunk on chat when `stream_options.include_usage`
 * asked for it). The bytes themselves are relayed untouched by the caller; this only watches them.
 *
 * Bounded: an event is held only until its blank line arrives, and one larger than `maxEventBytes` stops the
 * watching (the record then says the answer was bad) without touching the relay.
 */
import { StringDecoder } from 'node:string_decoder';
import { parseBoundedJson } from '../bounded-json/index.js';
import { isRecord } from '../contract/records.js';
import type { Dialect } from './records.js';

export interface StreamFacts {
  /** ms (performance.now()) of the first event carrying content. */
  firstContentAt: number | null;
  /** The terminal event was seen (`response.completed`/`incomplete`/`failed`, or chat's `[DONE]`). */
  terminal: boolean;
  responseId: string | null;
  model: string | null;
  responseStatus: string | null;
  finishReason: string | null;
  usage: unknown;
  /** Why the stream could not be read (an event not JSON, too deep, too large), or null. */
  bad: string | null;
}

const TERMINAL_TYPES = new Set(['response.completed', 'response.incomplete', 'response.failed']);

export class SseWatcher {
  readonly facts: StreamFacts = {
    firstContentAt: null,
    terminal: false,
    responseId: null,
    model: null,
    responseStatus: null,
    finishReason: null,
    usage: undefined,
    bad: null,
  };
  private readonly decoder = new StringDecoder('utf8');
  private pending = '';

  /** `onChatChunk` also sees each parsed chat chunk (token-id capture gathers the ids from them). */
  constructor(
    private readonly dialect: Dialect,
    private readonly maxEventBytes: number,
    private readonly onChatChunk?: (chunk: Record<string, unknown>) => void,
  ) {}

  push(chunk: Buffer, now: number): void {
    if (this.facts.bad !== null) return;
    this.pending += this.decoder.write(chunk);
    for (;;) {
      const end = eventEnd(this.pending);
      if (end === undefined) break;
      const event = this.pending.slice(0, end.at);
      this.pending = this.pending.slice(end.at + end.length);
      this.onEvent(event, now);
      if (this.facts.bad !== null) return;
    }
    if (this.pending.length > this.maxEventBytes) this.facts.bad = `an event larger than ${this.maxEventBytes} bytes`;
  }

  private onEvent(event: string, now: number): void {
    const data = event
      .split(/\r?\n/)
      .filter((line) => line.startsWith('data:'))
      .map((line) => line.slice(5).replace(/^ /, ''))
      .join('\n');
    if (data === '') return;
    if (data === '[DONE]') {
      if (this.dialect === 'chat') this.facts.terminal = true;
      return;
    }
    let value: unknown;
    try {
      value = parseBoundedJson(data);
    } catch (err) {
      this.facts.bad = `an event's data is not JSON: ${(err as Error).message.slice(0, 200)}`;
      return;
    }
    if (!isRecord(value)) return;
    if (this.dialect === 'chat') {
      this.chatChunk(value, now);
      try {
        this.onChatChunk?.(value);
      } catch (err) {
        this.facts.bad = `an event's token ids are unusable: ${(err as Error).message.slice(0, 200)}`;
      }
    } else this.onResponsesEvent(value, now);
  }

  private chatChunk(chunk: Record<string, unknown>, now: number): void {
    const facts = this.facts;
    if (typeof chunk.id === 'string') facts.responseId ??= chunk.id;
    if (typeof chunk.model === 'string') facts.model ??= chunk.model;
    if (chunk.usage !== undefined && chunk.usage !== null) facts.usage = chunk.usage;
    const choice = Array.isArray(chunk.choices) && isRecord(chunk.choices[0]) ? chunk.choices[0] : undefined;
    if (!choice) return;
    if (typeof choice.finish_reason === 'string') facts.finishReason = choice.finish_reason;
    const delta = choice.delta;
    if (facts.firstContentAt === null && isRecord(delta) && carriesContent(delta)) facts.firstContentAt = now;
  }

  private onResponsesEvent(event: Record<string, unknown>, now: number): void {
    const facts = this.facts;
    const type = typeof event.type === 'string' ? event.type : '';
    if (facts.firstContentAt === null && type.endsWith('.delta')) facts.firstContentAt = now;
    const response = isRecord(event.response) ? event.response : undefined;
    if (!response) return;
    if (typeof response.id === 'string') facts.responseId = response.id;
    if (typeof response.model === 'string') facts.model = response.model;
    if (typeof response.status === 'string') facts.responseStatus = response.status;
    if (TERMINAL_TYPES.has(type)) {
      facts.terminal = true;
      facts.usage = response.usage;
      const details = isRecord(response.incomplete_details) ? response.incomplete_details : undefined;
      if (typeof details?.reason === 'string') facts.finishReason = details.reason;
    }
  }
}

function carriesContent(delta: Record<string, unknown>): boolean {
  const nonEmpty = (value: unknown): boolean =>
    (typeof value === 'string' && value !== '') || (Array.isArray(value) && value.length > 0);
  return (
    nonEmpty(delta.content) ||
    nonEmpty(delta.tool_calls) ||
    nonEmpty(delta.reasoning_content) ||
    nonEmpty(delta.reasoning)
  );
}

/** Where the first complete event ends: its blank line (`\n\n`, `\r\n\r\n`). */
function eventEnd(text: string): { at: number; length: number } | undefined {
  const lf = text.indexOf('\n\n');
  const crlf = text.indexOf('\r\n\r\n');
  if (lf < 0 && crlf < 0) return undefined;
  if (crlf >= 0 && (lf < 0 || crlf < lf)) return { at: crlf, length: 4 };
  return { at: lf, length: 2 };
}
