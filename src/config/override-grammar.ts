/**
 * The value side of a Hydra override (`+key=<value>`), the subset the reference relies on:
 * null, booleans (any case), ints, floats (`1e-3`, `inf`, `nan`), unquoted strings, '…' / "…" strings,
 * `[a, b]` lists, `{k: v}` dicts (nested), and `${…}` interpolations kept verbatim for later resolution.
 */

/** Characters an unquoted string may not contain (Hydra reserves them for structure). */
const STRUCTURAL = new Set(['=', ',', '[', ']', '{', '}', '(', ')', "'", '"']);
/** Characters a backslash escapes in unquoted text (Hydra's ESC token). */
const ESCAPABLE = new Set(['\\', '(', ')', '[', ']', '{', '}', ':', '=', ',', ' ', '\t']);

const INT = /^[+-]?(?:0|[1-9][0-9_]*)$/;
const FLOAT =
  /^[+-]?(?:(?:\d[\d_]*)?\.\d[\d_]*(?:[eE][+-]?\d+)?|\d[\d_]*\.(?:[eE][+-]?\d+)?|\d[\d_]*[eE][+-]?\d+|inf|nan)$/i;

export class OverrideSyntaxError extends Error {}

/** Turn the text of one unquoted primitive into null / boolean / number, or keep it as a string. */
export function interpretPrimitive(text: string): unknown {
  const lower = text.toLowerCase();
  if (lower === 'null') return null;
  if (lower === 'true') return true;
  if (lower === 'false') return false;
  if (INT.test(text)) return Number(text.replace(/_/g, ''));
  if (FLOAT.test(text)) {
    const sign = text.startsWith('-') ? -1 : 1;
    const body = lower.replace(/^[+-]/, '');
    if (body === 'inf') return sign * Infinity;
    if (body === 'nan') return NaN;
    return Number(text.replace(/_/g, ''));
  }
  return text;
}

class ValueParser {
  private pos = 0;

  constructor(private readonly text: string) {}

  /** A whole override value: one element, or a sweep (`1,2`) which we reject. */
  parseTopLevel(): unknown {
    if (this.text.trim() === '') return '';
    const value = this.parseElement('top');
    this.skipWhitespace();
    if (this.peek() === ',') throw new OverrideSyntaxError('sweep');
    if (this.pos < this.text.length) this.fail(`unexpected '${this.peek()}'`);
    return value;
  }

  private parseElement(context: 'top' | 'list' | 'dict'): unknown {
    this.skipWhitespace();
    const char = this.peek();
    let value: unknown;
    if (char === '[') value = this.parseList();
    else if (char === '{') value = this.parseDict();
    else if (char === "'" || char === '"') value = this.parseQuoted();
    else value = this.parsePrimitive(context);
    this.skipWhitespace();
    return value;
  }

  private parseList(): unknown[] {
    this.expect('[');
    const items: unknown[] = [];
    this.skipWhitespace();
    if (this.peek() === ']') {
      this.pos++;
      return items;
    }
    for (;;) {
      items.push(this.parseElement('list'));
      const next = this.peek();
      if (next === ',') this.pos++;
      else if (next === ']') {
        this.pos++;
        return items;
      } else this.fail(next === undefined ? "unclosed '['" : `expected ',' or ']' but found '${next}'`);
    }
  }

  private parseDict(): Record<string, unknown> {
    this.expect('{');
    const dict: Record<string, unknown> = {};
    this.skipWhitespace();
    if (this.peek() === '}') {
      this.pos++;
      return dict;
    }
    for (;;) {
      this.skipWhitespace();
      const key = this.parseDictKey();
      this.expect(':');
      dict[key] = this.parseElement('dict');
      const next = this.peek();
      if (next === ',') this.pos++;
      else if (next === '}') {
        this.pos++;
        return dict;
      } else this.fail(next === undefined ? "unclosed '{'" : `expected ',' or '}' but found '${next}'`);
    }
  }

