import type { CreateParams } from '../../src/contract/index.js';

/**
 * The body of each service call of one rollout: exactly the bytes of
 * `JSON.stringify({ ...params, input: [...input, ...items] })`, built from pieces encoded once — the create-params
 * around `input`, each original input item, and each trajectory item the first time it is sent.
 *
 * Every call re-sends the whole conversation, so re-encoding it on every step costs bytes × steps of JSON work;
 * with 200 KB items and 20 steps that was most of the agent's CPU (bench scenario 3). Now each item is encoded
 * once and a step only copies bytes.
 */
export class StepBody {
  private readonly head: Buffer;
  private readonly tail: Buffer;
  /** Encoded input items, then encoded trajectory items in order. */
  private readonly parts: Buffer[];
  private readonly inputCount: number;

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
    this.parts = input.map(encodeElement);
    this.inputCount = this.parts.length;
  }

  /** The body for a call whose conversation is the input followed by `items` (which only ever grow). */
  build(items: readonly unknown[]): Buffer {
    for (let i = this.parts.length - this.inputCount; i < items.length; i++) this.parts.push(encodeElement(items[i]));
    const pieces: Buffer[] = [this.head];
    this.parts.forEach((part, index) => {
      if (index > 0) pieces.push(COMMA);
      pieces.push(part);
    });
    pieces.push(this.tail);
    return Buffer.concat(pieces);
  }

  /**
   * The `/verify` body: exactly the bytes of `JSON.stringify({ ...row, response })`, where `response.output` is the
   * trajectory's items (`Trajectory.toResponse()`), written from the items already encoded for the service calls.
   * At the verify step the trajectory is then held as its items and their encodings plus this one body, with no
   * intermediate string of the whole. `row` has no `response` of its own (stale result keys are stripped).
   */
  verifyBody(row: Record<string, unknown>, response: { output: readonly unknown[] } & Record<string, unknown>): Buffer {
    const items = response.output;
    for (let i = this.parts.length - this.inputCount; i < items.length; i++) this.parts.push(encodeElement(items[i]));
    const rowText = JSON.stringify(row);
    const pieces: Buffer[] = [Buffer.from(`${rowText.slice(0, -1)}${rowText === '{}' ? '' : ','}"response":{`)];
    let first = true;
    for (const key of Object.keys(response)) {
      const name = JSON.stringify(key);
      if (key === 'output') {
        pieces.push(Buffer.from(`${first ? '' : ','}${name}:[`));
        for (let i = 0; i < items.length; i++) {
          if (i > 0) pieces.push(COMMA);
          pieces.push(this.parts[this.inputCount + i]!);
        }
        pieces.push(CLOSE_ARRAY);
      } else {
        const value = JSON.stringify(response[key]);
        if (value === undefined) continue;
        pieces.push(Buffer.from(`${first ? '' : ','}${name}:${value}`));
      }
      first = false;
    }
    pieces.push(CLOSE_TWO_OBJECTS);
    return Buffer.concat(pieces);
  }
}

const CLOSE_ARRAY = Buffer.from(']');
const CLOSE_TWO_OBJECTS = Buffer.from('}}');

const COMMA = Buffer.from(',');

/** An array element as JSON.stringify writes it (undefined, functions and symbols become null). */
function encodeElement(value: unknown): Buffer {
  return Buffer.from(JSON.stringify(value) ?? 'null');
}
