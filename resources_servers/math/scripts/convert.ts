import { createReadStream, createWriteStream, renameSync, rmSync } from 'node:fs';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { finished } from 'node:stream/promises';
import { isMainModule } from '../../../src/main-module.js';
import { MAX_ANSWER_CHARS } from '../equivalence.js';
import { extractAnswer } from '../extract.js';
import { CALCULATOR_TOOL } from '../tools.js';
import { ANSWER_INSTRUCTION } from './generate.js';

/**
 * Turn a GSM8K- or MATH-style JSONL you bring into math environment rows:
 *
 *   node dist/resources_servers/math/scripts/convert.js --in gsm8k_test.jsonl --out data/gsm8k.jsonl
 *     [--question-field question] [--answer-field answer] [--instruction "…"] [--calculator]
 *
 * The question comes from `question`, `problem` or `prompt` (the first present, or `--question-field`) and becomes
 * the user message, followed by the instruction (default: "Put your final answer in \boxed{}."). The expected answer
 * comes from `answer`, `solution` or `expected_answer` (or `--answer-field`): the text after GSM8K's last `####`, else
 * the last `\boxed{…}` of a MATH solution, else the whole (short) field. Other scalar fields (`id`, `level`, `type`)
 * are kept. The output appears only when every line converted (written to `<out>.partial`, then renamed), and a bad
 * line stops the run with `file:line` and what to fix.
 */

export const QUESTION_FIELDS = ['question', 'problem', 'prompt'];
export const ANSWER_FIELDS = ['answer', 'solution', 'expected_answer'];

export interface ConvertOptions {
  questionField?: string;
  answerField?: string;
  instruction?: string;
  calculator?: boolean;
}

export class ConvertError extends Error {
  override readonly name = 'ConvertError';
}

/** The expected answer inside a GSM8K answer (`… #### 1,234`) or a MATH solution (`… \boxed{\frac{1}{2}}`). */
export function referenceAnswer(text: string): string | undefined {
  const hashes = text.lastIndexOf('####');
  if (hashes >= 0) return text.slice(hashes + 4).trim() || undefined;
  const boxed = extractAnswer(text, ['boxed']);
  if (boxed) return boxed.answer;
  const whole = text.trim();
  return whole && whole.length <= MAX_ANSWER_CHARS ? whole : undefined;
}

/** One source row → one environment row; throws a ConvertError naming the field. */
export function convertRow(source: unknown, options: ConvertOptions = {}): Record<string, unknown> {
  if (source === null || typeof source !== 'object' || Array.isArray(source))
    throw new ConvertError('expected a JSON object');
  const row = source as Record<string, unknown>;
  const questionField = pickField(row, options.questionField, QUESTION_FIELDS, 'question');
  const answerField = pickField(row, options.answerField, ANSWER_FIELDS, 'answer');
  const question = row[questionField];
  const answerText = row[answerField];
  if (typeof question !== 'string' || !question.trim())
    throw new ConvertError(`'${questionField}' must be a non-empty string`);
  if (typeof answerText !== 'string' && typeof answerText !== 'number')
    throw new ConvertError(`'${answerField}' must be a string or a number`);
  const expected = typeof answerText === 'number' ? String(answerText) : referenceAnswer(answerText);
  if (!expected) {
    throw new ConvertError(
      `'${answerField}' has no final answer: expected a GSM8K '#### <answer>' line, a \\boxed{…}, or a short answer (≤ ${MAX_ANSWER_CHARS} characters)`,
    );
  }
  if (expected.length > MAX_ANSWER_CHARS)
    throw new ConvertError(`the answer in '${answerField}' is longer than ${MAX_ANSWER_CHARS} characters`);
  const instruction = options.instruction ?? ANSWER_INSTRUCTION;
  const extras: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(row)) {
    if (key === questionField || key === answerField || key === 'responses_create_params') continue;
    if (value === null || ['string', 'number', 'boolean'].includes(typeof value)) extras[key] = value;
  }
  return {
    responses_create_params: {
      input: [{ role: 'user', content: instruction ? `${question.trim()}\n\n${instruction}` : question.trim() }],
      ...(options.calculator ? { tools: [CALCULATOR_TOOL] } : {}),
    },
    ...extras,
    expected_answer: expected,
  };
}

