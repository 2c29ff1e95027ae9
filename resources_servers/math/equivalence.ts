import { evaluateSafe, parseSafe, type ComplexValue, type SafeExpression } from './expression.js';
import { latexToExpression } from './latex.js';
import { seededRandom } from '../../src/seeded-random.js';

/**
 * Is a model's answer the expected one? In order: the same text after normalising notation (`string_equal`); the
 * same number (`numeric_equal`: integers, decimals within a tolerance, fractions, percentages, thousands separators,
 * and constant expressions such as `2\sqrt{2}` vs `\sqrt{8}`); the same function of its variables at seeded random
 * points (`symbolic_equal`: `x^2+2x+1` vs `(x+1)^2`); else `mismatch`. Tuples `(a, b)` compare element by element in
 * order, bare lists `a, b` as multisets. Notation goes through `latex.ts`, numbers and expressions through mathjs
 * (`expression.ts`); everything is bounded, and an answer neither side can read is a mismatch, never an exception.
 */

export type MatchReason = 'string_equal' | 'numeric_equal' | 'symbolic_equal' | 'mismatch';

export interface EquivalenceOptions {
  /** |a − b| ≤ max(absolute, relative · max(|a|, |b|)). Defaults 1e-6 and 1e-9. */
  relativeTolerance?: number;
  absoluteTolerance?: number;
}

export interface Equivalence {
  equal: boolean;
  reason: MatchReason;
}

export const MAX_ANSWER_CHARS = 1000;
const MAX_LIST_ITEMS = 32;
const SAMPLE_POINTS = 8;
const MIN_VALID_POINTS = 4;
/** Symbolic checks compare floats computed along different paths: looser than exact, far tighter than a wrong answer. */
const SYMBOLIC_RELATIVE_TOLERANCE = 1e-7;

const VULGAR_FRACTIONS: Record<string, string> = {
  '½': '1/2',
  '⅓': '1/3',
  '⅔': '2/3',
  '¼': '1/4',
  '¾': '3/4',
  '⅕': '1/5',
  '⅖': '2/5',
  '⅗': '3/5',
  '⅘': '4/5',
  '⅙': '1/6',
  '⅚': '5/6',
  '⅛': '1/8',
  '⅜': '3/8',
  '⅝': '5/8',
  '⅞': '7/8',
};
const UNICODE_SYMBOLS: Record<string, string> = {
  '−': '-',
  '–': '-',
  '—': '-',
  '×': '*',
  '·': '*',
  '⋅': '*',
  '÷': '/',
  π: '\\pi ',
  '∞': '\\infty ',
  '√': '\\sqrt ',
  '\u00a0': ' ',
  '\u2009': ' ',
  '\u202f': ' ',
};

/** Compare an extracted answer with the expected one. */
export function compareAnswers(answer: string, expected: string, options: EquivalenceOptions = {}): Equivalence {
  const tolerance = { relative: options.relativeTolerance ?? 1e-6, absolute: options.absoluteTolerance ?? 1e-9 };
  if (answer.length > MAX_ANSWER_CHARS || expected.length > MAX_ANSWER_CHARS)
    return { equal: false, reason: 'mismatch' };
  let left = normalizeAnswer(answer);
  let right = normalizeAnswer(expected);
  // `x = 5` answers `5` (and the other way round): drop a single-variable left-hand side.
  left = dropAssignment(left);
  right = dropAssignment(right);
  if (left === '' || right === '') return { equal: false, reason: 'mismatch' };
  if (canonicalText(left) === canonicalText(right)) return { equal: true, reason: 'string_equal' };

  const leftItems = splitList(left);
  const rightItems = splitList(right);
  if (leftItems || rightItems) {
    if (!leftItems || !rightItems || leftItems.ordered !== rightItems.ordered)
      return { equal: false, reason: 'mismatch' };
    return compareLists(leftItems, rightItems, tolerance);
  }
  return compareSingle(left, right, tolerance);
}

interface Tolerance {
  relative: number;
  absolute: number;
}

