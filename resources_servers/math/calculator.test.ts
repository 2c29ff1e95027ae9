import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { calculate } from './calculator.js';
import { evaluateSafe, ExpressionError, parseSafe } from './expression.js';

describe('calculator tool', () => {
  it('evaluates arithmetic with operators, parentheses, powers and functions', () => {
    assert.deepEqual(calculate('(17 + 5) * 3'), { result: '66' });
    assert.deepEqual(calculate('2^10 / 4'), { result: '256' });
    assert.deepEqual(calculate('30 / 100 * 560'), { result: '168' }, 'float noise is rounded away');
    assert.deepEqual(calculate('0.1 + 0.2'), { result: '0.3' });
    assert.deepEqual(calculate('sqrt(2)'), { result: '1.41421356237' });
    assert.deepEqual(calculate('sin(pi / 6)'), { result: '0.5' });
    assert.deepEqual(calculate('-3 - 4'), { result: '-7' });
    assert.deepEqual(calculate('sqrt(-4)'), { result: '2i' });
    assert.deepEqual(calculate('nthRoot(27, 3)'), { result: '3' });
  });

  it('answers a readable error (not a failure) for what it does not evaluate', () => {
    assert.match((calculate('x + 1') as { error: string }).error, /numbers only; 'x' is a variable/);
    assert.match((calculate('1 / 0') as { error: string }).error, /not a finite number/);
    assert.match((calculate('') as { error: string }).error, /empty/);
    assert.match((calculate('2 +') as { error: string }).error, /cannot parse/);
    assert.match((calculate('1'.repeat(501)) as { error: string }).error, /longer than 500/);
  });

  it('reaches nothing outside the expression: no imports, units, assignment, strings, matrices', () => {
    for (const hostile of [
      'import({}, {override: true})',
      'createUnit("x")',
      'evaluate("1+1")',
      'parse("1")',
      'a = 5',
      'f(x) = x',
      '"text"',
      '[1, 2]',
      '5 cm',
      '1:3',
      'x ? 1 : 2',
      '3 == 3',
      '7 mod 2',
      'cos.constructor("return process")()',
      'sqrt(1, 2)',
    ]) {
      const result = calculate(hostile);
      assert.ok('error' in result, `${hostile} → ${JSON.stringify(result)}`);
    }
  });

  it('bounds nesting and size before mathjs parses', () => {
    assert.match((calculate(`${'('.repeat(100)}1${')'.repeat(100)}`) as { error: string }).error, /deeper than 64/);
    assert.match(
      (calculate(Array.from({ length: 220 }, () => '1').join('+')) as { error: string }).error,
      /more than 400 parts/,
    );
  });
});

describe('safe expressions', () => {
  it('lists free variables and needs a value for each', () => {
    const expression = parseSafe('x^2 + y_1 * pi');
    assert.deepEqual(expression.variables, ['x', 'y_1']);
    assert.deepEqual(evaluateSafe(expression, { x: 2, y_1: 0 }), { re: 4, im: 0 });
    assert.throws(
      () => evaluateSafe(expression, { x: 2 }),
      (err: unknown) => err instanceof ExpressionError && /y_1/.test(err.message),
    );
  });

  it('binds single-letter unit names as variables, never as mathjs units', () => {
    const expression = parseSafe('5 m');
    assert.deepEqual(expression.variables, ['m']);
    assert.deepEqual(evaluateSafe(expression, { m: 2 }), { re: 10, im: 0 });
    assert.throws(() => parseSafe('5 cm'), /'cm' is not a variable/);
  });
});
