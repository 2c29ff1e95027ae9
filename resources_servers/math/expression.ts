import { parse, type EvalFunction, type MathNode } from 'mathjs';

/**
 * Safe arithmetic and algebra on text that came from a model: mathjs parses the expression, then a whitelist walk
 * admits only numbers, variables, the constants `pi`, `e`, `i`, `Infinity`, the four operations, powers and a
 * fixed set of elementary functions — no assignment, no units, no matrices, no strings, no `import`/`evaluate`/
 * `createUnit`, nothing that reaches outside the expression. Every variable is bound by the caller, so no symbol can
 * resolve to a mathjs built-in. Inputs are bounded (length, nesting, node count, variable count) before mathjs sees
 * them, and every failure is an `ExpressionError` with a reason a model or a user can read.
 */

export const MAX_EXPRESSION_CHARS = 1000;
export const MAX_NESTING = 64;
export const MAX_NODES = 400;
export const MAX_VARIABLES = 6;

export class ExpressionError extends Error {
  override readonly name = 'ExpressionError';
}

const CONSTANTS = new Set(['pi', 'e', 'i', 'Infinity']);
/** Function name → allowed argument counts. */
const FUNCTIONS: Record<string, readonly number[]> = {
  sqrt: [1],
  cbrt: [1],
  nthRoot: [2],
  abs: [1],
  exp: [1],
  log: [1, 2],
  log10: [1],
  log2: [1],
  sin: [1],
  cos: [1],
  tan: [1],
  sec: [1],
  csc: [1],
  cot: [1],
  asin: [1],
  acos: [1],
  atan: [1],
  sinh: [1],
  cosh: [1],
  tanh: [1],
  floor: [1],
  ceil: [1],
  round: [1],
};
const OPERATORS = new Set(['add', 'subtract', 'multiply', 'divide', 'pow', 'unaryMinus', 'unaryPlus']);
const VARIABLE = /^[A-Za-z](?:_[A-Za-z0-9]{1,8})?$/;

/** A checked expression: its mathjs tree and its free variables (sorted). */
export interface SafeExpression {
  node: MathNode;
  variables: string[];
}

/** A value an expression evaluates to: a real number, or a complex one when `i` (or a root of a negative) is involved. */
export interface ComplexValue {
  re: number;
  im: number;
}

/** Parse `text` (mathjs syntax) into a whitelisted tree, or throw an ExpressionError saying what is not allowed. */
export function parseSafe(text: string): SafeExpression {
  if (text.length > MAX_EXPRESSION_CHARS)
    throw new ExpressionError(`expression is longer than ${MAX_EXPRESSION_CHARS} characters`);
  if (!text.trim()) throw new ExpressionError('expression is empty');
  if (nestingDepth(text) > MAX_NESTING)
    throw new ExpressionError(`expression nests brackets deeper than ${MAX_NESTING} levels`);
  let node: MathNode;
  try {
    node = parse(text);
  } catch (err) {
    throw new ExpressionError(`cannot parse the expression: ${err instanceof Error ? err.message : String(err)}`);
  }
  const variables = new Set<string>();
  // Iterative walk with an explicit stack and a node budget: nothing here recurses over received data.
  const stack: MathNode[] = [node];
  let visited = 0;
  while (stack.length > 0) {
    const current = stack.pop()!;
    if (++visited > MAX_NODES) throw new ExpressionError(`expression has more than ${MAX_NODES} parts`);
    const children = checkNode(current, variables);
    for (const child of children) stack.push(child);
  }
  if (variables.size > MAX_VARIABLES) throw new ExpressionError(`expression has more than ${MAX_VARIABLES} variables`);
  return { node, variables: [...variables].sort() };
}

function checkNode(node: MathNode, variables: Set<string>): MathNode[] {
  const any = node as MathNode & Record<string, unknown>;
  switch (node.type) {
    case 'ConstantNode':
      if (typeof any.value !== 'number')
        throw new ExpressionError(`only numbers are allowed, not ${JSON.stringify(any.value)}`);
      return [];
    case 'SymbolNode': {
      const name = String(any.name);
      if (CONSTANTS.has(name)) return [];
      if (!VARIABLE.test(name)) throw new ExpressionError(`'${name}' is not a variable or a known constant`);
      variables.add(name);
      return [];
    }
    case 'ParenthesisNode':
      return [any.content as MathNode];
    case 'OperatorNode': {
      const fn = String(any.fn);
      if (!OPERATORS.has(fn)) throw new ExpressionError(`the operator '${String(any.op)}' is not allowed`);
      return any.args as MathNode[];
    }
    case 'FunctionNode': {
      const fnNode = any.fn as MathNode & { name?: unknown };
      const name = fnNode.type === 'SymbolNode' ? String(fnNode.name) : '';
      const args = any.args as MathNode[];
      const arity = FUNCTIONS[name];
      if (!arity || !Object.hasOwn(FUNCTIONS, name))
        throw new ExpressionError(`the function '${name || '?'}' is not allowed`);
      if (!arity.includes(args.length))
        throw new ExpressionError(`${name} takes ${arity.join(' or ')} argument(s), got ${args.length}`);
      return args;
    }
    default:
      throw new ExpressionError(`${node.type.replace(/Node$/, '').toLowerCase()} expressions are not allowed`);
  }
}

function nestingDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  for (const ch of text) {
    if (ch === '(' || ch === '[' || ch === '{') deepest = Math.max(deepest, ++depth);
    else if (ch === ')' || ch === ']' || ch === '}') depth = Math.max(0, depth - 1);
  }
  return deepest;
}

/** Compiled once per tree: a symbolic check evaluates the same expression at several points. */
const compiled = new WeakMap<MathNode, EvalFunction>();

/**
 * Evaluate a checked expression with every variable bound (a missing binding is an error, never a mathjs
 * built-in). NaN and infinities come back as they are: the caller decides what they mean.
 */
export function evaluateSafe(expression: SafeExpression, scope: Record<string, number> = {}): ComplexValue {
  for (const name of expression.variables) {
    if (typeof scope[name] !== 'number') throw new ExpressionError(`no value for the variable '${name}'`);
  }
  const bound = new Map<string, number>();
  for (const name of expression.variables) bound.set(name, scope[name]!);
  let value: unknown;
  try {
    let code = compiled.get(expression.node);
    if (!code) compiled.set(expression.node, (code = expression.node.compile()));
    value = code.evaluate(bound);
  } catch (err) {
    throw new ExpressionError(`cannot evaluate the expression: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (typeof value === 'number') return { re: value, im: 0 };
  if (value !== null && typeof value === 'object' && 're' in value && 'im' in value) {
    const complex = value;
    if (typeof complex.re === 'number' && typeof complex.im === 'number') return { re: complex.re, im: complex.im };
  }
  throw new ExpressionError('the expression does not evaluate to a number');
}