function compareSingle(left: string, right: string, tolerance: Tolerance): Equivalence {
  const leftNumber = plainNumber(left);
  const rightNumber = plainNumber(right);
  if (leftNumber && rightNumber) {
    const equal = candidatesOf(leftNumber).some((a) => candidatesOf(rightNumber).some((b) => close(a, b, tolerance)));
    return { equal, reason: equal ? 'numeric_equal' : 'mismatch' };
  }
  if (canonicalText(stripPercent(left)) === canonicalText(stripPercent(right)))
    return { equal: true, reason: 'string_equal' };

  const leftExpression = readExpression(left);
  const rightExpression = readExpression(right);
  if (!leftExpression || !rightExpression) return { equal: false, reason: 'mismatch' };
  const variables = [...new Set([...leftExpression.variables, ...rightExpression.variables])].sort();
  if (variables.length === 0) {
    const a = valueAt(leftExpression, {});
    const b = valueAt(rightExpression, {});
    const equal = a !== undefined && b !== undefined && closeComplex(a, b, tolerance);
    return { equal, reason: equal ? 'numeric_equal' : 'mismatch' };
  }
  if (variables.length > 6) return { equal: false, reason: 'mismatch' };
  const equal = sameFunction(leftExpression, rightExpression, variables);
  return { equal, reason: equal ? 'symbolic_equal' : 'mismatch' };
}

function compareLists(left: ListItems, right: ListItems, tolerance: Tolerance): Equivalence {
  if (left.items.length !== right.items.length) return { equal: false, reason: 'mismatch' };
  const reasons: MatchReason[] = [];
  if (left.ordered) {
    for (let i = 0; i < left.items.length; i++) {
      const result = compareSingle(left.items[i]!, right.items[i]!, tolerance);
      if (!result.equal) return { equal: false, reason: 'mismatch' };
      reasons.push(result.reason);
    }
  } else {
    const unmatched = [...right.items];
    for (const item of left.items) {
      const index = unmatched.findIndex((candidate) => compareSingle(item, candidate, tolerance).equal);
      if (index < 0) return { equal: false, reason: 'mismatch' };
      reasons.push(compareSingle(item, unmatched[index]!, tolerance).reason);
      unmatched.splice(index, 1);
    }
  }
  // The weakest kind of match any element needed names the whole.
  const reason = reasons.includes('symbolic_equal')
    ? 'symbolic_equal'
    : reasons.includes('numeric_equal')
      ? 'numeric_equal'
      : 'string_equal';
  return { equal: true, reason };
}

/**
 * Notation that never changes a value: math delimiters, a `\boxed{…}` wrapper, `\left`/`\right`, spacing,
 * `\dfrac`, degree marks, dollar signs, a trailing period, markdown bold, unicode minus/times/fractions, and
 * `\text{…}` units after a number.
 */
export function normalizeAnswer(raw: string): string {
  let text = raw.trim().slice(0, MAX_ANSWER_CHARS);
  text = text
    .replace(/\*\*/g, '')
    .replace(/^`+|`+$/g, '')
    .trim();
  text = text
    .replace(/^\\\[|\\\]$/g, '')
    .replace(/^\\\(|\\\)$/g, '')
    .replace(/^\$+|\$+$/g, '')
    .trim();
  // An answer found by another strategy may still be wrapped: `Answer: \boxed{5}`.
  text = text.replace(/^\\(?:boxed|fbox)\s*\{(.*)\}$/s, '$1').trim();
  text = text.replace(/[½⅓⅔¼¾⅕⅖⅗⅘⅙⅚⅛⅜⅝⅞]/g, (ch) => ` ${VULGAR_FRACTIONS[ch]!}`);
  text = text.replace(/[−–—×·⋅÷π∞√\u00a0\u2009\u202f]/g, (ch) => UNICODE_SYMBOLS[ch]!);
  text = text.replace(/\\[dtc]frac/g, '\\frac').replace(/\\(?:displaystyle|textstyle|left|right)(?![A-Za-z])\.?/g, '');
  text = text.replace(/\^\s*\{?\s*\\circ\s*\}?|°|\\degree/g, '');
  text = text.replace(/\\\$|\$/g, '').replace(/\\%/g, '%');
  text = text.replace(/\\[,;:! ]|\\q?quad(?![A-Za-z])|~/g, ' ');
  // A number followed by units, in \text{…} or bare: `5\text{ cm}`, `12 apples`, `7 \mbox{dollars}`.
  // Only after a plain number, and bare words of two letters or more: `2 x` is 2x, not 2 with a unit.
  const unit =
    /^(.*?[0-9}%])\s*(?:\\(?:text|textrm|mbox|mathrm)\s*\{\s*[A-Za-z][A-Za-z\s.^0-9]*\}|\s[A-Za-z]{2,}[A-Za-z\s.]*)$/.exec(
      text,
    );
  if (unit && plainNumber(unit[1]!)) text = unit[1]!;
  // A whole answer in \text{…} is text (`\text{(A)}`, `\textbf{yes}`); a lone choice letter may be parenthesised.
  text = text.replace(/^\\(?:text|textbf|textrm|mathrm|mbox)\s*\{([^{}]*)\}$/, '$1').replace(/^\(([A-Za-z])\)$/, '$1');
  return text.replace(/\s+/g, ' ').trim().replace(/\.$/, '').trim();
}

