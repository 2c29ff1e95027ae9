import { MAX_EXPRESSION_CHARS, MAX_NESTING } from './expression.js';

/**
 * LaTeX (the subset that final answers use) to mathjs expression text: `\frac{a}{b}`/`\dfrac`/`\tfrac`,
 * `\sqrt{x}`, `\sqrt[n]{x}`, powers and subscripts, `\cdot`/`\times`/`\div`, `\pi`, `\infty`, `\sin`…`\ln`/`\log_b`,
 * `\left(`…`\right)`, `|x|`, `\%`, spacing commands and `\text{…}`. Plain input (`2*sqrt(2)`, `x^2+2x+1`) goes
 * through the same reader, so both spellings land in one syntax. Adjacent operands get an explicit `*`, and letter
 * runs split into single-letter variables (`xy` is x·y, as in LaTeX), except function names and `pi`.
 *
 * This is a reader, not algebra: it only rewrites notation; mathjs parses and evaluates the result. It is bounded
 * (input length, group depth) and throws a `LatexError` for anything it does not know, so the caller falls back to
 * comparing text instead of guessing.
 */

export class LatexError extends Error {
  override readonly name = 'LatexError';
}

type Token = { kind: 'command'; name: string } | { kind: 'char'; ch: string };

const FUNCTION_COMMANDS: Record<string, string> = {
  sin: 'sin',
  cos: 'cos',
  tan: 'tan',
  sec: 'sec',
  csc: 'csc',
  cot: 'cot',
  arcsin: 'asin',
  arccos: 'acos',
  arctan: 'atan',
  sinh: 'sinh',
  cosh: 'cosh',
  tanh: 'tanh',
  exp: 'exp',
  ln: 'log',
  log: 'log10',
};
/** Function names also recognised when written without a backslash (`sqrt(2)`, `sin(x)`). */
const PLAIN_FUNCTIONS: Record<string, string> = {
  ...FUNCTION_COMMANDS,
  sqrt: 'sqrt',
  cbrt: 'cbrt',
  abs: 'abs',
  log: 'log',
  nthRoot: 'nthRoot',
};
const FRACTIONS = new Set(['frac', 'dfrac', 'tfrac', 'cfrac']);
const TEXT_COMMANDS = new Set([
  'text',
  'textrm',
  'textnormal',
  'mathrm',
  'mathbf',
  'textbf',
  'mathit',
  'textit',
  'mbox',
  'boldsymbol',
]);
const IGNORED_COMMANDS = new Set([
  'left',
  'right',
  'big',
  'Big',
  'bigg',
  'Bigg',
  'bigl',
  'bigr',
  'Bigl',
  'Bigr',
  'displaystyle',
  'textstyle',
  'limits',
  'circ',
  'degree',
  '$',
]);
const SPACING_COMMANDS = new Set([',', ';', ':', '!', ' ', 'quad', 'qquad']);
const SYMBOL_COMMANDS: Record<string, string> = {
  pi: 'pi',
  infty: 'Infinity',
  cdot: '*',
  times: '*',
  ast: '*',
  div: '/',
  '%': '/100',
};

function tokenize(latex: string): Token[] {
  const tokens: Token[] = [];
  for (let i = 0; i < latex.length; i++) {
    const ch = latex[i]!;
    if (ch !== '\\') {
      tokens.push({ kind: 'char', ch });
      continue;
    }
    let j = i + 1;
    while (j < latex.length && /[A-Za-z]/.test(latex[j]!)) j++;
    // A command is a letter run, or exactly one non-letter (`\,`, `\%`, `\{`).
    if (j === i + 1) j = Math.min(i + 2, latex.length);
    tokens.push({ kind: 'command', name: latex.slice(i + 1, j) });
    i = j - 1;
  }
  return tokens;
}

/** Translate LaTeX or plain math text into mathjs syntax, or throw a LatexError saying what it cannot read. */
export function latexToExpression(latex: string): string {
  if (latex.length > MAX_EXPRESSION_CHARS) throw new LatexError(`longer than ${MAX_EXPRESSION_CHARS} characters`);
  // Without backslashes or braces the text is plain notation, where `2^10` means 2¹⁰ (in LaTeX it is 2¹·0).
  const reader = new Reader(tokenize(latex), !/[\\{}]/.test(latex));
  const text = reader.sequence(0, null);
  if (!reader.done()) throw new LatexError(`unbalanced '${reader.describeNext()}'`);
  return text.trim();
}

class Reader {
  private position = 0;
  constructor(
    private readonly tokens: Token[],
    private readonly plain: boolean,
  ) {}

  done(): boolean {
    return this.position >= this.tokens.length;
  }

  describeNext(): string {
    const token = this.tokens[this.position];
    if (!token) return 'end';
    return token.kind === 'char' ? token.ch : `\\${token.name}`;
  }

