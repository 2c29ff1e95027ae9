import type { CreateParams } from '../contract/index.js';

/**
 * The bodies a rollout sends, written from its items encoded once (`encodeElement`, as `JSON.stringify` writes an
 * array element): each service call's body (`StepBody.build`), the `/verify` body (`verifyBody`) and the
 * `/v1/responses` reply (`encodeResponse`), each byte-identical to `JSON.stringify` of the objects they stand for.
 *
 * Every call re-sends the whole conversation, so re-encoding it on every step costs bytes × steps of JSON work;
 * with 200 KB items and 20 steps that was most of the agent's CPU (bench scenario 3). Now each item is encoded
 * once and a step only copies bytes. The trajectory keeps nothing but these encodings (see `Trajectory`).
 */
export class StepBody {
  private readonly head: Buffer;
  private readonly tail: Buffer;
  /** The encoded input items. */
  private readonly input: Buffer[];

  constructor(params: CreateParams, input: readonly unknown[]) {
    // Object.keys gives JSON.stringify's own order; `input` keeps its position, as it does in `{ ...params, input }`.
    let head = '{';
    let tail = '';
    let seenInput = false;
    for (const key of Object.keys(params)) {
      if (key === 'input') {
        head += `${head === '{' ? '' : ','}${JSON.stringify(key)}:[`;
        seenInput = true;
        continue;
      }
      const value = JSON.stringify((params as Record<string, unknown>)[key]);
      if (value === undefined) continue; // JSON.stringify leaves out undefined, functions and symbols
      const member = `${JSON.stringify(key)}:${value}`;
      if (seenInput) tail += `,${member}`;
      else head += `${head === '{' ? '' : ','}${member}`;
    }
    if (!seenInput) head += `${head === '{' ? '' : ','}"input":[`;
    this.head = Buffer.from(head);
    this.tail = Buffer.from(`]${tail}}`);
    this.input = input.map(encodeElement);
  }

  /**
   * The body for a call whose conversation is the input followed by the encoded trajectory `items`: exactly the
   * bytes of `JSON.stringify({ ...params, input: [...input, ...parsedItems] })`.
   */
  build(items: readonly Buffer[]): Buffer {
    return Buffer.concat(this.pieces(items));
  }

  /**
   * The same body for the wire: one buffer while it is small, else its pieces (sent one after the other), so that a
   * long conversation is not copied once more on every step: the pieces are the trajectory's own encodings.
   */
  forCall(items: readonly Buffer[]): Buffer | readonly Buffer[] {
    const pieces = this.pieces(items);
    let size = 0;
    for (const piece of pieces) size += piece.length;
    return size < SEND_IN_PIECES_FROM ? Buffer.concat(pieces, size) : pieces;
  }

  private pieces(items: readonly Buffer[]): Buffer[] {
    const pieces: Buffer[] = [this.head];
    joinInto(pieces, this.input);
    if (this.input.length > 0 && items.length > 0) pieces.push(COMMA);
    joinInto(pieces, items);
    pieces.push(this.tail);
    return pieces;
  }
}

/** A body this large is sent in pieces; a smaller one is joined (one write, and no per-piece cost for small bodies). */
const SEND_IN_PIECES_FROM = 1024 * 1024;

/**
 * A response object whose `output` is held encoded: `fields` are its members in order, the value at `output` only
 * marking where the items go; `items` are the encoded output items.
 */
export interface EncodedResponse {
  fields: Record<string, unknown>;
  items: readonly Buffer[];
}

/**
 * The `/verify` body: exactly the bytes of `JSON.stringify({ ...row, response })`, with `response.output` written from
 * the encoded items. At the verify step the trajectory is then held as its encodings plus this one body. `row` has no
 * `response` of its own (stale result keys are stripped).
 */
export function verifyBody(row: Record<string, unknown>, response: EncodedResponse): Buffer {
  const rowText = JSON.stringify(row);
  const pieces: Buffer[] = [Buffer.from(`${rowText.slice(0, -1)}${rowText === '{}' ? '' : ','}"response":`)];
  writeResponse(pieces, response);
  pieces.push(CLOSE_OBJECT);
  return Buffer.concat(pieces);
}

/** `JSON.stringify(response)` as bytes, written from the encoded items. */
export function encodeResponse(response: EncodedResponse): Buffer {
  const pieces: Buffer[] = [];
  writeResponse(pieces, response);
  return Buffer.concat(pieces);
}

/** An array element as JSON.stringify writes it (undefined, functions and symbols become null). */
export function encodeElement(value: unknown): Buffer {
  return Buffer.from(JSON.stringify(value) ?? 'null');
}

function writeResponse(pieces: Buffer[], { fields, items }: EncodedResponse): void {
  let members = '{';
  for (const key of Object.keys(fields)) {
    const name = JSON.stringify(key);
    if (key === 'output') {
      pieces.push(Buffer.from(`${members}${members === '{' ? '' : ','}${name}:[`));
      joinInto(pieces, items);
      members = ']';
    } else {
      const value = JSON.stringify(fields[key]);
      if (value === undefined) continue;
      members += `${members === '{' ? '' : ','}${name}:${value}`;
    }
  }
  pieces.push(Buffer.from(`${members}}`));
}

function joinInto(pieces: Buffer[], parts: readonly Buffer[]): void {
  for (let i = 0; i < parts.length; i++) {
    if (i > 0) pieces.push(COMMA);
    pieces.push(parts[i]!);
  }
}

const COMMA = Buffer.from(',');
const CLOSE_OBJECT = Buffer.from('}');
