/**
 * Bounded JSON: the one parser for JSON that arrives from outside a process (a service's answer, an environment's
 * reply, a request body, tool-call arguments, a verify body). `JSON.parse` itself accepts any nesting, but everything
 * downstream that walks the value — `JSON.stringify` when a reply is built, the contract's validators, cookie and
 * usage code, a step body echoing items — recurses, and a 100,000-deep object overflows the stack there, far from
 * the request that brought it. So nesting is bounded at the door: a text nested deeper than `MAX_JSON_DEPTH` (512)
 * levels is refused before it is parsed, with an error saying `nested deeper than 512 levels`, and every value a
 * tsgym process holds from outside is then at most 512 levels deep, plus Gym's own envelopes (decision D19). The check is one linear scan of
 * the text counting brackets outside strings; strings are skipped with `indexOf`, so a body made mostly of long
 * strings costs little more than finding its quotes.
 */

/** The deepest nesting accepted in JSON a service sends (its answers, tool arguments): objects and arrays together. */
export const MAX_JSON_DEPTH = 512;
/**
 * The bound for bodies between tsgym processes and from environments. They carry a service's data inside Gym's own
 * envelopes (the row around the response around its items: a few levels), so a service answer at the limit must not
 * fail one hop later; 8 spare levels cover every envelope Gym adds.
 */
export const MAX_ENVELOPED_JSON_DEPTH = MAX_JSON_DEPTH + 8;

/** The received JSON is nested deeper than the limit; callers class it like any other invalid body. */
export class JsonTooDeep extends Error {
  constructor(readonly limit: number = MAX_JSON_DEPTH) {
    super(`nested deeper than ${limit} levels (the limit on nesting of received JSON)`);
    this.name = 'JsonTooDeep';
  }
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

/**
 * Whether `text` opens more than `limit` objects/arrays at once, counting brackets outside strings. Malformed text
 * (an unterminated string, unbalanced brackets) answers false: `JSON.parse` then reports what is wrong with it.
 */
export function nestedDeeperThan(text: string, limit: number = MAX_JSON_DEPTH): boolean {
  let depth = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      i = closingQuote(text, i);
      if (i < 0) return false;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > limit) return true;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      depth--;
    }
  }
  return false;
}

/** The index of the quote that closes the string opened at `open`, or -1 when it is never closed. */
function closingQuote(text: string, open: number): number {
  let at = text.indexOf('"', open + 1);
  while (at > 0) {
    let backslashes = 0;
    for (let k = at - 1; k > open && text.charCodeAt(k) === BACKSLASH; k--) backslashes++;
    if (backslashes % 2 === 0) return at;
    at = text.indexOf('"', at + 1);
  }
  return -1;
}

/** `JSON.parse` with the nesting bound: throws `JsonTooDeep` before parsing, or the parser's `SyntaxError`. */
export function parseBoundedJson(text: string, limit: number = MAX_JSON_DEPTH): unknown {
  if (nestedDeeperThan(text, limit)) throw new JsonTooDeep(limit);
  return JSON.parse(text);
}
