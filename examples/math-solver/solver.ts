import { all, create } from 'mathjs';
import { toolHistory, userMessages, type Decide } from '../../src/service/index.js';

/**
 * A deterministic solver for the math environment's generated tasks (`resources_servers/math/scripts/generate.ts`).
 * It is not a model: it recognises the six task phrasings, works the answer out with mathjs (exact fractions,
 * `rationalize` to expand products), and when the request declares the `calculator` tool it asks Gym to run the
 * arithmetic there first and answers with the tool's result. Its final messages vary the answer format on purpose —
 * `\boxed{…}`, `\boxed{x = …}`, `Answer: …`, GSM8K's `#### 1,432`, mathjs-style `2 * x ^ 2 - x - 3` — so a run
 * over the example rows exercises the verifier's extraction strategies and equivalence kinds, and scores 1.0 on
 * every row only if they all agree.
 *
 * Stateless: everything it needs is in the conversation, so any call can land on any replica.
 */

const exact = create(all!, { number: 'Fraction' });
const numeric = create(all!);

interface Plan {
  /** Arithmetic for the calculator tool, when the task has some. */
  calculation?: string;
  /** The final message, given the value of `calculation` (from the tool, or computed here). */
  finalText(value: string): string;
}

/** The plan for one question, or undefined when it is not one of the generated phrasings. */
export function planMathTask(question: string): Plan | undefined {
  let match = /Compute (\([\d\s+]+\)\s*\*\s*\d+\s*-\s*\d+)\./.exec(question);
  if (match) {
    const expression = match[1]!;
    return {
      calculation: expression,
      finalText: (value) => `${expression} = ${value}, so the answer is \\boxed{${value}}.`,
    };
  }
  match = /What is (\d+\/\d+ [+-] \d+\/\d+)\?/.exec(question);
  if (match) {
    const fraction = latexFraction(exact.evaluate(match[1]!), '\\dfrac');
    return { finalText: () => `Over a common denominator: ${match![1]} = \\boxed{${fraction}}.` };
  }
  match = /What is (\d+(?:\.\d+)?)% of (\d+(?:\.\d+)?)\?/.exec(question);
  if (match) {
    const [percent, base] = [match[1]!, match[2]!];
    return {
      calculation: `${percent} / 100 * ${base}`,
      finalText: (value) => `${percent}% of ${base} is ${value}.\n\nAnswer: ${value}`,
    };
  }
  match = /Solve for x: (-?\d+)x ([+-]) (\d+) = (-?\d+)\./.exec(question);
  if (match) {
    const a = Number(match[1]);
    const b = (match[2] === '-' ? -1 : 1) * Number(match[3]);
    const c = Number(match[4]);
    const x = latexFraction(exact.fraction(c - b, a), '\\frac');
    return { finalText: () => `Subtract ${b} from both sides and divide by ${a}: \\boxed{x = ${x}}` };
  }
  match = /Expand (\(\d*x [+-] \d+\)\(x [+-] \d+\))\./.exec(question);
  if (match) {
    const product = match[1]!.replace(/(\d)x/g, '$1*x').replace(/\)\(/, ')*(');
    const expanded = numeric.rationalize(product).toString();
    return { finalText: () => `Multiplying out term by term gives \\boxed{${expanded}}.` };
  }
  const word = wordProblem(question);
  if (word)
    return {
      calculation: word,
      finalText: (value) => `Working it through: ${word} = ${value}.\n#### ${withThousands(value)}`,
    };
  return undefined;
}

/** The arithmetic behind each story template of the generator. */
function wordProblem(question: string): string | undefined {
  let match = /sells \w+ for \$(\d+) each\. \w+ buys (\d+) of them and pays with a \$(\d+) bill/.exec(question);
  if (match) return `${match[3]} - ${match[1]} * ${match[2]}`;
  match = /reads (\d+) pages a day for (\d+) days, then (\d+) more pages/.exec(question);
  if (match) return `${match[1]} * ${match[2]} + ${match[3]}`;
  match = /has (\d+) cows and (\d+) hens/.exec(question);
  if (match) return `4 * ${match[1]} + 2 * ${match[2]}`;
  return undefined;
}

/** A mathjs Fraction (sign, numerator, denominator as bigints) as `7`, `-\frac{3}{4}` or `\dfrac{3}{4}`. */
function latexFraction(value: unknown, command: '\\frac' | '\\dfrac'): string {
  const { s, n, d } = value as { s: bigint; n: bigint; d: bigint };
  const sign = s < 0n ? '-' : '';
  return d === 1n ? `${sign}${n}` : `${sign}${command}{${n}}{${d}}`;
}

/** 12 significant digits, so float noise (`0.3 * 560`) does not reach the answer. */
function formatNumber(value: unknown): string {
  return String(Number(Number(value).toPrecision(12)));
}

function withThousands(value: string): string {
  return /^-?\d+$/.test(value) ? Number(value).toLocaleString('en-US') : value;
}

export function createMathSolver(): Decide {
  return (conversation, tools) => {
    const question = userMessages(conversation).join('\n');
    const plan = planMathTask(question);
    if (!plan) {
      return {
        final:
          'The math solver only reads the generated task phrasings (arithmetic, fractions, percentages, linear ' +
          'equations, expansions, three word problems); it cannot solve this question.',
      };
    }
    if (plan.calculation === undefined) return { final: plan.finalText('') };
    const asked = toolHistory(conversation)
      .filter((call) => call.name === 'calculator' && call.output !== undefined)
      .pop();
    if (!asked && tools.some((tool) => tool.name === 'calculator')) {
      return { toolCalls: [{ name: 'calculator', arguments: { expression: plan.calculation } }] };
    }
    return {
      final: plan.finalText(calculatorResult(asked?.output) ?? formatNumber(numeric.evaluate(plan.calculation))),
    };
  };
}

/** The tool's `{"result": "…"}`, or undefined when it reported an error (then the solver computes it itself). */
function calculatorResult(output: string | undefined): string | undefined {
  if (output === undefined) return undefined;
  try {
    const parsed = JSON.parse(output) as { result?: unknown };
    return typeof parsed.result === 'string' ? parsed.result : undefined;
  } catch {
    return undefined;
  }
}
