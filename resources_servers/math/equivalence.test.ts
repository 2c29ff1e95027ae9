import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { seededRandom } from '../../src/seeded-random.js';
import { compareAnswers, normalizeAnswer, plainNumber, type MatchReason } from './equivalence.js';
import { extractAnswer } from './extract.js';
import { LatexError, latexToExpression } from './latex.js';

function expectMatch(answer: string, expected: string, reason: MatchReason): void {
  assert.deepEqual(compareAnswers(answer, expected), { equal: true, reason }, `${answer} ≡ ${expected}`);
  // Equivalence is symmetric: the expected answer may be written either way round.
  assert.equal(compareAnswers(expected, answer).equal, true, `${expected} ≡ ${answer}`);
}

function expectMismatch(answer: string, expected: string): void {
  assert.deepEqual(compareAnswers(answer, expected), { equal: false, reason: 'mismatch' }, `${answer} ≢ ${expected}`);
}

describe('answer equivalence: numbers', () => {
  it('integers, signs, decimals and trailing zeros', () => {
    expectMatch('42', '42', 'string_equal');
    expectMatch('42.0', '42', 'numeric_equal');
    expectMatch('+7', '7', 'numeric_equal');
    expectMatch('-3', '-3', 'string_equal');
    expectMatch('.5', '0.5', 'numeric_equal');
    expectMatch('1.5e3', '1500', 'numeric_equal');
    expectMismatch('-3', '3');
    expectMismatch('41', '42');
  });

  it('decimals within the tolerance, and not beyond it', () => {
    expectMatch('0.1428571429', '1/7', 'numeric_equal');
    expectMismatch('0.3333', '1/3');
    assert.equal(
      compareAnswers('0.3333', '1/3', { relativeTolerance: 1e-3 }).equal,
      true,
      'the tolerance is configurable',
    );
  });

  it('fractions in every spelling: \\frac, \\dfrac, \\tfrac, a/b, \\frac12, decimals, mixed numbers', () => {
    expectMatch('\\frac{3}{4}', '0.75', 'numeric_equal');
    expectMatch('3/4', '\\dfrac{3}{4}', 'numeric_equal');
    expectMatch('\\tfrac{6}{8}', '\\frac{3}{4}', 'numeric_equal');
    expectMatch('\\frac12', '0.5', 'numeric_equal');
    expectMatch('\\frac{1}{2}', '1/2', 'numeric_equal');
    expectMatch('-\\frac{3}{4}', '-0.75', 'numeric_equal');
    expectMatch('\\frac{-3}{4}', '-0.75', 'numeric_equal');
    expectMatch('2\\frac{1}{2}', '2.5', 'numeric_equal');
    expectMatch('2 1/2', '5/2', 'numeric_equal');
    expectMismatch('\\frac{3}{4}', '\\frac{4}{3}');
    expectMismatch('1/0', '0');
  });

  it('percentages match the number and the fraction', () => {
    expectMatch('75%', '0.75', 'numeric_equal');
    expectMatch('75%', '75', 'numeric_equal');
    expectMatch('75\\%', '3/4', 'numeric_equal');
    expectMismatch('75%', '7.5');
  });

  it('thousands separators (comma, space, thin space) and currency', () => {
    expectMatch('1,000', '1000', 'numeric_equal');
    expectMatch('1,234,567.89', '1234567.89', 'numeric_equal');
    expectMatch('1\\,000', '1000', 'string_equal');
    expectMatch('1 000 000', '1000000', 'string_equal');
    expectMatch('\\$1,250.00', '1250', 'numeric_equal');
    expectMatch('$18', '18', 'string_equal');
  });

  it('unicode minus, vulgar fractions, ×', () => {
    expectMatch('−½', '-0.5', 'numeric_equal');
    expectMatch('-0.5', '−½', 'numeric_equal');
    expectMatch('¾', '0.75', 'numeric_equal');
    expectMatch('2×3', '6', 'numeric_equal');
  });

  it('units in \\text{} or words after a number, degrees', () => {
    expectMatch('5\\text{ cm}', '5', 'string_equal');
    expectMatch('12 apples', '12', 'string_equal');
    expectMatch('7 \\mbox{dollars}', '7', 'string_equal');
    expectMatch('30^\\circ', '30', 'string_equal');
    expectMatch('30^{\\circ}', '30°', 'string_equal');
    // A single letter after a number is a variable, not a unit.
    expectMismatch('2 x', '2');
  });

  it('plainNumber reads only plain numbers', () => {
    assert.deepEqual(plainNumber('1,000'), { value: 1000, percent: false });
    assert.deepEqual(plainNumber('12.5%'), { value: 12.5, percent: true });
    assert.equal(plainNumber('1,00'), undefined);
    assert.equal(plainNumber('2x'), undefined);
    assert.equal(plainNumber('2\\frac{5}{2}'), undefined, 'not a mixed number');
  });
});