function pickField(
  row: Record<string, unknown>,
  chosen: string | undefined,
  candidates: string[],
  what: string,
): string {
  if (chosen !== undefined) {
    if (!Object.hasOwn(row, chosen)) throw new ConvertError(`no '${chosen}' field (given by --${what}-field)`);
    return chosen;
  }
  const found = candidates.find((name) => Object.hasOwn(row, name));
  if (!found) {
    throw new ConvertError(
      `no ${what} field: expected one of ${candidates.join(', ')} (or name it with --${what}-field)`,
    );
  }
  return found;
}

/** Convert `input` into `out`; returns the number of rows. On a bad line nothing is written and the error names it. */
export async function convertFile(input: string, out: string, options: ConvertOptions = {}): Promise<number> {
  const partial = `${out}.partial`;
  const stream = createWriteStream(partial);
  // Held so a failed write (a missing directory, a full disk) surfaces in `finished` instead of as an uncaught event.
  stream.on('error', () => undefined);
  const lines = createInterface({ input: createReadStream(input), crlfDelay: Infinity });
  let lineNumber = 0;
  let rows = 0;
  try {
    for await (const line of lines) {
      lineNumber++;
      if (!line.trim()) continue;
      let parsed: unknown;
      try {
        parsed = JSON.parse(line);
      } catch (err) {
        throw new ConvertError(`${input}:${lineNumber}: not valid JSON (${(err as Error).message})`);
      }
      let converted: Record<string, unknown>;
      try {
        converted = convertRow(parsed, options);
      } catch (err) {
        if (err instanceof ConvertError) throw new ConvertError(`${input}:${lineNumber}: ${err.message}`);
        throw err;
      }
      if (stream.errored) throw stream.errored;
      if (!stream.write(`${JSON.stringify(converted)}\n`)) await once(stream, 'drain');
      rows++;
    }
    stream.end();
    await finished(stream);
    renameSync(partial, out);
    return rows;
  } catch (err) {
    stream.destroy();
    await finished(stream).catch(() => undefined);
    rmSync(partial, { force: true });
    const failed = err as NodeJS.ErrnoException;
    if (failed.code === 'ENOENT' && failed.path === input) throw new ConvertError(`cannot read ${input}: no such file`);
    if (failed.code && failed.path)
      throw new ConvertError(
        `cannot write ${failed.path} (${failed.code}): check that the --out directory exists and is writable`,
      );
    throw err;
  } finally {
    lines.close();
  }
}

interface Args extends ConvertOptions {
  input: string;
  out: string;
}

export function parseArgs(argv: readonly string[]): Args {
  const flags: Record<string, keyof Args> = {
    '--in': 'input',
    '--out': 'out',
    '--question-field': 'questionField',
    '--answer-field': 'answerField',
    '--instruction': 'instruction',
  };
  const args: Partial<Args> = {};
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]!;
    if (flag === '--calculator') {
      args.calculator = true;
      continue;
    }
    const [name, inline] = flag.split(/=(.*)/s, 2) as [string, string | undefined];
    const key = flags[name];
    if (!key) throw new ConvertError(`unknown argument '${flag}'`);
    const value = inline ?? argv[++i];
    if (value === undefined) throw new ConvertError(`${name} needs a value`);
    (args as Record<string, unknown>)[key] = value;
  }
  if (!args.input) throw new ConvertError('--in <source.jsonl> is required');
  if (!args.out) throw new ConvertError('--out <rows.jsonl> is required');
  return args as Args;
}

if (isMainModule(import.meta.url)) {
  let args: Args | undefined;
  try {
    args = parseArgs(process.argv.slice(2));
    const { input, out, ...options } = args;
    const rows = await convertFile(input, out, options);
    process.stdout.write(`Wrote ${rows} rows to ${out}\n`);
  } catch (err) {
    const usage = args === undefined;
    process.stderr.write(
      `Error: ${err instanceof Error ? err.message : String(err)}\n` +
        (usage
          ? 'Usage: convert.js --in <source.jsonl> --out <rows.jsonl> [--question-field F] [--answer-field F] [--instruction TEXT] [--calculator]\n'
          : ''),
    );
    // 2 for a usage mistake (as argparse), 1 for a bad input file.
    process.exitCode = usage ? 2 : 1;
  }
}
