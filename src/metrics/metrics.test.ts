/** The metrics library against hand-computed values (docs/design.md: "Profile statistics" to "pass@k …"). */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { computeAggregateMetrics } from './metrics.js';
import { addAvgSampleStdDev, computePassMajorityMetrics, computeSubsetMetrics, highestKMetrics } from './pass-at-k.js';
import { describe as describeStats, numericFields } from './stats.js';

const SQRT_HALF = Math.sqrt(0.5);
const close = (actual: unknown, expected: number, what: string): void => {
  assert.equal(typeof actual, 'number', `${what} is a number`);
  const value = actual as number;
  assert.ok(Math.abs(value - expected) < 1e-9, `${what}: ${value} ≈ ${expected}`);
};

const usage = (input: number, output: number) => ({
  usage: {
    input_tokens: input,
    output_tokens: output,
    total_tokens: input + output,
    input_tokens_details: { cached_tokens: 0 },
  },
});

describe('computeAggregateMetrics', () => {
  test('no results → empty metrics', () => {
    assert.deepEqual(computeAggregateMetrics([]), { group_level_metrics: [], agent_metrics: {}, key_metrics: {} });
  });

  // Deliberately out of order: the answer must not depend on arrival order.
  const results = [
    { _ng_task_index: 1, _ng_rollout_index: 1, reward: 0, passed: false, response: usage(4, 2) },
    { _ng_task_index: 0, _ng_rollout_index: 0, reward: 1.0, passed: true, note: 'ignored', response: usage(2, 2) },
    { _ng_task_index: 1, _ng_rollout_index: 0, reward: 1, passed: true, response: usage(6, 2) },
  ];

  test('per task and overall mean/max/min/median/sample std of every numeric field, usage included', () => {
    const m = computeAggregateMetrics(results);
    assert.deepEqual(
      m.group_level_metrics.map((g) => g._ng_task_index),
      [0, 1],
    );
    const [task0, task1] = m.group_level_metrics as [Record<string, unknown>, Record<string, unknown>];
    // A single rollout: every std is undefined, so the fully present columns get 0.
    assert.equal(task0['std/reward'], 0);
    assert.equal(task0['std/input_tokens'], 0);
    assert.equal(task0['mean/reward'], 1);
    close(task1['std/reward'], SQRT_HALF, 'task 1 std/reward');
    close(task1['std/input_tokens'], Math.SQRT2, 'task 1 std/input_tokens');
    assert.equal(task1['std/output_tokens'], 0);
    assert.equal(task1['median/total_tokens'], 7);
    assert.equal(task1['mean/passed'], 0.5);
    assert.deepEqual(Object.keys(task1).slice(0, 6), [
      '_ng_task_index',
      'mean/reward',
      'mean/passed',
      'mean/input_tokens',
      'mean/output_tokens',
      'mean/total_tokens',
    ]);
    assert.deepEqual(task1.sample, { agent_ref: { name: 'agent' } });
    assert.equal(task1.num_rollouts, 2);
    assert.equal(task1.reward_profile_completion_pct, 100);
    assert.deepEqual(task1.rollout_infos, [
      {
        rollout_id: '1:0',
        _ng_task_index: 1,
        _ng_rollout_index: 0,
        reward: 1,
        input_tokens: 6,
        output_tokens: 2,
        total_tokens: 8,
        passed: 1,
      },
      {
        rollout_id: '1:1',
        _ng_task_index: 1,
        _ng_rollout_index: 1,
        reward: 0,
        input_tokens: 4,
        output_tokens: 2,
        total_tokens: 6,
        passed: 0,
      },
    ]);

    close(m.agent_metrics['mean/reward'], 2 / 3, 'agent mean/reward');
    assert.equal(m.agent_metrics['median/reward'], 1);
    close(m.agent_metrics['std/reward'], Math.sqrt(1 / 3), 'agent std/reward');
    assert.equal(m.agent_metrics['mean/input_tokens'], 4);
    assert.equal(m.agent_metrics['std/input_tokens'], 2);
    assert.equal(m.agent_metrics['max/total_tokens'], 8);
    assert.equal(m.agent_metrics['mean/_ng_task_index'], undefined, 'the indices are keys, not columns');
    const statOrder = Object.keys(m.agent_metrics).map((key) => key.split('/')[0]);
    assert.deepEqual([...new Set(statOrder)], ['mean', 'max', 'min', 'median', 'std']);
    assert.deepEqual(Object.keys(m.key_metrics), [
      'mean/reward',
      'mean/passed',
      'mean/input_tokens',
      'mean/output_tokens',
      'mean/total_tokens',
    ]);
    assert.deepEqual(computeAggregateMetrics([...results].reverse()), m);
  });

  test('an undefined std is omitted when other stds in the group are defined, and a column missing from a group has no stats there', () => {
    const stats = describeStats([{ reward: 1, score: 3 }, { reward: 0 }], ['reward', 'score']);
    close(stats['std/reward'], SQRT_HALF, 'std/reward');
    assert.equal(stats['std/score'], undefined);
    assert.equal(stats['mean/score'], 3);
    const single = describeStats([{ reward: 1 }], ['reward', 'score']);
    assert.equal(single['std/reward'], 0);
    assert.equal(single['std/score'], undefined);
    assert.equal(single['mean/score'], undefined);
  });

  test('numericFields keeps numbers and booleans, drops strings and objects, and lets usage win a clash', () => {
    assert.deepEqual(
      numericFields({
        reward: true,
        a: 'x',
        b: null,
        c: [1],
        d: 2.5,
        response: { usage: { input_tokens: 3, d: 9, input_tokens_details: { cached_tokens: 1 } } },
      }),
      {
        reward: 1,
        d: 9,
        input_tokens: 3,
      },
    );
  });

  test('a computeMetrics hook sees tasks in order, its per_task_metrics land on the groups, the rest on agent_metrics', () => {
    let seen: unknown;
    const m = computeAggregateMetrics(results, (tasks) => {
      seen = tasks.map((task) => task.map((r) => r._ng_rollout_index));
      return { 'pass@1/accuracy': 50, per_task_metrics: [{ _ng_task_index: 1, hard: true }] };
    });
    assert.deepEqual(seen, [[0], [0, 1]]);
    assert.equal(m.agent_metrics['pass@1/accuracy'], 50);
    assert.equal(m.agent_metrics.per_task_metrics, undefined);
    assert.equal(m.group_level_metrics[1]!.hard, true);
    assert.equal(m.group_level_metrics[0]!.hard, undefined);
    assert.equal(m.key_metrics['pass@1/accuracy'], undefined);
  });

  test('duplicate rollout keys are refused', () => {
    assert.throws(
      () => computeAggregateMetrics([{ reward: 1 }, { reward: 0 }]),
      /Duplicate result row for rollout key \(0, 0\)/,
    );
  });
});

