/**
 * Reads the few top-level fields the viewer's index needs out of one JSONL line without building the row: values
 * of unwanted keys (the trajectory, the task input: nearly all of a row's bytes) are stepped over, strings by a
 * native `indexOf` for the closing quote. This is what lets a 1,000,000-row run open in seconds (JSON.parse of every
 * whole row was most of the time). It checks structure, not every byte: a line it cannot follow returns undefined
 * and the caller falls back to JSON.parse, which also produces the error text.
 */
import { NG } from '../runfiles/ng-keys.js';

/** Keys whose values are parsed (small values: numbers, flags, `agent_ref`). */
const VALUE_KEYS = new Set([
  NG.taskIndex,
  NG.rolloutIndex,
  NG.attemptIndex,
  'agent_ref',
  'reward',
  NG.failureClass,
  NG.failureTerminal,
]);
/** Keys whose objects are entered for their `usage` only. */
const RESPONSE_KEYS = new Set(['response', NG.partialResponse]);

export type Skimmed = Record<string, unknown> & {
  response?: { usage?: unknown };
  [NG.partialResponse]?: { usage?: unknown };
};

const QUOTE = 0x22;
const SCALAR = /^(?:true|false|null|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?)$/;
const BACKSLASH = 0x5c;

class Unfollowable extends Error {}

function fail(): never {
  throw new Unfollowable();
}

function skipSpace(buf: Buffer, i: number): number {
  while (i < buf.length) {
    const c = buf[i]!;
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return i;
    i++;
  }
  return i;
}

/** `i` at an opening quote; answers the index after the closing one. */
function skipString(buf: Buffer, i: number): number {
  let from = i + 1;
  for (;;) {
    const q = buf.indexOf(QUOTE, from);
    if (q < 0) fail();
    let slashes = 0;
    for (let k = q - 1; k > i && buf[k] === BACKSLASH; k--) slashes++;
    if (slashes % 2 === 0) return q + 1;
    from = q + 1;
  }
}

function skipValue(buf: Buffer, i: number): number {
  const c = buf[i];
  if (c === QUOTE) return skipString(buf, i);
  if (c === 0x7b || c === 0x5b) {
    let depth = 0;
    while (i < buf.length) {
      const b = buf[i]!;
      if (b === QUOTE) {
        i = skipString(buf, i);
        continue;
      }
      if (b === 0x7b || b === 0x5b) depth++;
      else if (b === 0x7d || b === 0x5d) {
        depth--;
        if (depth === 0) return i + 1;
      }
      i++;
    }
    fail();
  }
  // A number, true, false or null: up to the next delimiter.
  const from = i;
  while (i < buf.length) {
    const b = buf[i]!;
    if (b === 0x2c || b === 0x7d || b === 0x5d || b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09) break;
    i++;
  }
  if (i === from || !SCALAR.test(buf.toString('latin1', from, i))) fail();
  return i;
}

/** Walks the object at `i`, calling `visit(key, valueStart)`; `visit` answers where the value ends. */
function walkObject(buf: Buffer, i: number, visit: (key: string, at: number) => number): number {
  if (buf[i] !== 0x7b) fail();
  i = skipSpace(buf, i + 1);
  if (buf[i] === 0x7d) return i + 1;
  for (;;) {
    if (buf[i] !== QUOTE) fail();
    const keyEnd = skipString(buf, i);
    const raw = buf.toString('latin1', i + 1, keyEnd - 1);
    const key = raw.includes('\\') ? (JSON.parse(buf.toString('utf8', i, keyEnd)) as string) : raw;
    i = skipSpace(buf, keyEnd);
    if (buf[i] !== 0x3a) fail();
    i = skipSpace(buf, i + 1);
    i = skipSpace(buf, visit(key, i));
    if (buf[i] === 0x2c) {
      i = skipSpace(buf, i + 1);
      continue;
    }
    if (buf[i] === 0x7d) return i + 1;
    fail();
  }
}

function parseSlice(buf: Buffer, from: number, to: number): unknown {
  return JSON.parse(buf.toString('utf8', from, to));
}

/** The wanted fields of the JSON object on `line`, or undefined when the line is not one this can follow. */
export function skimRow(line: Buffer): Skimmed | undefined {
  const out: Skimmed = {};
  try {
    const start = skipSpace(line, 0);
    const end = walkObject(line, start, (key, at) => {
      const valueEnd = skipValue(line, at);
      if (VALUE_KEYS.has(key)) out[key] = parseSlice(line, at, valueEnd);
      else if (RESPONSE_KEYS.has(key)) {
        if (line[at] !== 0x7b) out[key] = parseSlice(line, at, valueEnd);
        else {
          const response: { usage?: unknown } = {};
          walkObject(line, at, (inner, innerAt) => {
            const innerEnd = skipValue(line, innerAt);
            if (inner === 'usage') response.usage = parseSlice(line, innerAt, innerEnd);
            return innerEnd;
          });
          out[key] = response;
        }
      }
      return valueEnd;
    });
    if (skipSpace(line, end) !== line.length) return undefined;
    return out;
  } catch {
    return undefined;
  }
}
