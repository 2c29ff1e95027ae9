import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { isMainModule } from '../../../src/main-module.js';
import { seededRandom } from '../../../src/seeded-random.js';
import { readGeneratorFlags, seedFlag } from '../../../src/generator-args.js';
import { CALCULATOR_TOOL } from '../tools.js';

/**
 * Seeded arithmetic and algebra tasks in the shape of `data/example.jsonl`, for tests and load:
 *
 *   node dist/resources_servers/math/scripts/generate.js --rows 200 --out data/generated.jsonl [--seed 7] [--no-calculator]
 *
 * Six kinds, in turn: `arithmetic` (an integer expression), `fraction` (a sum or difference of fractions, in lowest
 * terms), `percent` (p% of n), `linear` (solve ax + b = c, an integer or a fraction), `expand` (a product of two
 * binomials) and `word` (a short GSM8K-style story). Each row carries `expected_answer` (LaTeX for fractions and
 * polynomials) and `task_type`; rows declare the `calculator` tool unless `--no-calculator`. The same seed writes
 * the same bytes.
 */

export const TASK_TYPES = ['arithmetic', 'fraction', 'percent', 'linear', 'expand', 'word'] as const;
export type TaskType = (typeof TASK_TYPES)[number];

export const ANSWER_INSTRUCTION = 'Put your final answer in \\boxed{}.';

export interface MathRow {
  responses_create_params: { input: Array<{ role: 'user'; content: string }>; tools?: Array<typeof CALCULATOR_TOOL> };
  expected_answer: string;
  task_type: TaskType;
}

interface Task {
  question: string;
  answer: string;
}

type Int = (low: number, high: number) => number;

const NAMES = ['Maya', 'Omar', 'Lena', 'Tariq', 'Ines', 'Kofi', 'Priya', 'Jonas'];
const ITEMS = ['pencils', 'notebooks', 'apples', 'stickers', 'candles'];

function gcd(a: number, b: number): number {
  let x = Math.abs(a);
  let y = Math.abs(b);
  while (y) [x, y] = [y, x % y];
  return x || 1;
}

/** p/q in lowest terms as LaTeX: `7`, `-\frac{3}{4}`. */
export function latexFraction(numerator: number, denominator: number): string {
  const sign = numerator * denominator < 0 ? '-' : '';
  const divisor = gcd(numerator, denominator);
  const p = Math.abs(numerator) / divisor;
  const q = Math.abs(denominator) / divisor;
  return q === 1 ? `${sign}${p}` : `${sign}\\frac{${p}}{${q}}`;
}

function signed(value: number): string {
  return value < 0 ? `- ${-value}` : `+ ${value}`;
}

const MAKERS: Record<TaskType, (int: Int, pick: <T>(list: readonly T[]) => T) => Task> = {
  arithmetic: (int) => {
    const [a, b, c, d] = [int(2, 60), int(2, 60), int(2, 12), int(1, 99)];
    return { question: `Compute (${a} + ${b}) * ${c} - ${d}.`, answer: String((a + b) * c - d) };
  },
  fraction: (int, pick) => {
    const b = int(2, 12);
    const d = int(2, 12);
    const [a, c] = [int(1, b - 1), int(1, d - 1)];
    const op = pick(['+', '-'] as const);
    const numerator = op === '+' ? a * d + c * b : a * d - c * b;
    return {
      question: `What is ${a}/${b} ${op} ${c}/${d}? Give the answer as a fraction in lowest terms.`,
      answer: latexFraction(numerator, b * d),
    };
  },
  percent: (int, pick) => {
    const percent = pick([5, 10, 12, 15, 20, 25, 30, 40, 45, 50, 75]);
    const base = int(1, 40) * 20;
    return { question: `What is ${percent}% of ${base}?`, answer: String((percent * base) / 100) };
  },
  linear: (int) => {
    const a = int(2, 9);
    const x = int(-12, 12);
    const b = int(-20, 20) || 7;
    // Every third-ish equation has a fractional solution: shift c off the multiple of a.
    const c = a * x + b + (int(0, 2) === 0 ? int(1, a - 1) : 0);
    return { question: `Solve for x: ${a}x ${signed(b)} = ${c}.`, answer: latexFraction(c - b, a) };
  },
  expand: (int) => {
    const a = int(1, 3);
    const p = int(-9, 9) || 1;
    const q = int(-9, 9) || -1;
    // (a x + p)(x + q) = a x^2 + (a q + p) x + p q
    return {
      question: `Expand (${a === 1 ? '' : a}x ${signed(p)})(x ${signed(q)}).`,
      answer: polynomial([a, a * q + p, p * q]),
    };
  },
  word: (int, pick) => {
    const name = pick(NAMES);
    const story = int(0, 2);
    if (story === 0) {
      const [price, count] = [int(2, 9), int(2, 9)];
      const bill = pick([50, 100].filter((note) => note > price * count));
      return {
        question: `A shop sells ${pick(ITEMS)} for $${price} each. ${name} buys ${count} of them and pays with a $${bill} bill. How much change does ${name} get, in dollars?`,
        answer: String(bill - price * count),
      };
    }
    if (story === 1) {
      const [perDay, days, extra] = [int(5, 60), int(3, 30), int(1, 99)];
      return {
        question: `${name} reads ${perDay} pages a day for ${days} days, then ${extra} more pages. How many pages has ${name} read in total?`,
        answer: String(perDay * days + extra),
      };
    }
    const [cows, hens] = [int(2, 400), int(2, 400)];
    return {
      question: `A farm has ${cows} cows and ${hens} hens. How many legs do the animals have in total?`,
      answer: String(4 * cows + 2 * hens),
    };
  },
};

