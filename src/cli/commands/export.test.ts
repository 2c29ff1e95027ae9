/**
 * `gym eval export` through the real CLI, on a rollouts file in the shape `src/training/rebuild.ts` leaves rows in:
 * token fields on the items a model call generated, `mask_sample` and `_ng_token_capture` on a row it could not use.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { readJsonl, runGym, tempDir, writeJsonl } from '../../../test/support/cli.js';
import type { AtifStep, AtifTrajectory } from '../../training/atif.js';

/**
 * Two calls, append-only: the first prompt [1, 2, 3] generates a tool call [10, 11]; the tool's result adds the
 * interstitial tokens [20, 21]; the second call generates the answer [30, 31, 32].
 */
function trainableRow(task: number, rollout: number, reward: number): Record<string, unknown> {
  return {
    responses_create_params: { input: [{ role: 'user', content: 'count to one' }] },
    response: {
      id: `resp_${task}_${rollout}`,
      model: 'policy',
      status: 'completed',
      output: [
        {
          type: 'function_call',
          call_id: 'call_1',
          name: 'increment',
          arguments: '{"by":1}',
          prompt_token_ids: [1, 2, 3],
          generation_token_ids: [10, 11],
          generation_log_probs: [-0.1, -0.2],
        },
        { type: 'function_call_output', call_id: 'call_1', output: '1' },
        {
          type: 'message',
          role: 'assistant',
          content: [{ type: 'output_text', text: 'done' }],
          prompt_token_ids: [1, 2, 3, 10, 11, 20, 21],
          generation_token_ids: [30, 31, 32],
          generation_log_probs: [-0.3, -0.4, -0.5],
        },
      ],
      usage: { input_tokens: 10, output_tokens: 5, total_tokens: 15, input_tokens_details: { cached_tokens: 3 } },
    },
    reward,
    _ng_task_index: task,
    _ng_rollout_index: rollout,
    _ng_token_capture: { builder: 'prefix_merging', n_calls: 2, roots: 1, chains: 1 },
  };
}

function maskedRow(task: number, rollout: number): Record<string, unknown> {
  const row = trainableRow(task, rollout, 1);
  const response = row.response as { output: Record<string, unknown>[] };
  response.output = response.output.map(
    ({ prompt_token_ids: _p, generation_token_ids: _g, generation_log_probs: _l, ...item }) => item,
  );
  return {
    ...row,
    mask_sample: true,
    _ng_token_capture: { builder: 'prefix_merging', n_calls: 2, error: 'model call 1 (x) failed: stream_cut' },
  };
}

function textOnlyRow(task: number, rollout: number): Record<string, unknown> {
  return {
    response: { id: 'r', output: [{ type: 'message', role: 'assistant', content: 'no capture' }] },
    reward: 0,
    _ng_task_index: task,
    _ng_rollout_index: rollout,
  };
}

const ROWS = [
  trainableRow(0, 0, 1),
  trainableRow(0, 1, 0),
  trainableRow(0, 2, 0.5),
  trainableRow(1, 0, 1),
  maskedRow(1, 1),
  textOnlyRow(2, 0),
];

function runDir(rows: readonly unknown[] = ROWS): string {
  const dir = tempDir('tsgym-export-');
  writeJsonl(path.join(dir, 'rollouts.jsonl'), rows);
  return dir;
}