describe('answer equivalence: expressions and LaTeX', () => {
  it('constant expressions compare by value', () => {
    expectMatch('2\\sqrt{2}', '\\sqrt{8}', 'numeric_equal');
    expectMatch('\\frac{\\sqrt{3}}{2}', '\\sin(\\pi/3)', 'numeric_equal');
    expectMatch('\\sqrt[3]{27}', '3', 'numeric_equal');
    expectMatch('2^{10}', '1024', 'numeric_equal');
    expectMatch('2^10', '1024', 'numeric_equal');
    expectMatch('\\pi', '3.14159265358979', 'numeric_equal');
    expectMatch('\\log_2 8', '3', 'numeric_equal');
    expectMatch('\\ln e', '1', 'numeric_equal');
    expectMatch('e^{i\\pi}', '-1', 'numeric_equal');
    expectMatch('3+4i', '4i+3', 'numeric_equal');
    expectMismatch('2\\sqrt{3}', '\\sqrt{8}');
  });

  it('expressions with variables compare as functions at seeded points', () => {
    expectMatch('x^2+2x+1', '(x+1)^2', 'symbolic_equal');
    expectMatch('\\left( x+1 \\right)^2', 'x^2 + 2x + 1', 'symbolic_equal');
    expectMatch('2 * x ^ 2 - x - 3', '2x^2 - x - 3', 'symbolic_equal');
    expectMatch('xy', 'yx', 'symbolic_equal');
    expectMatch('2x(x+1)', '2x^2+2x', 'symbolic_equal');
    expectMatch('\\frac{x^2-1}{x-1}', 'x+1', 'symbolic_equal');
    expectMatch('\\sin^2 x + \\cos^2 x', '1', 'symbolic_equal');
    expectMatch('\\dfrac{a}{b} + \\dfrac{c}{b}', '\\frac{a+c}{b}', 'symbolic_equal');
    expectMatch('x_1 + x_2', 'x_{2} + x_{1}', 'symbolic_equal');
    expectMismatch('x^2+2x+1', '(x+1)^3');
    expectMismatch('\\sqrt{x^2}', 'x');
    expectMismatch('x', 'y');
  });

  it('an assignment answers its right-hand side', () => {
    expectMatch('x = 5', '5', 'string_equal');
    expectMatch('x=-\\frac{13}{3}', '-\\frac{13}{3}', 'string_equal');
    expectMatch('y = 2x + 1', '1 + 2x', 'symbolic_equal');
  });

  it('tuples compare in order, bare lists as sets', () => {
    expectMatch('(1, 2)', '(1, 2)', 'string_equal');
    expectMatch('(0.5, 2)', '(\\frac{1}{2}, 2)', 'numeric_equal');
    expectMismatch('(1, 2)', '(2, 1)');
    expectMatch('1, 2', '2, 1', 'numeric_equal');
    expectMatch('-2, 3', '3, -2', 'numeric_equal');
    expectMismatch('1, 2', '1, 2, 3');
    expectMismatch('(1, 2)', '1, 2');
  });

  it('text answers compare as text, case-insensitively for a word', () => {
    expectMatch('yes', 'Yes', 'string_equal');
    expectMatch('\\text{(A)}', 'A', 'string_equal');
    expectMatch('\\textbf{B}', '(B)', 'string_equal');
    expectMismatch('\\text{no}', 'yes');
  });

  it('notation around an answer does not count: delimiters, \\left/\\right, bold, trailing period', () => {
    assert.equal(normalizeAnswer('$\\displaystyle \\frac{1}{2}$.'), '\\frac{1}{2}');
    assert.equal(normalizeAnswer('**42**'), '42');
    assert.equal(normalizeAnswer('\\(x+1\\)'), 'x+1');
    expectMatch('\\[\\dfrac{3}{4}\\]', '0.75', 'numeric_equal');
    expectMatch('\\boxed{\\frac{1}{2}}', '0.5', 'numeric_equal');
    expectMatch('$\\boxed{12}$', '12', 'string_equal');
  });
});