/** Coefficients [x², x, 1] as LaTeX in the usual order: `2x^2 - x - 6`. */
function polynomial([a2, a1, a0]: [number, number, number]): string {
  const terms: string[] = [];
  const push = (coefficient: number, variable: string): void => {
    if (coefficient === 0) return;
    const magnitude = Math.abs(coefficient) === 1 && variable ? '' : String(Math.abs(coefficient));
    const sign = coefficient < 0 ? '-' : '+';
    terms.push(
      terms.length === 0 ? `${sign === '-' ? '-' : ''}${magnitude}${variable}` : `${sign} ${magnitude}${variable}`,
    );
  };
  push(a2, 'x^2');
  push(a1, 'x');
  push(a0, '');
  return terms.join(' ') || '0';
}

export interface GenerateOptions {
  /** Declare the calculator tool in every row. Default true. */
  calculator?: boolean;
}

/** The rows, in order: row i is of kind TASK_TYPES[i % 6]. */
export function* mathRows(rows: number, seed: number, options: GenerateOptions = {}): Generator<MathRow> {
  const random = seededRandom(seed);
  const int: Int = (low, high) => low + Math.floor(random() * (high - low + 1));
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
  for (let i = 0; i < rows; i++) {
    const taskType = TASK_TYPES[i % TASK_TYPES.length]!;
    const task = MAKERS[taskType](int, pick);
    yield {
      responses_create_params: {
        input: [{ role: 'user', content: `${task.question} ${ANSWER_INSTRUCTION}` }],
        ...(options.calculator === false ? {} : { tools: [CALCULATOR_TOOL] }),
      },
      expected_answer: task.answer,
      task_type: taskType,
    };
  }
}

export async function writeMathRows(
  out: string,
  rows: number,
  seed: number,
  options: GenerateOptions = {},
): Promise<void> {
  const stream = createWriteStream(out);
  for (const row of mathRows(rows, seed, options)) {
    if (!stream.write(`${JSON.stringify(row)}\n`)) await once(stream, 'drain');
  }
  stream.end();
  await once(stream, 'finish');
}

interface Args {
  rows: number;
  out: string;
  seed: number;
  calculator: boolean;
}

export function parseArgs(argv: readonly string[]): Args {
  const { values, switches } = readGeneratorFlags(argv, ['--rows', '--out', '--seed'], ['--no-calculator']);
  const calculator = !switches.has('--no-calculator');
  const rows = Number(values.get('--rows') ?? '200');
  const out = values.get('--out');
  if (!Number.isInteger(rows) || rows < 0)
    throw new Error(`--rows must be a non-negative integer, got '${values.get('--rows')}'`);
  const seed = seedFlag(values);
  if (!out) throw new Error('--out <path> is required');
  return { rows, out, seed, calculator };
}

if (isMainModule(import.meta.url)) {
  try {
    const args = parseArgs(process.argv.slice(2));
    await writeMathRows(args.out, args.rows, args.seed, { calculator: args.calculator });
    process.stdout.write(`Wrote ${args.rows} rows to ${args.out} (seed ${args.seed})\n`);
  } catch (err) {
    process.stderr.write(
      `Error: ${err instanceof Error ? err.message : String(err)}\n` +
        'Usage: generate.js --rows <N> --out <path> [--seed <int>] [--no-calculator]\n',
    );
    process.exitCode = 2;
  }
}
