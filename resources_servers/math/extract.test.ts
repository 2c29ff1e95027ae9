import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { extractAnswer, MAX_SCAN_CHARS, type ExtractionStrategy } from './extract.js';

const found = (text: string, strategies?: ExtractionStrategy[]) => extractAnswer(text, strategies);

describe('answer extraction', () => {
  it('takes the content of \\boxed{…}, nested braces balanced', () => {
    assert.deepEqual(found('So the result is \\boxed{\\frac{3}{4}}.'), { answer: '\\frac{3}{4}', strategy: 'boxed' });
    assert.deepEqual(
      found('$\\boxed{\\dfrac{\\sqrt{2}}{\\left(1+x^{2}\\right)}}$')?.answer,
      '\\dfrac{\\sqrt{2}}{\\left(1+x^{2}\\right)}',
    );
    assert.equal(found('\\fbox{12}')?.answer, '12');
    assert.equal(found('escaped braces \\boxed{\\{1, 2\\}} stay literal')?.answer, '\\{1, 2\\}');
  });

  it('takes the last of several boxed answers', () => {
    assert.equal(found('first \\boxed{1}, then corrected: \\boxed{2}')?.answer, '2');
  });

  it('skips an unclosed \\boxed{ at the end and uses the previous complete one', () => {
    assert.equal(found('\\boxed{7} and then \\boxed{oops')?.answer, '7');
  });

  it('reads \\boxed without braces as one token', () => {
    assert.equal(found('hence \\boxed 5.')?.answer, '5');
    assert.equal(found('\\boxedfoo{3} is another command')?.strategy, 'last_number');
  });

  it('reads a GSM8K #### line', () => {
    assert.deepEqual(found('She has 3 + 4 = 7 left.\n#### 1,234'), { answer: '1,234', strategy: 'hashes' });
  });

  it('reads "Answer: …" and "Final answer: …" lines, markdown bold and trailing period removed', () => {
    assert.deepEqual(found('Work: 6 * 7\nAnswer: 42.'), { answer: '42', strategy: 'answer_line' });
    assert.equal(found('**Final Answer:** $\\frac{1}{2}$')?.answer, '$\\frac{1}{2}$');
    assert.equal(found('**Answer**: 3/4')?.answer, '3/4');
    assert.equal(found('answer: 1\nthen more\nFinal answer: 2')?.answer, '2');
  });

  it('reads "the answer is …" up to the end of the sentence, keeping decimals', () => {
    assert.deepEqual(found('Thus, the answer is 3.5. Let me know.'), { answer: '3.5', strategy: 'the_answer_is' });
    assert.equal(found('I think the final answer is: x = -2')?.answer, 'x = -2');
  });

  it('falls back to the last number (negative, thousands, fraction, percent, unicode minus)', () => {
    assert.deepEqual(found('I got 12 then 15 apples'), { answer: '15', strategy: 'last_number' });
    assert.equal(found('it drops to −4 degrees')?.answer, '-4');
    assert.equal(found('total 1,250.50 dollars')?.answer, '1,250.50');
    assert.equal(found('a ratio of 3/4')?.answer, '3/4');
    assert.equal(found('a rise of 75%')?.answer, '75%');
  });

  it('finds no answer in text without one', () => {
    assert.equal(found('I cannot solve this.'), undefined);
    assert.equal(found(''), undefined);
  });

  it('tries the configured strategies in the configured order', () => {
    const text = 'Answer: 3\nbut \\boxed{4}';
    assert.equal(found(text)?.answer, '4');
    assert.deepEqual(found(text, ['answer_line', 'boxed']), { answer: '3', strategy: 'answer_line' });
    assert.equal(found('the total is 5', ['boxed']), undefined, 'boxed-only is strict');
  });

  // A timeout, not a timing claim: these are linear scans, and a backtracking pattern would hang here.
  it('stays bounded on hostile text: deep braces, megabytes, many boxes', { timeout: 20_000 }, () => {
    assert.equal(found(`\\boxed{${'{'.repeat(200_000)}`)?.answer, undefined);
    assert.equal(found(`${'\\boxed{'.repeat(50_000)}`), undefined);
    const huge = `${'9'.repeat(2_000_000)} the real answer is at the end: \\boxed{17}`;
    assert.equal(found(huge)?.answer, '17');
    const onlyEarly = `\\boxed{1}${' '.repeat(MAX_SCAN_CHARS)}no answer here`;
    assert.equal(found(onlyEarly), undefined, 'only the tail is read');
    assert.equal(found(`Answer: ${'7'.repeat(5_000)}`)?.answer.length, 1001, 'answers are capped');
    assert.equal(found(`Answer:${' \t'.repeat(20_000)}`)?.strategy, undefined);
  });
});