describe('answer equivalence: hostile and unreadable input', () => {
  it('is a mismatch (never an exception) for what neither reader understands', () => {
    expectMismatch('', '5');
    expectMismatch('   ', '5');
    expectMismatch('\\unknowncommand{3}', '3');
    expectMismatch('\\frac{1}{', '1');
    expectMismatch('((((1', '1');
    expectMismatch('[1, 2)', '1');
    expectMismatch('1 = 2', '1');
    expectMismatch('x := 5', '5');
    expectMismatch('import("fs")', '5');
    expectMismatch('createUnit("foo")', '1');
    expectMismatch('evaluate("1+1")', '2');
    expectMismatch('"5"', '5');
    expectMismatch('[5]', '5');
  });

  it('rejects expressions that reach for mathjs built-ins or units', () => {
    // `cm`, `kg` are mathjs units; as letter runs they are products of variables here, never units.
    expectMismatch('5cm', '0.05');
    expectMismatch('f(2)', '4');
    // A variable before parentheses is a product, never a call: x(1) is x.
    expectMatch('x(1)', 'x', 'symbolic_equal');
  });

  it('stays bounded: huge strings, deep braces, deep parentheses, many variables', { timeout: 20_000 }, () => {
    expectMismatch('1'.repeat(5_000), '1');
    expectMismatch(`${'{'.repeat(500)}1${'}'.repeat(500)}`, '1');
    expectMismatch(`\\sqrt{${'\\sqrt{'.repeat(300)}2${'}'.repeat(301)}`, '1');
    expectMismatch(`${'('.repeat(400)}1${')'.repeat(400)}`, '1');
    expectMismatch(`${'\\frac{1}{'.repeat(100)}2${'}'.repeat(100)}`, '1');
    expectMismatch(`${'\\sqrt'.repeat(150)}2`, '1');
    expectMismatch(`${'\\sin'.repeat(200)}x`, '1');
    expectMismatch('a+b+c+d+f+g+h+j', 'j+h+g+f+d+c+b+a + 1');
    expectMismatch('9^9^9^9^9', '1');
    expectMismatch(`${'1,'.repeat(400)}1`, '1');
    // Within the bounds, nesting still works.
    expectMatch(`${'{'.repeat(20)}\\frac{1}{2}${'}'.repeat(20)}`, '0.5', 'numeric_equal');
  });
});

describe('answer equivalence: seeded fuzz', () => {
  const FUZZ_SEED = 1234;
  const PIECES = [
    '\\frac',
    '\\sqrt',
    '\\boxed',
    '\\left(',
    '\\right)',
    '\\text{',
    '{',
    '}',
    '(',
    ')',
    '[',
    ']',
    '^',
    '_',
    '|',
    ',',
    '=',
    '%',
    '\\%',
    '$',
    '1',
    '2.5',
    '-',
    '+',
    '*',
    '/',
    'x',
    'y',
    'e',
    'i',
    'pi',
    '\\pi',
    '\\cdot',
    ' ',
    '\\',
    '∞',
    '½',
    '−',
    '\\sin',
    'sqrt(',
  ];
  it(
    `never throws on random token soup (seed ${FUZZ_SEED}), and a text always equals itself`,
    { timeout: 30_000 },
    () => {
      const random = seededRandom(FUZZ_SEED);
      for (let i = 0; i < 3_000; i++) {
        let text = '';
        const length = 1 + Math.floor(random() * 40);
        for (let j = 0; j < length; j++) text += PIECES[Math.floor(random() * PIECES.length)];
        const verdict = compareAnswers(text, '1');
        assert.ok(typeof verdict.equal === 'boolean', text);
        if (normalizeAnswer(text) !== '') assert.equal(compareAnswers(text, text).equal, true, text);
        extractAnswer(text);
      }
    },
  );
});

describe('LaTeX reader', () => {
  it('translates the answer subset into mathjs syntax', () => {
    assert.equal(latexToExpression('\\frac{a}{b}'), '((a)/(b))');
    assert.equal(latexToExpression('2\\sqrt{2}'), '2 * sqrt(2)');
    assert.equal(latexToExpression('\\sqrt[3]{x}'), 'nthRoot(x, 3)');
    assert.equal(latexToExpression('x^{2}+2x'), 'x^(2) + 2 * x');
    assert.equal(latexToExpression('x(x+1)'), 'x * (x + 1)');
    assert.equal(latexToExpression('|x-1|'), 'abs(x - 1)');
    assert.equal(latexToExpression('3 \\cdot 4 \\div 2'), '3 * 4 / 2');
    assert.equal(latexToExpression('\\sin x'), 'sin(x)');
    assert.equal(latexToExpression('\\log_{2}(8)'), 'log(8, 2)');
  });

  it('throws a LatexError naming what it cannot read', () => {
    assert.throws(
      () => latexToExpression('\\int_0^1 x dx'),
      (err: unknown) => err instanceof LatexError && /\\int/.test(err.message),
    );
    assert.throws(() => latexToExpression('\\{1,2\\}'), /sets/);
    assert.throws(() => latexToExpression('\\frac{1}'), /missing|argument/);
    assert.throws(() => latexToExpression(`${'{'.repeat(100)}1${'}'.repeat(100)}`), /deeper than 64/);
    assert.throws(() => latexToExpression(`${'\\sqrt'.repeat(100)}2`), /deeper than 64/);
    assert.equal(latexToExpression('\\sqrt\\sqrt{16}'), 'sqrt(sqrt(16))');
  });
});
