/**
 * A JSON object's members located in its bytes, without building their values. Two readers need one part of a large
 * object and pass the rest on or drop it: the agent checks each `/verify` answer for a numeric `reward` and sends the
 * answer's bytes on untouched (`finiteNumberMember`), and the collector's end-of-run aggregation drops every row's
 * trajectory (`strippedRowOf` in src/collect/aggregate.ts). Building the whole value was pure cost there: with big
 * trajectories, megabytes of strings per rollout, each string over ≈ 128 KiB a fresh allocation that V8 frees only
 * in a full collection (bench/README.md, "Large values").
 *
 * The scan is a validator of the whole JSON grammar on the UTF-8 bytes, so its answers are exact: it lists members only
 * when `parseBoundedJson(bytes.toString('utf8'), limit)` would succeed with an object, and then each member's bytes
 * are that member's text. Anything else — malformed text, nesting over the limit, not an object — answers
 * `undefined`, and the caller parses the text to find out what it is, with the parser's own error texts. A name
 * written with escapes is not decoded: callers treat it as possibly any name and parse instead.
 *
 * Why bytes stand in for the decoded text: UTF-8 decoding (with U+FFFD for invalid sequences) never turns a byte
 * ≥ 0x80 into an ASCII character nor swallows an ASCII byte, so every quote, backslash, bracket and digit of the
 * text is the same byte here, and every non-ASCII byte sits inside a string (where any character is valid) or
 * makes the text invalid either way.
 */
// The same names as index.ts's, declared here rather than imported: an imported binding is loaded from its module
// on every use, and the string loop below runs once per byte (4 MB scans ≈ 25 % slower with them imported).
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
export const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COLON = 0x3a;
const COMMA = 0x2c;
const MINUS = 0x2d;

/** Scanner state of the one scan in progress (a scan never yields, so one set suffices). */
let src: Uint8Array = new Uint8Array(0);
let end = 0;
let pos = 0;
let sawEscape = false;

/** One member of a scanned object: where it lies in the bytes, and its name. */
export interface Member {
  /** The member's name; undefined when it is written with escapes (it might spell any name). */
  name: string | undefined;
  /** The member's first byte (its name's opening quote). */
  start: number;
  /** Its value's first byte. */
  valueStart: number;
  /** Just past its value. */
  end: number;
}

/**
 * The members, in order, of the JSON object that `bytes[from, to)` holds, when that is certain: the text is valid
 * JSON, an object, nested at most `limit` levels (`parseBoundedJson`'s bound) with the object itself the first.
 * Otherwise `undefined`: parse the text to learn what it is.
 */
export function objectMembers(
  bytes: Uint8Array,
  limit: number,
  from = 0,
  to: number = bytes.length,
): Member[] | undefined {
  src = bytes;
  end = to;
  pos = from;
  try {
    return topLevelMembers(limit);
  } finally {
    src = new Uint8Array(0); // the caller's buffer is not kept alive by the scanner
  }
}

/**
 * The finite number at the top-level member `name` of the JSON object in `bytes`, when that is certain; otherwise
 * `undefined` (parse the text to learn why). `name` must be plain ASCII with no quote or backslash; `limit` is the
 * nesting bound the caller's parse applies. As `JSON.parse` does, the last of repeated members counts.
 */
export function finiteNumberMember(bytes: Uint8Array, name: string, limit: number): number | undefined {
  const members = objectMembers(bytes, limit);
  if (!members) return undefined;
  let found: Member | undefined;
  for (const member of members) {
    if (member.name === undefined) return undefined;
    if (member.name === name) found = member;
  }
  if (!found) return undefined;
  if (!startsNumber(bytes[found.valueStart]!)) return undefined;
  let text = '';
  for (let i = found.valueStart; i < found.end; i++) text += String.fromCharCode(bytes[i]!);
  const number = Number(text);
  return Number.isFinite(number) ? number : undefined;
}

function topLevelMembers(limit: number): Member[] | undefined {
  skipSpace();
  if (pos >= end || src[pos] !== OPEN_BRACE) return undefined;
  const members: Member[] = [];
  if (!container(1, limit, CLOSE_BRACE, members)) return undefined;
  skipSpace();
  return pos === end ? members : undefined;
}

