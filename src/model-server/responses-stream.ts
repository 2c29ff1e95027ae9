/**
 * A streamed chat answer relayed as the Responses API's server-sent events, chunk by chunk as the chat chunks arrive:
 * `response.created`, then per output item `response.output_item.added`, its deltas (`response.output_text.delta`,
 * `response.reasoning_summary_text.delta`, `response.function_call_arguments.delta`) and its `.done` events, and last
 * `response.completed` (or `response.incomplete`) with the whole response and its usage. The items are the ones a
 * whole answer gets (./responses-chat.ts), in the order the model produced them.
 */
import { isRecord } from '../contract/records.js';
import {
  functionCallItem,
  messageItem,
  newResponseId,
  reasoningItem,
  reasoningText,
  responseObject,
} from './responses-chat.js';

type OpenItem =
  | { kind: 'reasoning'; item: Record<string, unknown>; text: string }
  | { kind: 'message'; item: Record<string, unknown>; text: string }
  | { kind: 'function_call'; item: Record<string, unknown>; chatIndex: number; args: string };

export class ChatToResponsesEvents {
  readonly responseId = newResponseId();
  private readonly createdAt = Math.floor(Date.now() / 1000);
  private sequence = 0;
  private pending: Buffer[] = [];
  private readonly output: Record<string, unknown>[] = [];
  private open: OpenItem | undefined;
  private finishReason: string | null = null;

  constructor(
    private readonly request: Record<string, unknown>,
    private readonly model: string,
  ) {
    this.emit('response.created', { response: this.response('in_progress', null) });
  }

  /** The events so far not handed out. */
  drain(): Buffer[] {
    const out = this.pending;
    this.pending = [];
    return out;
  }

  onChunk(chunk: Record<string, unknown>): void {
    const choice = Array.isArray(chunk.choices) && isRecord(chunk.choices[0]) ? chunk.choices[0] : undefined;
    if (!choice) return;
    if (typeof choice.finish_reason === 'string') this.finishReason = choice.finish_reason;
    const delta = isRecord(choice.delta) ? choice.delta : {};
    const reasoning = reasoningText(delta);
    if (reasoning !== '') this.reasoningDelta(reasoning);
    if (typeof delta.content === 'string' && delta.content !== '') this.textDelta(delta.content);
    if (Array.isArray(delta.tool_calls)) for (const call of delta.tool_calls) if (isRecord(call)) this.toolDelta(call);
  }

  /** The closing events: the open item's `.done`, then `response.completed`/`incomplete` with `usage` (chat's). */
  finish(usage: unknown): { status: string; events: Buffer[] } {
    this.close();
    // As a whole answer does, an answer with nothing in it still has its (empty) message.
    if (this.output.length === 0) {
      this.textDelta('');
      this.close();
    }
    const response = this.response(undefined, usage);
    const status = response.status as string;
    this.emit(status === 'incomplete' ? 'response.incomplete' : 'response.completed', { response });
    return { status, events: this.drain() };
  }

  private response(status: string | undefined, usage: unknown): Record<string, unknown> {
    return responseObject(this.request, {
      id: this.responseId,
      createdAt: this.createdAt,
      model: this.model,
      output: status === 'in_progress' ? [] : this.output,
      finishReason: status === 'in_progress' ? null : this.finishReason,
      usage,
      ...(status ? { status } : {}),
    });
  }

  private emit(type: string, data: Record<string, unknown>): void {
    const event = { type, sequence_number: this.sequence++, ...data };
    this.pending.push(Buffer.from(`event: ${type}\ndata: ${JSON.stringify(event)}\n\n`));
  }

  private get index(): number {
    return this.output.length;
  }

  private where(item: Record<string, unknown>): Record<string, unknown> {
    return { item_id: item.id, output_index: this.index };
  }

  private reasoningDelta(text: string): void {
    if (this.open?.kind !== 'reasoning') {
      this.close();
      const item = { ...reasoningItem('', 'in_progress'), summary: [] };
      this.open = { kind: 'reasoning', item, text: '' };
      this.emit('response.output_item.added', { output_index: this.index, item });
      this.emit('response.reasoning_summary_part.added', {
        ...this.where(item),
        summary_index: 0,
        part: { type: 'summary_text', text: '' },
      });
    }
    this.open.text += text;
    this.emit('response.reasoning_summary_text.delta', {
      ...this.where(this.open.item),
      summary_index: 0,
      delta: text,
    });
  }

  private textDelta(text: string): void {
    if (this.open?.kind !== 'message') {
      this.close();
      const item = { ...messageItem('', 'in_progress'), content: [] };
      this.open = { kind: 'message', item, text: '' };
      this.emit('response.output_item.added', { output_index: this.index, item });
      this.emit('response.content_part.added', {
        ...this.where(item),
        content_index: 0,
        part: { type: 'output_text', text: '', annotations: [] },
      });
    }
    this.open.text += text;
    if (text !== '') {
      this.emit('response.output_text.delta', { ...this.where(this.open.item), content_index: 0, delta: text });
    }
  }

  private toolDelta(call: Record<string, unknown>): void {
    const chatIndex = typeof call.index === 'number' ? call.index : 0;
    const fn = isRecord(call.function) ? call.function : {};
    if (this.open?.kind !== 'function_call' || this.open.chatIndex !== chatIndex) {
      this.close();
      const callId = typeof call.id === 'string' ? call.id : `call_${this.responseId.slice(5)}_${chatIndex}`;
      const name = typeof fn.name === 'string' ? fn.name : '';
      const item = functionCallItem(callId, name, '', 'in_progress');
      this.open = { kind: 'function_call', item, chatIndex, args: '' };
      this.emit('response.output_item.added', { output_index: this.index, item });
    }
    if (typeof fn.arguments === 'string' && fn.arguments !== '') {
      this.open.args += fn.arguments;
      this.emit('response.function_call_arguments.delta', { ...this.where(this.open.item), delta: fn.arguments });
    }
  }

  /** The open item's `.done` events; the item joins the output. */
  private close(): void {
    const open = this.open;
    if (!open) return;
    this.open = undefined;
    const where = this.where(open.item);
    let done: Record<string, unknown>;
    if (open.kind === 'reasoning') {
      const part = { type: 'summary_text', text: open.text };
      this.emit('response.reasoning_summary_text.done', { ...where, summary_index: 0, text: open.text });
      this.emit('response.reasoning_summary_part.done', { ...where, summary_index: 0, part });
      done = { ...open.item, summary: [part], status: 'completed' };
    } else if (open.kind === 'message') {
      const part = { type: 'output_text', text: open.text, annotations: [] };
      this.emit('response.output_text.done', { ...where, content_index: 0, text: open.text });
      this.emit('response.content_part.done', { ...where, content_index: 0, part });
      done = { ...open.item, content: [part], status: 'completed' };
    } else {
      this.emit('response.function_call_arguments.done', { ...where, arguments: open.args });
      done = { ...open.item, arguments: open.args, status: 'completed' };
    }
    this.emit('response.output_item.done', { output_index: this.index, item: done });
    this.output.push(done);
  }
}
