import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { validateCreateParams } from '../../../src/contract/index.js';
import { counterRowLines, parseArgs, writeCounterRows, type CounterRow } from './generate.js';

describe('counter data generator', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tsgym-generate-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('writes the requested number of rows, identical for the same seed', async () => {
    const first = path.join(dir, 'a.jsonl');
    const second = path.join(dir, 'b.jsonl');
    await writeCounterRows(first, 2_500, 7);
    await writeCounterRows(second, 2_500, 7);
    const text = readFileSync(first, 'utf8');
    assert.equal(text, readFileSync(second, 'utf8'));
    assert.equal(text.split('\n').filter(Boolean).length, 2_500);
    assert.ok(text.endsWith('\n'));
  });

  it('writes different rows for a different seed', () => {
    const a = [...counterRowLines(20, 1)];
    const b = [...counterRowLines(20, 2)];
    assert.notDeepEqual(a, b);
  });

  it('writes rows in the example shape whose expected count follows from the prompt', () => {
    for (const line of counterRowLines(200, 3)) {
      const row = JSON.parse(line) as CounterRow;
      assert.deepEqual(Object.keys(row), ['responses_create_params', 'expected_count', 'initial_count']);
      assert.ok(validateCreateParams(row.responses_create_params).ok);
      assert.deepEqual(
        row.responses_create_params.tools.map((t) => t.name),
        ['increment_counter', 'get_counter_value'],
      );
      const match = /^add (\d+) then add (\d+) then get the count$/.exec(row.responses_create_params.input[0]!.content);
      assert.ok(match);
      assert.equal(row.expected_count, row.initial_count + Number(match[1]) + Number(match[2]));
    }
  });

  it('parses its flags and rejects unknown ones', () => {
    assert.deepEqual(parseArgs(['--rows', '10', '--out=x.jsonl', '--seed', '4']), {
      rows: 10,
      out: 'x.jsonl',
      seed: 4,
    });
    assert.throws(() => parseArgs(['--rows', '10']), /--out/);
    assert.throws(() => parseArgs(['--out', 'x', '--rows', '-1']), /non-negative/);
    assert.throws(() => parseArgs(['--out', 'x', '--bogus', '1']), /unknown argument/);
  });
});