function skipSpace(): void {
  while (pos < end) {
    const c = src[pos];
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) return;
    pos++;
  }
}

/** One value at `pos` inside `depth` open containers; false when the text is not valid JSON there. */
function value(depth: number, limit: number): boolean {
  if (pos >= end) return false;
  const c = src[pos]!;
  if (c === QUOTE) return string();
  if (c === OPEN_BRACE) return container(depth + 1, limit, CLOSE_BRACE, undefined);
  if (c === OPEN_BRACKET) return container(depth + 1, limit, CLOSE_BRACKET, undefined);
  if (startsNumber(c)) return number();
  if (c === 0x74) return literal('true');
  if (c === 0x66) return literal('false');
  if (c === 0x6e) return literal('null');
  return false;
}

/**
 * An object (`close` a brace) or array opened at `pos`, the `depth`-th open container. `members`, for an object,
 * receives where each of its members lies (the top-level object's, for `objectMembers`).
 */
function container(depth: number, limit: number, close: number, members: Member[] | undefined): boolean {
  if (depth > limit) return false;
  const isObject = close === CLOSE_BRACE;
  pos++;
  skipSpace();
  if (pos < end && src[pos] === close) {
    pos++;
    return true;
  }
  for (;;) {
    skipSpace();
    const start = pos;
    let name: string | undefined;
    if (isObject) {
      sawEscape = false;
      if (pos >= end || src[pos] !== QUOTE || !string()) return false;
      if (members && !sawEscape) name = Buffer.from(src.buffer, src.byteOffset + start + 1, pos - start - 2).toString();
      skipSpace();
      if (pos >= end || src[pos] !== COLON) return false;
      pos++;
      skipSpace();
    }
    const valueStart = pos;
    if (!value(depth, limit)) return false;
    members?.push({ name, start, valueStart, end: pos });
    skipSpace();
    if (pos >= end) return false;
    const c = src[pos++];
    if (c === close) return true;
    if (c !== COMMA) return false;
  }
}

/** A string opened at `pos`: escapes as JSON defines them, no raw control characters. */
function string(): boolean {
  pos++;
  while (pos < end) {
    const c = src[pos++]!;
    if (c === QUOTE) return true;
    if (c === BACKSLASH) {
      sawEscape = true;
      if (pos >= end) return false;
      const e = src[pos++]!;
      if (e === 0x75) {
        for (let k = 0; k < 4; k++) if (pos >= end || !isHexDigit(src[pos++]!)) return false;
      } else if (
        e !== QUOTE &&
        e !== BACKSLASH &&
        e !== 0x2f &&
        e !== 0x62 &&
        e !== 0x66 &&
        e !== 0x6e &&
        e !== 0x72 &&
        e !== 0x74
      ) {
        return false;
      }
    } else if (c < 0x20) {
      return false;
    }
  }
  return false;
}

function isHexDigit(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46);
}

function startsNumber(c: number): boolean {
  return c === MINUS || (c >= 0x30 && c <= 0x39);
}

function isDigit(c: number | undefined): boolean {
  return c !== undefined && c >= 0x30 && c <= 0x39;
}

/** `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?` */
function number(): boolean {
  if (src[pos] === MINUS) pos++;
  if (pos >= end) return false;
  if (src[pos] === 0x30) pos++;
  else if (isDigit(src[pos])) while (pos < end && isDigit(src[pos])) pos++;
  else return false;
  if (pos < end && src[pos] === 0x2e) {
    pos++;
    if (!isDigit(src[pos])) return false;
    while (pos < end && isDigit(src[pos])) pos++;
  }
  if (pos < end && (src[pos] === 0x65 || src[pos] === 0x45)) {
    pos++;
    if (pos < end && (src[pos] === 0x2b || src[pos] === MINUS)) pos++;
    if (!isDigit(src[pos])) return false;
    while (pos < end && isDigit(src[pos])) pos++;
  }
  return true;
}

function literal(word: string): boolean {
  if (pos + word.length > end) return false;
  for (let i = 0; i < word.length; i++) if (src[pos + i] !== word.charCodeAt(i)) return false;
  pos += word.length;
  return true;
}