  private parseDictKey(): string {
    const start = this.pos;
    while (this.pos < this.text.length && this.peek() !== ':' && !STRUCTURAL.has(this.peek()!)) this.pos++;
    const key = this.text.slice(start, this.pos).trim();
    if (key === '') this.fail(this.peek() === undefined ? "unclosed '{'" : 'a dict entry needs a key before the colon');
    return key;
  }

  private parseQuoted(): string {
    const quote = this.text[this.pos++]!;
    let out = '';
    while (this.pos < this.text.length) {
      const char = this.text[this.pos]!;
      if (char === '\\') {
        // Backslashes only escape when they precede a quote (Hydra 1.1+); elsewhere they are literal.
        let run = 0;
        while (this.text[this.pos + run] === '\\') run++;
        if (this.text[this.pos + run] === quote) {
          out += '\\'.repeat(Math.floor(run / 2));
          this.pos += run;
          if (run % 2 === 1) {
            out += quote;
            this.pos++;
          }
          continue;
        }
        out += '\\'.repeat(run);
        this.pos += run;
        continue;
      }
      if (char === quote) {
        this.pos++;
        return out;
      }
      out += char;
      this.pos++;
    }
    return this.fail(`unclosed ${quote} quote`);
  }

  private parsePrimitive(context: 'top' | 'list' | 'dict'): unknown {
    let out = '';
    let escaped = false;
    while (this.pos < this.text.length) {
      const char = this.text[this.pos]!;
      if (char === '$' && this.text[this.pos + 1] === '{') {
        out += this.readInterpolation();
        continue;
      }
      if (char === '\\' && ESCAPABLE.has(this.text[this.pos + 1] ?? '')) {
        out += this.text[this.pos + 1];
        this.pos += 2;
        escaped = true;
        continue;
      }
      if (STRUCTURAL.has(char)) {
        const endsElement =
          char === ',' || (context === 'list' && char === ']') || (context === 'dict' && char === '}');
        if (endsElement) break;
        this.fail(`'${char}' is not allowed in an unquoted value (quote the value, e.g. '…')`);
      }
      out += char;
      this.pos++;
    }
    const trimmed = escaped ? out.replace(/^[ \t]+|[ \t]+$/g, '') : out.trim();
    if (trimmed === '') this.fail('empty element');
    return escaped || trimmed.includes('${') ? trimmed : interpretPrimitive(trimmed);
  }

  /** Copy a `${…}` verbatim, nested braces and quotes included. */
  private readInterpolation(): string {
    const start = this.pos;
    let depth = 0;
    let quote: string | undefined;
    while (this.pos < this.text.length) {
      const char = this.text[this.pos++]!;
      if (quote) {
        if (char === quote) quote = undefined;
        continue;
      }
      if (char === "'" || char === '"') quote = char;
      else if (char === '{') depth++;
      else if (char === '}' && --depth === 0) return this.text.slice(start, this.pos);
    }
    return this.fail("unclosed '${'");
  }

  private skipWhitespace(): void {
    while (this.peek() === ' ' || this.peek() === '\t') this.pos++;
  }

  private peek(): string | undefined {
    return this.text[this.pos];
  }

  private expect(char: string): void {
    this.skipWhitespace();
    if (this.peek() !== char)
      this.fail(
        this.peek() === undefined
          ? `expected '${char}' before the end`
          : `expected '${char}' but found '${this.peek()}'`,
      );
    this.pos++;
  }

  private fail(reason: string): never {
    throw new OverrideSyntaxError(`${reason} at character ${this.pos + 1}`);
  }
}

/** Parse the text after `=`. Throws `OverrideSyntaxError` ('sweep' for a bare comma list). */
export function parseOverrideValue(text: string): unknown {
  return new ValueParser(text).parseTopLevel();
}

/**
 * Write a string so that `parseOverrideValue` gives it back unchanged: bare when that already holds,
 * otherwise single-quoted. Used when flags are translated into override tokens.
 */
export function formatOverrideString(value: string): string {
  try {
    if (parseOverrideValue(value) === value) return value;
  } catch {
    // falls through to quoting
  }
  return `'${value.replace(/(\\*)'/g, (_match, slashes: string) => `${slashes}${slashes}\\'`).replace(/(\\+)$/, '$1$1')}'`;
}