describe('pass@k helpers', () => {
  const tasks = [
    [{ reward: 1 }, { reward: 0 }, { reward: 0 }],
    [{ reward: 0 }, { reward: 0 }, { reward: 1 }],
  ];

  test('binary scores: unbiased pass@k, pass@1[avg-of-k], per-sample aggregate and spread across runs', () => {
    const result = computePassMajorityMetrics(tasks);
    const m = result.metrics;
    close(m['pass@1/accuracy'], 100 / 3, 'pass@1');
    close(m['pass@2/accuracy'], 200 / 3, 'pass@2');
    close(m['pass@3/accuracy'], 100, 'pass@3');
    close(m['pass@1[avg-of-1]/accuracy'], 50, 'avg-of-1');
    close(m['pass@1[avg-of-2]/accuracy'], 25, 'avg-of-2');
    close(m['pass@1[avg-of-3]/accuracy'], 100 / 3, 'avg-of-3');
    assert.deepEqual(m.per_sample_aggregate, { accuracy: [50, 0, 50] });
    close(m['pass@1[avg-of-2]/accuracy/std_dev_across_runs'], Math.sqrt(1250), 'std dev k=2');
    close(m['pass@1[avg-of-3]/accuracy/std_dev_across_runs'], Math.sqrt(2500 / 3), 'std dev k=3');
    close(m['pass@1[avg-of-3]/accuracy/std_err_across_runs'], Math.sqrt(2500 / 3) / Math.sqrt(3), 'std err k=3');
    addAvgSampleStdDev(result);
    close(m['pass@1[avg-of-2]/accuracy/avg_sample_std_dev'], SQRT_HALF / 2, 'avg sample std k=2');
    close(m['pass@1[avg-of-3]/accuracy/avg_sample_std_dev'], Math.sqrt(1 / 3), 'avg sample std k=3');
    assert.deepEqual(highestKMetrics(m, 'pass@{k}'), { 'pass@3/accuracy': 100 });
    assert.deepEqual(Object.keys(highestKMetrics(m, 'pass@1[avg-of-{k}]')), ['pass@1[avg-of-3]/accuracy']);
  });

  test('continuous scores use max of the first k; tasks with fewer than k rollouts are skipped', () => {
    const m = computePassMajorityMetrics([[{ reward: 0.2 }, { reward: 0.9 }], [{ reward: 0.5 }]]).metrics;
    close(m['pass@1/accuracy'], 35, 'pass@1');
    close(m['pass@2/accuracy'], 90, 'pass@2 over the one task with 2 rollouts');
  });

  test('majority@k and no_answer with an answer key', () => {
    const m = computePassMajorityMetrics(
      [
        [
          { reward: 1, answer: 'A' },
          { reward: 0, answer: 'B' },
          { reward: 1, answer: 'A' },
          { reward: 0, answer: null },
        ],
      ],
      { answerKey: 'answer' },
    ).metrics;
    assert.equal(m['majority@1/accuracy'], 100);
    assert.equal(m['majority@2/accuracy'], 50);
    assert.equal(m['majority@3/accuracy'], 100);
    assert.equal(m['majority@4/accuracy'], 100);
    assert.equal(m['pass@1[avg-of-4]/no_answer'], 25);
  });

  test('subset metrics are prefixed by the subset value', () => {
    const m = computeSubsetMetrics([[{ reward: 1, level: 'easy' }], [{ reward: 0, level: 'hard' }]], 'level');
    assert.equal(m['easy/pass@1/accuracy'], 100);
    assert.equal(m['hard/pass@1/accuracy'], 0);
    assert.equal(m['easy/per_sample_aggregate'], undefined);
  });
});
