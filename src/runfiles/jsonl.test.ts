/** Streaming JSONL, torn tails, the compact key tables and globs. */
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { tempDir } from '../../test/support/cli.js';
import { expandGlob } from '../collect/glob.js';
import { holdsRows, readRawLines, scanRowsFile, type RawLine } from './jsonl.js';
import { LineIndexTable, RolloutKeyTable, TaskCounters } from './key-tables.js';

/** Each line decoded as it arrives: `bytes` is only valid until the next line is read. */
async function lines(file: string): Promise<Array<Omit<RawLine, 'bytes'> & { text: string }>> {
  const out: Array<Omit<RawLine, 'bytes'> & { text: string }> = [];
  for await (const { bytes, ...line } of readRawLines(file)) out.push({ ...line, text: bytes.toString('utf8') });
  return out;
}

describe('readRawLines', () => {
  test('numbers lines, keeps byte offsets, strips CR, and flags an unterminated last line', async () => {
    const file = path.join(tempDir(), 'f.jsonl');
    writeFileSync(file, '{"a":1}\r\n\n{"é":2}\n{"b"');
    const got = await lines(file);
    assert.deepEqual(
      got.map((l) => [l.lineNo, l.start, l.text, l.terminated]),
      [
        [1, 0, '{"a":1}', true],
        [2, 9, '', true],
        [3, 10, '{"é":2}', true],
        [4, 19, '{"b"', false],
      ],
    );
  });

  test('lines longer than a read chunk come back whole', async () => {
    const file = path.join(tempDir(), 'long.jsonl');
    const big = JSON.stringify({ text: 'x'.repeat(1_500_000) });
    writeFileSync(file, `${big}\n${big}\n`);
    const got = await lines(file);
    assert.equal(got.length, 2);
    assert.equal(got[1]!.text, big);
    assert.equal(got[1]!.start, big.length + 1);
  });
});

describe('scanRowsFile', () => {
  test('skips blank lines and reports a torn tail (unterminated, or an unparsable last line)', async () => {
    const dir = tempDir();
    const a = path.join(dir, 'a.jsonl');
    writeFileSync(a, '{"k":1}\n\n{"k":2}\n{"k":');
    const rows: unknown[] = [];
    assert.deepEqual(await scanRowsFile(a, (row) => rows.push(row)), { torn: { lineNo: 4, start: 17 } });
    assert.deepEqual(rows, [{ k: 1 }, { k: 2 }]);

    const b = path.join(dir, 'b.jsonl');
    writeFileSync(b, '{"k":1}\n{"k"\n');
    assert.deepEqual(await scanRowsFile(b, () => {}), { torn: { lineNo: 2, start: 8 } });
  });

  test('a bad line that is not the last is damage, reported as file:line', async () => {
    const file = path.join(tempDir(), 'c.jsonl');
    writeFileSync(file, '{"k":1}\nnot json\n{"k":2}\n');
    await assert.rejects(
      scanRowsFile(file, () => {}),
      /c\.jsonl:2: malformed JSONL line/,
    );
  });

  test('holdsRows ignores whitespace-only files', () => {
    const dir = tempDir();
    writeFileSync(path.join(dir, 'blank'), ' \n\n');
    writeFileSync(path.join(dir, 'full'), '\n{}\n');
    assert.equal(holdsRows(path.join(dir, 'blank')), false);
    assert.equal(holdsRows(path.join(dir, 'full')), true);
    assert.equal(holdsRows(path.join(dir, 'absent')), false);
  });
});

describe('key tables', () => {
  test('RolloutKeyTable stores and grows for many keys, including negative and huge task indices', () => {
    const table = new RolloutKeyTable();
    for (let task = 0; task < 5000; task++)
      for (let rollout = 0; rollout < 4; rollout++) table.set(task, rollout, task * 4 + rollout);
    table.set(-3, 0, 7);
    table.set(2 ** 40 + 5, 1, 9);
    assert.equal(table.size, 20002);
    assert.equal(table.get(4999, 3), 4999 * 4 + 3);
    assert.equal(table.get(-3, 0), 7);
    assert.equal(table.get(2 ** 40 + 5, 1), 9);
    assert.equal(table.get(5000, 0), undefined);
    let seenHuge = false;
    table.forEach((task, rollout, value) => {
      if (task === 2 ** 40 + 5 && rollout === 1 && value === 9) seenHuge = true;
    });
    assert.ok(seenHuge);
  });

  test('LineIndexTable gives byte-identical lines one index, in order of first appearance', () => {
    const index = new LineIndexTable();
    const ids = ['a', 'b', 'a', 'c', 'b'].map((text) => index.indexOf(Buffer.from(text)));
    assert.deepEqual(ids, [0, 1, 0, 2, 1]);
  });

  test('TaskCounters count per task, dense or sparse', () => {
    const counters = new TaskCounters();
    assert.deepEqual(
      [counters.next(3), counters.next(3), counters.next(-1), counters.next(10_000_000), counters.next(3)],
      [0, 1, 0, 0, 2],
    );
    assert.equal(counters.distinct, 3);
  });
});

describe('expandGlob', () => {
  test('matches *, ?, [..] and ** segments, skips dot files, sorts', () => {
    const dir = tempDir();
    mkdirSync(path.join(dir, 'r', 'deep'), { recursive: true });
    for (const name of ['r/a-1.jsonl', 'r/a-0.jsonl', 'r/b-0.jsonl', 'r/.a-2.jsonl', 'r/deep/a-9.jsonl'])
      writeFileSync(path.join(dir, name), '');
    const cwd = process.cwd();
    process.chdir(dir);
    try {
      assert.deepEqual(expandGlob('r/a-*.jsonl'), ['r/a-0.jsonl', 'r/a-1.jsonl']);
      assert.deepEqual(expandGlob('r/[ab]-0.jsonl'), ['r/a-0.jsonl', 'r/b-0.jsonl']);
      assert.deepEqual(expandGlob('r/?-1.jsonl'), ['r/a-1.jsonl']);
      assert.deepEqual(expandGlob('r/**/a-*.jsonl'), ['r/a-0.jsonl', 'r/a-1.jsonl', 'r/deep/a-9.jsonl']);
      assert.deepEqual(expandGlob(path.join(dir, 'r', 'b-*.jsonl')), [path.join(dir, 'r', 'b-0.jsonl')]);
      assert.deepEqual(expandGlob('r/none-*.jsonl'), []);
    } finally {
      process.chdir(cwd);
    }
  });
});
