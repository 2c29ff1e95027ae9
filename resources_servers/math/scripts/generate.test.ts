import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { validateCreateParams } from '../../../src/contract/index.js';
import { tempDir } from '../../../test/support/cli.js';
import { installRoot } from '../../../src/config/index.js';
import { compareAnswers } from '../equivalence.js';
import { CALCULATOR_TOOL } from '../tools.js';
import { latexFraction, mathRows, parseArgs, TASK_TYPES, writeMathRows } from './generate.js';

const SEED = 7;
const run = promisify(execFile);

describe('math task generator', () => {
  it(`writes the same bytes for the same seed (seed ${SEED}) and other rows for another`, async () => {
    const dir = tempDir('tsgym-math-generate-');
    await writeMathRows(path.join(dir, 'a.jsonl'), 300, SEED);
    await writeMathRows(path.join(dir, 'b.jsonl'), 300, SEED);
    const text = readFileSync(path.join(dir, 'a.jsonl'), 'utf8');
    assert.equal(text, readFileSync(path.join(dir, 'b.jsonl'), 'utf8'));
    assert.equal(text.split('\n').filter(Boolean).length, 300);
    assert.notDeepEqual([...mathRows(12, SEED)], [...mathRows(12, SEED + 1)]);
  });

  it('cycles through the six task kinds with valid requests and the calculator declared (or not)', () => {
    const rows = [...mathRows(60, SEED)];
    assert.deepEqual(
      rows.slice(0, 6).map((row) => row.task_type),
      [...TASK_TYPES],
    );
    for (const row of rows) {
      assert.ok(validateCreateParams(row.responses_create_params).ok);
      assert.deepEqual(row.responses_create_params.tools, [CALCULATOR_TOOL]);
      assert.match(row.responses_create_params.input[0]!.content, /Put your final answer in \\boxed\{\}\.$/);
      assert.ok(row.expected_answer.length > 0);
    }
    for (const row of mathRows(12, SEED, { calculator: false }))
      assert.equal(row.responses_create_params.tools, undefined);
  });

  it('writes expected answers that follow from the question', () => {
    for (const row of mathRows(600, SEED)) {
      const question = row.responses_create_params.input[0]!.content;
      let match: RegExpExecArray | null;
      if ((match = /Compute \((\d+) \+ (\d+)\) \* (\d+) - (\d+)\./.exec(question))) {
        const [a, b, c, d] = match.slice(1).map(Number) as [number, number, number, number];
        assert.equal(row.expected_answer, String((a + b) * c - d));
      } else if ((match = /What is (\d+)% of (\d+)\?/.exec(question))) {
        assert.equal(Number(row.expected_answer), (Number(match[1]) * Number(match[2])) / 100);
      } else if ((match = /Solve for x: (\d+)x ([+-]) (\d+) = (-?\d+)\./.exec(question))) {
        const [a, b, c] = [Number(match[1]), (match[2] === '-' ? -1 : 1) * Number(match[3]), Number(match[4])];
        assert.ok(
          compareAnswers(row.expected_answer, String((c - b) / a), { relativeTolerance: 1e-9 }).equal,
          question,
        );
      } else if ((match = /Expand \((\d*)x ([+-]) (\d+)\)\(x ([+-]) (\d+)\)\./.exec(question))) {
        const a = Number(match[1] || '1');
        const p = (match[2] === '-' ? -1 : 1) * Number(match[3]);
        const q = (match[4] === '-' ? -1 : 1) * Number(match[5]);
        assert.equal(
          compareAnswers(row.expected_answer, `(${a}x + ${p})(x + ${q})`).reason,
          'symbolic_equal',
          question,
        );
      } else if ((match = /What is (\d+)\/(\d+) ([+-]) (\d+)\/(\d+)\?/.exec(question))) {
        const [a, b, c, d] = [match[1], match[2], match[4], match[5]].map(Number) as [number, number, number, number];
        const value = match[3] === '+' ? a / b + c / d : a / b - c / d;
        assert.ok(compareAnswers(row.expected_answer, String(value)).equal, question);
        assert.doesNotMatch(row.expected_answer, /\.\d/, 'fractions stay fractions');
      } else {
        assert.equal(row.task_type, 'word', question);
      }
    }
  });

  it('reduces fractions to lowest terms in LaTeX', () => {
    assert.equal(latexFraction(6, 8), '\\frac{3}{4}');
    assert.equal(latexFraction(-6, 3), '-2');
    assert.equal(latexFraction(3, -9), '-\\frac{1}{3}');
    assert.equal(latexFraction(0, 5), '0');
  });

  it('parses its flags and rejects unknown ones', () => {
    assert.deepEqual(parseArgs(['--rows', '10', '--out=x.jsonl', '--seed', '4', '--no-calculator']), {
      rows: 10,
      out: 'x.jsonl',
      seed: 4,
      calculator: false,
    });
    assert.throws(() => parseArgs(['--rows', '10']), /--out/);
    assert.throws(() => parseArgs(['--out', 'x', '--rows', '-1']), /non-negative/);
    assert.throws(() => parseArgs(['--out', 'x', '--bogus', '1']), /unknown argument/);
  });

  it('regenerates data/example.jsonl exactly from its command line (rows 12, seed 9)', async () => {
    const out = path.join(tempDir('tsgym-math-example-'), 'example.jsonl');
    const script = fileURLToPath(new URL('./generate.js', import.meta.url));
    const { stdout } = await run(process.execPath, [script, '--rows', '12', '--seed', '9', '--out', out]);
    assert.match(stdout, /Wrote 12 rows/);
    assert.equal(
      readFileSync(out, 'utf8'),
      readFileSync(path.join(installRoot(), 'resources_servers/math/data/example.jsonl'), 'utf8'),
    );
    await assert.rejects(
      run(process.execPath, [script, '--rows', 'many', '--out', out]),
      (err: { code?: number; stderr?: string }) => {
        assert.equal(err.code, 2);
        assert.match(String(err.stderr), /--rows must be a non-negative integer, got 'many'\nUsage: generate\.js/);
        return true;
      },
    );
  });
});
