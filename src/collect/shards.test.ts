/** `gym eval aggregate` through the real CLI: two shards aggregate to exactly the single-run metrics. */
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fakeReply, fakeResponse, startFakeAgent, startFakeHead, type FakeHead } from '../testing/fake-agent.js';
import type { Row } from '../runfiles/row.js';
import { keysOf, readJsonl, runGym, tempDir, writeJsonl } from '../../test/support/cli.js';

const open: Array<{ close(): Promise<void> }> = [];
let head: FakeHead;
let dir = '';
const file = (name: string): string => path.join(dir, name);

before(async () => {
  const agent = await startFakeAgent('my_agent', (row) => {
    const task = row._ng_task_index as number;
    const rollout = row._ng_rollout_index as number;
    if (task === 4 && rollout === 1) return fakeReply.failure(row, 'flaky');
    const reward = (task + rollout) % 3 === 0 ? 1 : 0;
    return fakeReply.success(row, reward, {
      response: fakeResponse({
        input_tokens: 10 + task,
        output_tokens: 5 + rollout,
        total_tokens: 15 + task + rollout,
      }),
    });
  });
  head = await startFakeHead([agent]);
  open.push(agent, head);
  dir = tempDir('tsgym-shards-');
  // Globally stable task indices, pre-stamped, so each shard numbers its tasks like the whole would.
  const rows = Array.from({ length: 6 }, (_, task) => ({
    responses_create_params: { input: `task ${task}` },
    _ng_task_index: task,
  }));
  writeJsonl(file('all.jsonl'), rows);
  writeJsonl(file('s0.jsonl'), rows.slice(0, 3));
  writeJsonl(file('s1.jsonl'), rows.slice(3));
  const collect = async (input: string, output: string, extra: string[] = []): Promise<void> => {
    const res = await runGym(
      [
        'eval',
        'run',
        '--no-serve',
        '-a',
        'my_agent',
        '-i',
        input,
        '-o',
        output,
        '--num-repeats',
        '2',
        ...extra,
        `++head_server.port=${head.port}`,
      ],
      { cwd: dir },
    );
    assert.equal(res.code, 0, res.stderr);
  };
  await collect('all.jsonl', 'single/r.jsonl');
  await collect('s0.jsonl', 'shards/a-0.jsonl', ['--disable-aggregation']);
  await collect('s1.jsonl', 'shards/a-1.jsonl', ['--disable-aggregation']);
});

after(async () => {
  for (const server of open) await server.close();
});

const metricsOf = (name: string): unknown => JSON.parse(readFileSync(file(name), 'utf8'));

test('two shards merged and aggregated through the agents equal the single run', async () => {
  const res = await runGym(
    [
      'eval',
      'aggregate',
      '--input-glob',
      'shards/a-*.jsonl',
      '-o',
      'merged/m.jsonl',
      `++head_server.port=${head.port}`,
    ],
    { cwd: dir },
  );
  assert.equal(res.code, 0, res.stderr);
  assert.match(res.stderr, /Skipping shards\/a-0_failures\.jsonl: it is a sidecar or materialized-inputs file/);
  assert.match(
    res.stdout,
    /Finished rollout aggregation! View results at:\nMerged rollouts: merged\/m\.jsonl\nAggregate metrics: merged\/m_aggregate_metrics\.json/,
  );
  // Health over the merged file with each shard's sidecar and inputs: the one failed rollout (4:1); the fake agent
  // answers every repeat alike, a warning for each task with two completed repeats.
  assert.match(
    res.stdout,
    /\nRollout health: 12 checked, 11 healthy, 1 unhealthy \(rollout_failed 1; warnings: task_degenerate_repeats 5 tasks\)\n/,
  );
  assert.match(res.stdout, /\nQuality summary: merged\/m_quality_summary\.json\n/);

  const merged = readJsonl(file('merged/m.jsonl'));
  const single = readJsonl(file('single/r.jsonl'));
  assert.deepEqual(
    merged.map((r) => `${r._ng_task_index as number}:${r._ng_rollout_index as number}`),
    keysOf(single),
    'merged rows are sorted by (task, rollout) and are exactly the single run’s',
  );
  const singleMetrics = metricsOf('single/r_aggregate_metrics.json') as Row[];
  assert.deepEqual(metricsOf('merged/m_aggregate_metrics.json'), singleMetrics);
  // The counts come from the shards' sidecars and materialized inputs, so the failure is still counted.
  assert.deepEqual((singleMetrics[0]!.rollout_counts as Row).failed_retryable_rollouts, 1);
  assert.match(
    res.stdout,
    /6 tasks, 12 rollouts expected: 11 completed, 1 failed \(1 retryable, 0 terminal\), 0 missing/,
  );
});

test('without a head server the metrics are computed locally, with the same numbers', async () => {
  const down = await startFakeHead([]);
  const port = down.port;
  await down.close();
  const res = await runGym(
    [
      'eval',
      'aggregate',
      '-i',
      'shards/a-0.jsonl, shards/a-1.jsonl',
      '-o',
      'local/m.jsonl',
      `++head_server.port=${port}`,
    ],
    { cwd: dir },
  );
  assert.equal(res.code, 0, res.stderr);
  assert.match(res.stdout, /is not reachable; computing aggregate metrics locally/);
  assert.deepEqual(metricsOf('local/m_aggregate_metrics.json'), metricsOf('single/r_aggregate_metrics.json'));
});

test('overlapping shards are refused, naming both places', async () => {
  mkdirSync(file('overlap'), { recursive: true });
  copyFileSync(file('shards/a-0.jsonl'), file('overlap/x.jsonl'));
  copyFileSync(file('shards/a-0.jsonl'), file('overlap/y.jsonl'));
  const res = await runGym(
    ['eval', 'aggregate', '-i', 'overlap/*.jsonl', '-o', 'overlap-merged.jsonl', `++head_server.port=${head.port}`],
    { cwd: dir },
  );
  assert.equal(res.code, 1);
  assert.match(res.stderr, /Rollout key \(\d+, \d\) appears twice: overlap\/x\.jsonl:\d+ and overlap\/y\.jsonl:\d+/);
  const none = await runGym(
    ['eval', 'aggregate', '-i', 'nothing-*.jsonl', '-o', 'n.jsonl', `++head_server.port=${head.port}`],
    { cwd: dir },
  );
  assert.equal(none.code, 1);
  assert.match(none.stderr, /No shards matched input_glob='nothing-\*\.jsonl'/);
  mkdirSync(file('merged-dir'), { recursive: true });
  const intoDirectory = await runGym(
    ['eval', 'aggregate', '-i', 'shards/a-0.jsonl', '-o', 'merged-dir', `++head_server.port=${head.port}`],
    { cwd: dir },
  );
  assert.equal(intoDirectory.code, 1);
  assert.match(intoDirectory.stderr, /^Error: Output 'merged-dir' \(--output\) is a directory; name a file in it/m);
  assert.doesNotMatch(intoDirectory.stderr, /EISDIR|unexpected/);
});
