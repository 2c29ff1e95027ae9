import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, test } from 'node:test';
import { validateCreateParams } from '../../../src/contract/index.js';
import { OfficeSchema, weekdayOf } from '../office.js';
import { ExpectedChangesSchema } from '../verify.js';
import { exampleRows, generateRows, parseArgs, rowsToJsonl, type WorkplaceRow } from './generate.js';
import { SUBTASK_ACTIONS } from './subtasks.js';
import { dateMentions, timeMentions } from './vocabulary.js';

const DATA = fileURLToPath(new URL('../../../../resources_servers/workplace/data/', import.meta.url));
const SCRIPT = fileURLToPath(new URL('./generate.js', import.meta.url));
/** The seeds the shipped files were written with (the README's commands). */
const EXAMPLE_SEED = 1;
const VALIDATION_SEED = 12;

describe('workplace task generator', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tsgym-workplace-gen-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  test(`the shipped data is exactly what the generator writes (example seed ${EXAMPLE_SEED}, validation seed ${VALIDATION_SEED})`, () => {
    assert.equal(readFileSync(path.join(DATA, 'example.jsonl'), 'utf8'), rowsToJsonl(exampleRows(EXAMPLE_SEED)));
    assert.equal(
      readFileSync(path.join(DATA, 'validation.jsonl'), 'utf8'),
      rowsToJsonl(generateRows(200, VALIDATION_SEED)),
    );
  });

  test('same seed, same rows; another seed, other rows', () => {
    assert.equal(rowsToJsonl(generateRows(20, 5)), rowsToJsonl(generateRows(20, 5)));
    assert.notEqual(rowsToJsonl(generateRows(20, 5)), rowsToJsonl(generateRows(20, 6)));
  });

  test('difficulty is the number of required changes, from 1 to 5, evenly spread over the validation set', () => {
    const rows = generateRows(200, VALIDATION_SEED);
    const perLevel = new Map<number, number>();
    for (const row of rows) {
      assert.equal(row.expected_changes.length, row.difficulty, row.task_id);
      assert.equal(
        row.subtasks.reduce((sum, kind) => sum + SUBTASK_ACTIONS[kind], 0),
        row.difficulty,
      );
      assert.ok(row.subtasks.length >= 1 && row.subtasks.length <= 3);
      perLevel.set(row.difficulty, (perLevel.get(row.difficulty) ?? 0) + 1);
    }
    assert.deepEqual([...perLevel.entries()].sort(), [
      [1, 40],
      [2, 40],
      [3, 40],
      [4, 40],
      [5, 40],
    ]);
    for (const level of [1, 2, 3, 4, 5]) assert.ok(generateRows(10, 3, level).every((row) => row.difficulty === level));
    assert.deepEqual(
      exampleRows(EXAMPLE_SEED)
        .map((row) => row.difficulty)
        .sort(),
      [1, 1, 2, 3, 3, 4, 5],
    );
  });

  test('every row is valid: contract params, office, expected changes pointing at real ids, today a Monday', () => {
    for (const row of [...exampleRows(EXAMPLE_SEED), ...generateRows(200, VALIDATION_SEED)]) {
      assert.ok(validateCreateParams(row.responses_create_params).ok, row.task_id);
      assert.ok(OfficeSchema.safeParse(row.office).success, row.task_id);
      assert.ok(ExpectedChangesSchema.safeParse(row.expected_changes).success, row.task_id);
      assert.equal(weekdayOf(row.office.today), 'Monday');
      assertIdsExist(row);
      assertUnique(row);
    }
  });

  test('distractors are planted: look-alike names, the same meeting on another day, similar task titles', () => {
    const rows = generateRows(200, VALIDATION_SEED);
    const withKind = (kind: string) => rows.filter((row) => row.subtasks.includes(kind as never));
    for (const row of withKind('reschedule_notify')) {
      const target = row.expected_changes.find((change) => change.kind === 'event_updated')!;
      const event = row.office.events.find((candidate) => candidate.id === (target as { event_id: string }).event_id)!;
      assert.ok(
        row.office.events.filter((other) => other.title === event.title).length >= 2,
        `${row.task_id}: a same-titled decoy`,
      );
    }
    for (const row of withKind('complete_task')) {
      const target = row.expected_changes.find((change) => change.kind === 'task_completed') as { task_id: string };
      const title = row.office.tasks.find((task) => task.id === target.task_id)!.title;
      const words = new Set(title.toLowerCase().split(' '));
      const shared = (other: string) =>
        other
          .toLowerCase()
          .split(' ')
          .filter((word) => words.has(word)).length;
      assert.ok(
        row.office.tasks.some((task) => task.id !== target.task_id && shared(task.title) >= 2),
        `${row.task_id}: a look-alike of '${title}'`,
      );
    }
    // Every target person comes with two look-alikes.
    const names = rows[0]!.office.contacts.map((contact) => contact.name);
    assert.ok(names.length >= 9, names.join(', '));
  });

  test('dates and times are accepted in the forms people write them', () => {
    assert.deepEqual(dateMentions('2026-03-13'), ['2026-03-13', 'March 13', '13 March', 'Mar 13', '13 Mar', 'Friday']);
    assert.deepEqual(timeMentions('14:00'), [
      '14:00',
      '2 pm',
      '2pm',
      '2 p.m.',
      '2p.m.',
      '2:00 pm',
      '2:00pm',
      '2:00 p.m.',
      '2:00p.m.',
    ]);
    assert.deepEqual(timeMentions('09:30'), ['09:30', '9:30', '9:30 am', '9:30am', '9:30 a.m.', '9:30a.m.']);
    assert.ok(timeMentions('12:00').includes('12 pm'));
  });

  test('the CLI writes the file and prints the seed; bad arguments exit 2 with the usage', () => {
    const out = path.join(dir, 'v.jsonl');
    const printed = execFileSync(
      process.execPath,
      [SCRIPT, '--rows', '12', '--seed', '4', '--difficulty', '3', '--out', out],
      { encoding: 'utf8' },
    );
    assert.match(printed, /Wrote 12 rows to .*v\.jsonl \(seed 4\)/);
    assert.equal(readFileSync(out, 'utf8'), rowsToJsonl(generateRows(12, 4, 3)));
    const bad = spawnSync(process.execPath, [SCRIPT, '--difficulty', '6', '--out', out], { encoding: 'utf8' });
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /--difficulty must be 1, 2, 3, 4 or 5, got '6'\nUsage:/);
    const piped = spawnSync(process.execPath, [SCRIPT, '--rows', '3', '--seed', '9'], { encoding: 'utf8' });
    assert.equal(piped.status, 0, piped.stderr);
    assert.equal(piped.stdout, rowsToJsonl(generateRows(3, 9)));
    assert.match(piped.stderr, /Wrote 3 rows to stdout \(seed 9\)/);
    assert.throws(() => parseArgs(['--rows', '3', '--out=']), /--out needs a path/);
    assert.throws(() => parseArgs(['--example', '--rows', '3', '--out', 'x']), /drop --rows/);
    assert.throws(() => parseArgs(['--colour', 'red']), /unknown argument '--colour'/);
  });
});

function assertIdsExist(row: WorkplaceRow): void {
  const events = new Set(row.office.events.map((event) => event.id));
  const tasks = new Set(row.office.tasks.map((task) => task.id));
  for (const change of row.expected_changes) {
    if (change.kind === 'event_updated' || change.kind === 'event_deleted')
      assert.ok(events.has(change.event_id), `${row.task_id}: ${change.event_id}`);
    if (change.kind === 'task_completed') assert.ok(tasks.has(change.task_id), `${row.task_id}: ${change.task_id}`);
  }
}

function assertUnique(row: WorkplaceRow): void {
  for (const list of [row.office.contacts, row.office.events, row.office.emails, row.office.tasks]) {
    assert.equal(new Set(list.map((item) => item.id)).size, list.length, row.task_id);
  }
  assert.equal(
    new Set(row.office.contacts.map((contact) => contact.email)).size,
    row.office.contacts.length,
    row.task_id,
  );
}