function dropAssignment(text: string): string {
  const match = /^\s*[A-Za-z](?:_\{?[A-Za-z0-9]+\}?)?\s*=\s*([^=]+)$/.exec(text);
  return match ? match[1]!.trim() : text;
}

/** Text equality that ignores spaces, case of a lone word, and `\frac` vs `\dfrac` (already normalised). */
function canonicalText(text: string): string {
  const compact = text.replace(/\s+/g, '');
  return /^[A-Za-z]+$/.test(compact) ? compact.toLowerCase() : compact;
}

function stripPercent(text: string): string {
  return text.replace(/%$/, '');
}

interface ListItems {
  items: string[];
  ordered: boolean;
}

/** `(1, 2)` → ordered [1, 2]; `1, 2` or `2 and 3` → unordered; `1,000` (thousands) and single values → undefined. */
function splitList(text: string): ListItems | undefined {
  if (plainNumber(text)) return undefined;
  let body = text;
  let ordered = false;
  if (/^\(.*\)$/.test(text) || /^\\langle.*\\rangle$/.test(text)) {
    body = text.replace(/^\(|\)$/g, '').replace(/^\\langle|\\rangle$/g, '');
    ordered = true;
  }
  const items: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < body.length; i++) {
    const ch = body[i]!;
    if (ch === '(' || ch === '{' || ch === '[') depth++;
    else if (ch === ')' || ch === '}' || ch === ']') depth--;
    if (depth < 0) return undefined; // `(a)(b)`: the outer parentheses were not one group
    if (ch === ',' && depth === 0) {
      items.push(body.slice(start, i).trim());
      start = i + 1;
      if (items.length > MAX_LIST_ITEMS) return undefined;
    }
  }
  if (items.length === 0) return undefined;
  items.push(body.slice(start).trim());
  const cleaned = items.map((item) => item.replace(/^and\s+/i, '').trim());
  if (cleaned.some((item) => item === '')) return undefined;
  return { items: cleaned, ordered };
}

interface PlainNumber {
  value: number;
  percent: boolean;
}

/**
 * A number written plainly: `42`, `-3.5`, `.5`, `1,000`, `1 000 000`, `2.5e3`, `3/4`, `-\frac{3}{4}`, `75%`,
 * `2\frac{1}{2}` (a mixed number), `\frac12`.
 */