  /** Read until `closer` (a char) or the end; returns mathjs text for the whole run. */
  sequence(depth: number, closer: string | null): string {
    if (depth > MAX_NESTING) throw new LatexError(`groups nest deeper than ${MAX_NESTING} levels`);
    const out = new Output();
    let absOpen = false;
    while (!this.done()) {
      const token = this.tokens[this.position]!;
      if (token.kind === 'char' && token.ch === closer) return out.text();
      this.position++;
      if (token.kind === 'command') {
        this.command(token.name, depth, out);
        continue;
      }
      const ch = token.ch;
      if (/\s/.test(ch) || ch === '~') continue;
      if (/[0-9.]/.test(ch)) {
        let number = ch;
        while (!this.done() && this.peekChar(/[0-9.]/)) number += (this.tokens[this.position++] as { ch: string }).ch;
        if (!/^(\d+\.?\d*|\.\d+)$/.test(number)) throw new LatexError(`'${number}' is not a number`);
        out.operand(number);
      } else if (/[A-Za-z]/.test(ch)) {
        let word = ch;
        while (!this.done() && this.peekChar(/[A-Za-z]/)) word += (this.tokens[this.position++] as { ch: string }).ch;
        this.word(word, depth, out);
      } else if (ch === '{' || ch === '(') {
        const inner = this.sequence(depth + 1, ch === '{' ? '}' : ')');
        this.expectChar(ch === '{' ? '}' : ')');
        // An empty `{}` is LaTeX grouping with nothing in it (`x^{}` aside): drop it.
        if (inner.trim() || ch === '(') out.operand(`(${inner})`);
      } else if (ch === '^') {
        const exponent = this.argument(depth);
        if (exponent.trim()) out.raw(`^(${exponent})`);
      } else if (ch === '_') {
        out.subscript(this.subscript(depth));
      } else if (ch === '|') {
        out.raw(absOpen ? ')' : '');
        if (!absOpen) out.openOperand('abs(');
        absOpen = !absOpen;
      } else if (ch === '+' || ch === '-' || ch === '*' || ch === '/') {
        out.operator(ch);
      } else if (ch === '%') {
        out.raw('/100');
      } else if (ch === ',' && closer === ')') {
        out.operator(',');
      } else {
        throw new LatexError(`cannot read '${ch}'`);
      }
    }
    if (closer !== null) throw new LatexError(`missing '${closer}'`);
    if (absOpen) throw new LatexError("unbalanced '|'");
    return out.text();
  }