describe('gym eval export --format trainer', () => {
  it('writes one sample per trainable rollout: full sequence, mask and log-probs aligned; skips counted', async () => {
    const dir = runDir();
    const result = await runGym(['eval', 'export', 'rollouts.jsonl', '--format', 'trainer', '-o', 'train.jsonl'], {
      cwd: dir,
    });
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /Exported 4 of 6 rollouts as trainer samples to train\.jsonl; skipped 2\./);
    assert.match(result.stdout, /skipped 1: mask_sample: true/);
    assert.match(result.stdout, /skipped 1: no token fields/);

    const samples = readJsonl(path.join(dir, 'train.jsonl'));
    assert.deepEqual(
      samples.map((s) => [s.task_index, s.rollout_index, s.group_index, s.reward]),
      [
        [0, 0, 0, 1],
        [0, 1, 0, 0],
        [0, 2, 0, 0.5],
        [1, 0, 1, 1],
      ],
    );
    const [first] = samples as [{ input_ids: number[]; loss_mask: number[]; logprobs: number[]; advantage?: number }];
    assert.deepEqual(first.input_ids, [1, 2, 3, 10, 11, 20, 21, 30, 31, 32]);
    assert.deepEqual(first.loss_mask, [0, 0, 0, 1, 1, 0, 0, 1, 1, 1]);
    assert.deepEqual(first.logprobs, [0, 0, 0, -0.1, -0.2, 0, 0, -0.3, -0.4, -0.5]);
    assert.equal(first.advantage, undefined, 'no advantage unless asked for');
    for (const s of samples as { input_ids: unknown[]; loss_mask: unknown[]; logprobs: unknown[] }[]) {
      assert.equal(s.loss_mask.length, s.input_ids.length);
      assert.equal(s.logprobs.length, s.input_ids.length);
    }
    assert.deepEqual(readdirSync(dir).sort(), ['rollouts.jsonl', 'train.jsonl'], 'no temporary file left');
  });

  it('--advantages grpo: (reward − group mean) ÷ (population std + 1e-6) per task', async () => {
    const dir = runDir();
    const args = ['eval', 'export', 'rollouts.jsonl', '--format', 'trainer', '-o', 'train.jsonl'];
    const result = await runGym([...args, '--advantages', 'grpo'], { cwd: dir });
    assert.equal(result.code, 0, result.stderr);
    const advantages = readJsonl(path.join(dir, 'train.jsonl')).map((s) => s.advantage as number);
    // Task 0: rewards 1, 0, 0.5 → mean 0.5, std √(1/6) = 0.408248…; task 1 exports one rollout → std 0, advantage 0.
    const expected = [1.2247418713989375, -1.2247418713989375, 0, 0];
    assert.equal(advantages.length, expected.length);
    advantages.forEach((a, i) => assert.ok(Math.abs(a - expected[i]!) < 1e-9, `advantage ${i}: ${a}`));
  });

  it('a malformed line in the middle is one paragraph naming file:line, and no output is written', async () => {
    const dir = tempDir('tsgym-export-');
    const good = JSON.stringify(trainableRow(0, 0, 1));
    writeFileSync(path.join(dir, 'rollouts.jsonl'), `${good}\n{"reward": 1,\n${good}\n`);
    const result = await runGym(['eval', 'export', 'rollouts.jsonl', '--format', 'trainer', '-o', 'train.jsonl'], {
      cwd: dir,
    });
    assert.equal(result.code, 1);
    assert.match(result.stderr, /^Error: rollouts\.jsonl:2: malformed JSONL line/);
    assert.equal(result.stderr.trim().split('\n').length, 1, result.stderr);
    assert.doesNotMatch(result.stderr, /\n\s+at /);
    assert.deepEqual(readdirSync(dir), ['rollouts.jsonl'], 'neither the output nor its temporary file');
  });

  it('a missing rollouts file is an error naming it', async () => {
    const dir = tempDir('tsgym-export-');
    const result = await runGym(['eval', 'export', 'nope.jsonl', '--format', 'trainer', '-o', 'train.jsonl'], {
      cwd: dir,
    });
    assert.equal(result.code, 1);
    assert.match(result.stderr, /^Error: nope\.jsonl: no such rollouts file/);
    assert.equal(existsSync(path.join(dir, 'train.jsonl')), false);
  });

  for (const args of [
    ['--format', 'parquet', '-o', 'out.jsonl'],
    ['-o', 'out.jsonl'],
    ['--format', 'trainer'],
    ['--format', 'trainer', '-o', 'out.jsonl', '--advantages', 'ppo'],
    ['--format', 'atif', '-o', 'out.jsonl', '--advantages', 'grpo'],
  ]) {
    it(`refuses ${args.join(' ')} with exit 2`, async () => {
      const dir = runDir();
      const result = await runGym(['eval', 'export', 'rollouts.jsonl', ...args], { cwd: dir });
      assert.equal(result.code, 2, result.stderr);
      assert.match(result.stderr, /gym: error: /);
      assert.equal(existsSync(path.join(dir, 'out.jsonl')), false);
    });
  }
});

describe('gym eval export --format atif', () => {
  it('one ATIF-v1.7 trajectory per rollout, token metrics on the generating steps only of trainable rows', async () => {
    const dir = runDir([trainableRow(0, 0, 1), maskedRow(1, 1)]);
    const result = await runGym(['eval', 'export', 'rollouts.jsonl', '--format', 'atif', '-o', 'atif.jsonl'], {
      cwd: dir,
    });
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /Exported 2 of 2 rollouts as ATIF-v1\.7 trajectories to atif\.jsonl; skipped 0\./);
    const [trajectory, masked] = readJsonl(path.join(dir, 'atif.jsonl')) as unknown as [AtifTrajectory, AtifTrajectory];
    assert.equal(trajectory.schema_version, 'ATIF-v1.7');
    assert.equal(trajectory.agent.model_name, 'policy');
    assert.deepEqual(
      trajectory.steps.map((s) => [s.step_id, s.source, s.message]),
      [
        [1, 'user', 'count to one'],
        [2, 'agent', ''],
        [3, 'agent', 'done'],
      ],
    );
    const [, call, answer] = trajectory.steps as [unknown, AtifStep, AtifStep];
    assert.deepEqual(call.tool_calls, [{ tool_call_id: 'call_1', function_name: 'increment', arguments: { by: 1 } }]);
    assert.deepEqual(call.observation, { results: [{ source_call_id: 'call_1', content: '1' }] });
    assert.deepEqual(call.metrics, {
      prompt_tokens: 3,
      completion_tokens: 2,
      prompt_token_ids: [1, 2, 3],
      completion_token_ids: [10, 11],
      logprobs: [-0.1, -0.2],
    });
    assert.deepEqual(answer.metrics?.completion_token_ids, [30, 31, 32]);
    assert.deepEqual(answer.metrics?.logprobs, [-0.3, -0.4, -0.5]);
    assert.deepEqual(trajectory.final_metrics, {
      total_prompt_tokens: 10,
      total_completion_tokens: 5,
      total_cached_tokens: 3,
      total_steps: 3,
    });
    assert.deepEqual(trajectory.extra, { task_index: 0, rollout_index: 0, reward: 1 });
    assert.equal(
      masked.steps.some((s) => s.metrics !== undefined),
      false,
    );
    assert.equal(masked.extra.mask_sample, true);
  });
});