export function plainNumber(text: string): PlainNumber | undefined {
  const compact = text.trim();
  const percent = /%$/.test(compact);
  const body = compact.replace(/%$/, '').trim();
  let match =
    /^([+-])?\s*(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d{1,3}(?: \d{3})+(?:\.\d+)?|\d+\.?\d*|\.\d+)(?:[eE]([+-]?\d{1,4}))?$/.exec(
      body,
    );
  if (match) {
    const digits = match[2]!.replace(/[, ]/g, '');
    const value = Number(`${match[1] ?? ''}${digits}${match[3] !== undefined ? `e${match[3]}` : ''}`);
    return Number.isFinite(value) ? { value, percent } : undefined;
  }
  match =
    /^([+-])?\s*(\d+)\s*\/\s*(\d+)$/.exec(body) ??
    /^([+-])?\s*\\frac\s*\{\s*(\d+)\s*\}\s*\{\s*(\d+)\s*\}$/.exec(body) ??
    /^([+-])?\s*\\frac\s*(\d)(\d)$/.exec(body);
  if (match) {
    const denominator = Number(match[3]);
    if (denominator === 0) return undefined;
    return { value: (match[1] === '-' ? -1 : 1) * (Number(match[2]) / denominator), percent };
  }
  match =
    /^([+-])?\s*(\d+)\s*\\frac\s*\{\s*(\d+)\s*\}\s*\{\s*(\d+)\s*\}$/.exec(body) ??
    /^([+-])?\s*(\d+)\s+(\d+)\s*\/\s*(\d+)$/.exec(body);
  if (match) {
    const denominator = Number(match[4]);
    const numerator = Number(match[3]);
    // A mixed number is a whole part and a proper fraction; `2\frac{5}{2}` is not one.
    if (denominator === 0 || numerator >= denominator) return undefined;
    return { value: (match[1] === '-' ? -1 : 1) * (Number(match[2]) + numerator / denominator), percent };
  }
  return undefined;
}

/** `75%` may mean 75 or 0.75 (the expected answer of a percentage question is written either way). */
function candidatesOf(number: PlainNumber): number[] {
  return number.percent ? [number.value, number.value / 100] : [number.value];
}

function close(a: number, b: number, tolerance: Tolerance): boolean {
  if (a === b) return true;
  if (!Number.isFinite(a) || !Number.isFinite(b)) return false;
  return Math.abs(a - b) <= Math.max(tolerance.absolute, tolerance.relative * Math.max(Math.abs(a), Math.abs(b)));
}

function closeComplex(a: ComplexValue, b: ComplexValue, tolerance: Tolerance): boolean {
  if (Number.isNaN(a.re) || Number.isNaN(b.re) || Number.isNaN(a.im) || Number.isNaN(b.im)) return false;
  return close(a.re, b.re, tolerance) && close(a.im, b.im, tolerance);
}

function readExpression(text: string): SafeExpression | undefined {
  try {
    return parseSafe(latexToExpression(stripPercentSign(text)));
  } catch {
    // A LatexError or ExpressionError (or a stack limit on pathological input): not an answer we can read.
    return undefined;
  }
}

function stripPercentSign(text: string): string {
  return text.replace(/\\?%/g, '/100');
}

function valueAt(expression: SafeExpression, scope: Record<string, number>): ComplexValue | undefined {
  try {
    return evaluateSafe(expression, scope);
  } catch {
    return undefined;
  }
}

/**
 * Equal as functions: evaluated at SAMPLE_POINTS seeded points (values in ±[0.3, 3], both signs so `sqrt(x^2)` is
 * not taken for `x`), equal at every point where both are defined, with at least MIN_VALID_POINTS such points. A
 * point where one side is defined and the other is not is a difference.
 */
function sameFunction(left: SafeExpression, right: SafeExpression, variables: string[]): boolean {
  const random = seededRandom(0x5eed);
  const tolerance = { relative: SYMBOLIC_RELATIVE_TOLERANCE, absolute: 1e-9 };
  let valid = 0;
  for (let point = 0; point < SAMPLE_POINTS * 2 && valid < SAMPLE_POINTS; point++) {
    const scope: Record<string, number> = {};
    for (const name of variables) scope[name] = (random() < 0.5 ? -1 : 1) * (0.3 + 2.7 * random());
    const a = valueAt(left, scope);
    const b = valueAt(right, scope);
    const aDefined = a !== undefined && isFiniteValue(a);
    const bDefined = b !== undefined && isFiniteValue(b);
    if (!aDefined && !bDefined) continue;
    if (aDefined !== bDefined || !closeComplex(a!, b!, tolerance)) return false;
    valid++;
  }
  return valid >= MIN_VALID_POINTS;
}

function isFiniteValue(value: ComplexValue): boolean {
  return Number.isFinite(value.re) && Number.isFinite(value.im);
}
