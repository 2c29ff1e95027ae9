import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { readJsonl, tempDir } from '../../../test/support/cli.js';
import { validateCreateParams } from '../../../src/contract/index.js';
import { CALCULATOR_TOOL } from '../tools.js';
import { convertFile, convertRow, ConvertError, referenceAnswer } from './convert.js';

const run = promisify(execFile);
const SCRIPT = fileURLToPath(new URL('./convert.js', import.meta.url));

const GSM8K = {
  question:
    'Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. How many clips did Natalia sell altogether in April and May?',
  answer:
    'Natalia sold 48/2 = <<48/2=24>>24 clips in May.\nNatalia sold 48+24 = <<48+24=72>>72 clips altogether in April and May.\n#### 72',
};
const MATH = {
  problem: 'What is $\\frac{1}{2} + \\frac{1}{3}$?',
  solution: 'We have $\\frac{1}{2} + \\frac{1}{3} = \\frac{3}{6} + \\frac{2}{6} = \\boxed{\\frac{5}{6}}$.',
  level: 'Level 1',
  type: 'Prealgebra',
};

describe('GSM8K / MATH converter', () => {
  it('reads the reference answer after #### or in the last \\boxed{}', () => {
    assert.equal(referenceAnswer(GSM8K.answer), '72');
    assert.equal(referenceAnswer('so #### 1,234'), '1,234');
    assert.equal(referenceAnswer(MATH.solution), '\\frac{5}{6}');
    assert.equal(referenceAnswer('  42 '), '42');
    assert.equal(referenceAnswer(`${'x'.repeat(2000)}`), undefined);
  });

  it('turns a GSM8K row into an environment row', () => {
    const row = convertRow(GSM8K) as {
      responses_create_params: { input: Array<{ content: string }> };
      expected_answer: string;
    };
    assert.equal(row.expected_answer, '72');
    assert.ok(validateCreateParams(row.responses_create_params).ok);
    assert.equal(
      row.responses_create_params.input[0]!.content,
      `${GSM8K.question}\n\nPut your final answer in \\boxed{}.`,
    );
    assert.equal(JSON.stringify(row).includes('<<48/2=24>>'), false, 'the worked solution is not carried into the row');
  });

  it('turns a MATH row into an environment row, keeping its scalar fields', () => {
    const row = convertRow(MATH, { calculator: true, instruction: '' }) as Record<string, unknown> & {
      responses_create_params: { input: Array<{ content: string }>; tools: unknown[] };
    };
    assert.equal(row.expected_answer, '\\frac{5}{6}');
    assert.equal(row.level, 'Level 1');
    assert.equal(row.type, 'Prealgebra');
    assert.equal(row.responses_create_params.input[0]!.content, MATH.problem);
    assert.deepEqual(row.responses_create_params.tools, [CALCULATOR_TOOL]);
    assert.equal(row.solution, undefined);
  });

  it('takes the fields the user names, and says which field is missing or unusable', () => {
    assert.equal(
      convertRow({ q: 'What is 2+2?', a: 4 }, { questionField: 'q', answerField: 'a' }).expected_answer,
      '4',
    );
    assert.throws(
      () => convertRow({ text: 'hi', answer: '1' }),
      /no question field: expected one of question, problem, prompt \(or name it with --question-field\)/,
    );
    assert.throws(() => convertRow({ question: 'hi' }), /no answer field/);
    assert.throws(
      () => convertRow({ question: 'hi', answer: '1' }, { answerField: 'label' }),
      /no 'label' field \(given by --answer-field\)/,
    );
    assert.throws(() => convertRow({ question: '', answer: '1' }), /'question' must be a non-empty string/);
    assert.throws(
      () => convertRow({ question: 'q', solution: 'x'.repeat(2000) }),
      (err: unknown) => err instanceof ConvertError && /no final answer/.test(err.message),
    );
    assert.throws(() => convertRow([1]), /expected a JSON object/);
  });

  it('converts a file from the command line', async () => {
    const dir = tempDir('tsgym-math-convert-');
    const input = path.join(dir, 'gsm8k.jsonl');
    writeFileSync(
      input,
      `${JSON.stringify(GSM8K)}\n\n${JSON.stringify({ question: 'How many?', answer: 'Count them.\n#### 1,000' })}\n`,
    );
    const out = path.join(dir, 'rows.jsonl');
    const { stdout } = await run(process.execPath, [SCRIPT, '--in', input, '--out', out, '--calculator']);
    assert.match(stdout, /Wrote 2 rows/);
    const rows = readJsonl(out);
    assert.deepEqual(
      rows.map((row) => row.expected_answer),
      ['72', '1,000'],
    );
    assert.equal(existsSync(`${out}.partial`), false);
  });

  it('stops at a bad line naming file:line, and writes nothing', async () => {
    const dir = tempDir('tsgym-math-convert-bad-');
    const input = path.join(dir, 'math.jsonl');
    writeFileSync(
      input,
      `${JSON.stringify(MATH)}\n${JSON.stringify({ problem: 'p', solution: 'no answer in sight'.repeat(100) })}\n{oops\n`,
    );
    const out = path.join(dir, 'rows.jsonl');
    await assert.rejects(
      convertFile(input, out),
      new RegExp(`${input.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:2: 'solution' has no final answer`),
    );
    assert.equal(existsSync(out), false);
    assert.equal(existsSync(`${out}.partial`), false);
    await assert.rejects(
      run(process.execPath, [SCRIPT, '--in', input, '--out', out]),
      (err: { code?: number; stderr?: string }) => {
        assert.equal(err.code, 1);
        assert.match(String(err.stderr), /^Error: .*math\.jsonl:2: 'solution' has no final answer/);
        assert.doesNotMatch(
          String(err.stderr),
          /Usage:|at .*\.js:\d+/,
          'a bad file is not a usage mistake and prints no stack',
        );
        return true;
      },
    );
    writeFileSync(input, '{oops\n');
    await assert.rejects(convertFile(input, out), /math\.jsonl:1: not valid JSON/);
    await assert.rejects(
      convertFile(path.join(dir, 'missing.jsonl'), out),
      /cannot read .*missing\.jsonl: no such file/,
    );
    writeFileSync(input, `${JSON.stringify(MATH)}\n`);
    await assert.rejects(
      convertFile(input, path.join(dir, 'no-such-dir', 'rows.jsonl')),
      /cannot write .*no-such-dir.*ENOENT.*--out directory exists/,
    );
    await assert.rejects(run(process.execPath, [SCRIPT, '--out', out]), (err: { code?: number; stderr?: string }) => {
      assert.equal(err.code, 2);
      assert.match(String(err.stderr), /--in <source\.jsonl> is required\nUsage:/);
      return true;
    });
  });
});
