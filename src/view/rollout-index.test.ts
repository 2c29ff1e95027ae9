import assert from 'node:assert/strict';
import { appendFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { tempDir } from '../../test/support/cli.js';
import { RolloutIndex } from './rollout-index.js';
import { skimRow } from './skim.js';
import { failure, success } from '../../test/support/view-runs.js';

const line = (row: unknown): string => `${JSON.stringify(row)}\n`;
const message = [{ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'ok' }] }];

test('the index tails its files: appended rows are added, a torn tail waits, a replaced file is indexed again', async () => {
  const dir = tempDir('tsgym-index-');
  const file = path.join(dir, 'run.jsonl');
  writeFileSync(file, line(success(0, 0, 1, message)) + line(success(1, 0, 0, message)));
  const index = new RolloutIndex(file);
  await index.refresh();
  assert.equal(index.size, 2);
  const generation = index.generation;

  // Nothing changed: nothing re-read, the generation stays.
  await index.refresh();
  assert.equal(index.generation, generation);

  // A torn tail is not indexed (and is reported), then picked up once whole, with the line numbers continuing.
  const third = line(success(2, 0, 0.5, message));
  appendFileSync(file, third.slice(0, 40));
  await index.refresh();
  assert.equal(index.size, 2);
  assert.deepEqual(
    index.skipped.map((s) => [s.line, s.reason.slice(0, 21)]),
    [[3, 'incomplete last line ']],
  );
  appendFileSync(file, third.slice(40) + line(success(3, 0, 1, message)));
  await index.refresh();
  assert.equal(index.size, 4);
  assert.deepEqual(index.skipped, []);
  assert.equal(index.find('main', 3)?.reward, 0.5);
  assert.equal(index.find('main', 4)?.task, 3);

  // The sidecar appears later; its rows join the order before a success of the same key.
  appendFileSync(path.join(dir, 'run_failures.jsonl'), line({ ...failure(1, 0, 'boom', false), _ng_attempt_index: 0 }));
  await index.refresh();
  assert.ok(index.failuresPresent);
  assert.deepEqual(
    [...index.order()].map((id) => {
      const e = index.entry(id);
      return `${String(e.task)}:${e.source}`;
    }),
    ['0:main', '1:failures', '1:main', '2:main', '3:main'],
  );
  assert.equal(index.counts.failed, 1);
  assert.equal(index.entry(index.order()[1]!).failureClass, 'remote_agent_error');

  // Replaced by a shorter file (a new run): everything is indexed again from the start.
  const fresh = path.join(dir, 'fresh.jsonl');
  writeFileSync(fresh, line(success(7, 0, 1, message)));
  renameSync(fresh, file);
  await index.refresh();
  assert.equal(index.counts.ok, 1);
  assert.deepEqual(
    [...index.order()].map((id) => index.entry(id).task),
    [1, 7],
  );
});

test('the skimmer reads the same fields JSON.parse does, and gives up (to JSON.parse) on what it cannot follow', () => {
  const rows = [
    {
      reward: 0.25,
      _ng_task_index: 3,
      _ng_rollout_index: 1,
      agent_ref: { name: 'a"b\\' },
      response: { output: [{ text: 'he said "}]\\" {' }], usage: { total_tokens: 9 } },
    },
    {
      'we\\ird"key': [1, { x: '\\\\' }],
      _ng_failure_class: 'c',
      _ng_failure_terminal: true,
      _ng_partial_response: { usage: null },
      response: null,
    },
    { nested: { reward: 5 }, reward: true, _ng_step_latency_secs: [0.1, 2e-3] },
  ];
  for (const row of rows) {
    const skimmed = skimRow(Buffer.from(JSON.stringify(row)));
    assert.ok(skimmed, JSON.stringify(row));
    for (const key of [
      'reward',
      '_ng_task_index',
      '_ng_rollout_index',
      'agent_ref',
      '_ng_failure_class',
      '_ng_failure_terminal',
    ] as const) {
      assert.deepEqual(skimmed[key], (row as Record<string, unknown>)[key], key);
    }
    const response = (row as { response?: unknown }).response;
    if (response && typeof response === 'object')
      assert.deepEqual(skimmed.response?.usage, (response as { usage?: unknown }).usage);
  }
  for (const bad of [
    '{"a": 1',
    '[1, 2]',
    '{"a": 1} trailing',
    '{"a" 1}',
    '{"a": "unterminated}',
    '',
    '{"a": tru}',
    '{"a": -}',
    '{"a": NaN}',
  ]) {
    assert.equal(skimRow(Buffer.from(bad)), undefined, bad);
  }
});