  private command(name: string, depth: number, out: Output): void {
    if (SPACING_COMMANDS.has(name) || IGNORED_COMMANDS.has(name)) {
      // `\left.` and `\right.` are invisible delimiters.
      if ((name === 'left' || name === 'right') && this.peekChar(/\./)) this.position++;
      return;
    }
    if (name === '{' || name === '}') throw new LatexError('sets (\\{…\\}) are not expressions');
    const symbol = SYMBOL_COMMANDS[name];
    if (symbol !== undefined) {
      if (symbol === '*' || symbol === '/') out.operator(symbol);
      else if (symbol === '/100') out.raw(symbol);
      else out.operand(symbol);
      return;
    }
    if (FRACTIONS.has(name)) {
      const numerator = this.argument(depth);
      const denominator = this.argument(depth);
      out.operand(`((${numerator})/(${denominator}))`);
      return;
    }
    if (name === 'sqrt') {
      let index: string | undefined;
      if (this.peekChar(/\[/)) {
        this.position++;
        index = this.sequence(depth + 1, ']');
        this.expectChar(']');
      }
      const radicand = this.argument(depth);
      out.operand(index === undefined ? `sqrt(${radicand})` : `nthRoot(${radicand}, ${index})`);
      return;
    }
    if (TEXT_COMMANDS.has(name)) {
      this.word(this.rawGroup(), depth, out);
      return;
    }
    const fn = FUNCTION_COMMANDS[name];
    if (fn !== undefined) {
      this.functionCall(fn, depth, out);
      return;
    }
    throw new LatexError(`unsupported command \\${name}`);
  }

  /** A letter run: a function name, `pi`, `infinity`, or a product of single-letter variables. */
  private word(word: string, depth: number, out: Output): void {
    if (!word) return;
    const fn = PLAIN_FUNCTIONS[word];
    if (fn !== undefined && Object.hasOwn(PLAIN_FUNCTIONS, word)) return this.functionCall(fn, depth, out);
    if (word === 'pi') return out.operand('pi');
    if (word === 'inf' || word === 'infinity' || word === 'Infinity') return out.operand('Infinity');
    for (const letter of word) out.operand(letter);
  }

  /** `\sin x`, `\sin(x)`, `\sin^2 x`, `\log_2 8`, `sqrt(2)`, `nthRoot(8, 3)`. */
  private functionCall(fn: string, depth: number, out: Output): void {
    let power: string | undefined;
    let base: string | undefined;
    for (let i = 0; i < 2; i++) {
      if (this.peekChar(/\^/)) {
        this.position++;
        power = this.argument(depth);
      } else if (this.peekChar(/_/) && fn === 'log10') {
        this.position++;
        base = this.argument(depth);
      }
    }
    this.skipSpaces();
    let argument: string;
    if (this.peekChar(/\(/)) {
      this.position++;
      argument = this.sequence(depth + 1, ')');
      this.expectChar(')');
    } else if (this.peekCommand('left')) {
      this.position++;
      if (!this.peekChar(/\(/)) throw new LatexError(`\\left must open '(' after ${fn}`);
      this.position++;
      argument = this.sequence(depth + 1, ')');
      this.expectChar(')');
    } else {
      argument = this.argument(depth);
    }
    const call = base !== undefined ? `log(${argument}, ${base})` : `${fn}(${argument})`;
    out.operand(power !== undefined ? `(${call})^(${power})` : call);
  }

  /**
   * One macro argument: a `{…}` group, or a single token (`\frac12` is ½, `x^2`, `\sqrt\pi`); in plain text a
   * whole signed number (`2^10`, `x^-1`).
   */
  argument(depth: number): string {
    // Commands nest through their arguments without braces (`\sqrt\sqrt\sqrt2`): the same bound as groups.
    if (depth > MAX_NESTING) throw new LatexError(`groups nest deeper than ${MAX_NESTING} levels`);
    this.skipSpaces();
    const token = this.tokens[this.position];
    if (!token) throw new LatexError('an argument is missing at the end');
    this.position++;
    if (token.kind === 'char' && token.ch === '{') {
      const inner = this.sequence(depth + 1, '}');
      this.expectChar('}');
      return inner;
    }
    if (token.kind === 'command') {
      const out = new Output();
      this.command(token.name, depth + 1, out);
      return out.text();
    }
    if (this.plain && /[-+0-9.]/.test(token.ch)) {
      let number = token.ch;
      while (this.peekChar(/[0-9.]/)) number += (this.tokens[this.position++] as { ch: string }).ch;
      if (!/^[-+]?(\d+\.?\d*|\.\d+)$/.test(number)) throw new LatexError(`'${number}' is not a number`);
      return number;
    }
    if (/[0-9A-Za-z]/.test(token.ch)) return token.ch;
    throw new LatexError(`'${token.ch}' cannot be an argument`);
  }

  private subscript(depth: number): string {
    const text = this.argument(depth).replace(/[\s*]/g, '');
    if (!/^[A-Za-z0-9]{1,8}$/.test(text)) throw new LatexError(`subscript '${text}' is not a plain name`);
    return text;
  }

  /** The raw letters of a `{…}` group (for `\text{…}`), spaces kept as word breaks. */
  private rawGroup(): string {
    this.skipSpaces();
    if (!this.peekChar(/\{/)) throw new LatexError('\\text needs a {…} argument');
    this.position++;
    let text = '';
    while (!this.done() && !this.peekChar(/\}/)) {
      const token = this.tokens[this.position++]!;
      text += token.kind === 'char' ? token.ch : ' ';
      if (text.length > MAX_EXPRESSION_CHARS) throw new LatexError('\\text argument too long');
    }
    this.expectChar('}');
    const words = text.trim();
    if (/[^A-Za-z\s]/.test(words)) throw new LatexError(`cannot read \\text{${words}} as math`);
    return words.replace(/\s+/g, '');
  }

  private skipSpaces(): void {
    while (this.peekChar(/\s/) || this.peekCommand(' ') || this.peekCommand(',') || this.peekCommand('!'))
      this.position++;
  }

  private peekChar(pattern: RegExp): boolean {
    const token = this.tokens[this.position];
    return token !== undefined && token.kind === 'char' && pattern.test(token.ch);
  }

  private peekCommand(name: string): boolean {
    const token = this.tokens[this.position];
    return token !== undefined && token.kind === 'command' && token.name === name;
  }

  private expectChar(ch: string): void {
    const token = this.tokens[this.position];
    if (!token || token.kind !== 'char' || token.ch !== ch) throw new LatexError(`missing '${ch}'`);
    this.position++;
  }
}

/** Collects mathjs text, putting `*` between adjacent operands (`2x`, `x(x+1)`, `\sqrt2\sqrt3`). */
class Output {
  private parts: string[] = [];
  private lastWasOperand = false;

  operand(text: string): void {
    if (this.lastWasOperand) this.parts.push(' * ');
    this.parts.push(text);
    this.lastWasOperand = true;
  }

  /** Starts an operand whose closing comes later (`abs(` … `)`). */
  openOperand(text: string): void {
    if (this.lastWasOperand) this.parts.push(' * ');
    this.parts.push(text);
    this.lastWasOperand = false;
  }

  operator(op: string): void {
    this.parts.push(` ${op} `);
    this.lastWasOperand = false;
  }

  /** Text that attaches to the previous operand (`^(2)`, `/100`, a closing bracket). */
  raw(text: string): void {
    this.parts.push(text);
    if (text) this.lastWasOperand = true;
  }

  subscript(name: string): void {
    const last = this.parts[this.parts.length - 1];
    if (!this.lastWasOperand || last === undefined || !/^[A-Za-z]$/.test(last))
      throw new LatexError('a subscript must follow a single-letter variable');
    this.parts[this.parts.length - 1] = `${last}_${name}`;
  }

  text(): string {
    return this.parts.join('');
  }
}
