import { evaluateSafe, ExpressionError, parseSafe } from './expression.js';

/**
 * The optional `calculator` tool: evaluates one arithmetic expression in mathjs syntax (`(17 + 5) * 3`,
 * `2^10 / 4`, `sqrt(2)`, `sin(pi / 6)`) and nothing else — no variables, no assignment, no units, no access to
 * anything outside the expression (the whitelist of `expression.ts`). A bad expression is an answer the model can
 * read (`{ error }`), not a failed request, so the model can correct itself.
 */

export const MAX_CALCULATOR_CHARS = 500;

export type CalculatorResult = { result: string } | { error: string };

export function calculate(expression: string): CalculatorResult {
  if (expression.length > MAX_CALCULATOR_CHARS) {
    return {
      error: `the expression is longer than ${MAX_CALCULATOR_CHARS} characters; split the computation into steps`,
    };
  }
  try {
    const parsed = parseSafe(expression);
    if (parsed.variables.length > 0) {
      return { error: `the calculator evaluates numbers only; '${parsed.variables[0]}' is a variable` };
    }
    const value = evaluateSafe(parsed);
    if (!Number.isFinite(value.re) || !Number.isFinite(value.im)) {
      return { error: 'the result is not a finite number (a division by zero, or an overflow)' };
    }
    return { result: formatValue(value.re, value.im) };
  } catch (err) {
    if (err instanceof ExpressionError) return { error: err.message };
    throw err;
  }
}

/** 12 significant digits: float noise (`0.1 + 0.2`) disappears, integers up to 10^12 stay exact. */
function formatValue(re: number, im: number): string {
  const real = formatReal(re);
  if (Math.abs(im) < 1e-12 * Math.max(1, Math.abs(re))) return real;
  const imaginary = formatReal(Math.abs(im));
  const sign = im < 0 ? '-' : '+';
  return re === 0 ? `${im < 0 ? '-' : ''}${imaginary}i` : `${real} ${sign} ${imaginary}i`;
}

function formatReal(value: number): string {
  const rounded = Number(value.toPrecision(12));
  return Object.is(rounded, -0) ? '0' : String(rounded);
}
