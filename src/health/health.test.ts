/** The rollout health checks over small run files written into a temp dir, one check (or rule) per test. */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, test } from 'node:test';
import type { Row } from '../runfiles/row.js';
import {
  checkHealth,
  healthLine,
  reportRunHealth,
  runHealthFiles,
  type CheckName,
  type QualitySummary,
} from './health.js';

let dir = '';
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'tsgym-health-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

const USAGE = { input_tokens: 10, output_tokens: 5, total_tokens: 15 };

function answer(text: string): Row {
  return { type: 'message', id: `msg_${Math.random()}`, role: 'assistant', content: [{ type: 'output_text', text }] };
}
const call = (id: string): Row => ({ type: 'function_call', call_id: id, name: 'add', arguments: '{"n":1}' });
const output = (id: string): Row => ({ type: 'function_call_output', call_id: id, output: '{"ok":true}' });

/** A success row: by default a tool call, its output and a final answer, reward 1, complete usage. */
function ok(task: number, rollout: number, extra: { output?: unknown[]; response?: Row; reward?: unknown } = {}): Row {
  return {
    responses_create_params: { input: [{ role: 'user', content: `task ${task}` }] },
    response: {
      id: `resp_${task}_${rollout}`,
      status: 'completed',
      output: extra.output ?? [call(`c${rollout}`), output(`c${rollout}`), answer(`answer ${task}:${rollout}`)],
      usage: USAGE,
      ...extra.response,
    },
    reward: 'reward' in extra ? extra.reward : 1,
    _ng_task_index: task,
    _ng_rollout_index: rollout,
    agent_ref: { name: 'remote_agent' },
  };
}

function failed(task: number, rollout: number, error: string, code?: string): Row {
  return {
    reward: 0,
    error,
    _ng_failure_class: 'remote_agent_error',
    ...(code === undefined ? {} : { _ng_failure_code: code }),
    _ng_task_index: task,
    _ng_rollout_index: rollout,
  };
}

function input(task: number, rollout: number): Row {
  return { responses_create_params: { input: 'x' }, _ng_task_index: task, _ng_rollout_index: rollout };
}

function write(name: string, rows: readonly unknown[]): string {
  const file = path.join(dir, name);
  writeFileSync(file, rows.map((row) => `${typeof row === 'string' ? row : JSON.stringify(row)}\n`).join(''));
  return file;
}

/** Writes the run's files (rollouts always; the others when given) and checks them. */
async function check(rollouts: unknown[], failures?: Row[], inputs?: Row[]): Promise<QualitySummary> {
  const file = write('rollouts.jsonl', rollouts);
  if (failures) write('rollouts_failures.jsonl', failures);
  if (inputs) write('rollouts_materialized_inputs.jsonl', inputs);
  return checkHealth(runHealthFiles(file));
}

function found(summary: QualitySummary): Partial<Record<CheckName, string[]>> {
  const out: Partial<Record<CheckName, string[]>> = {};
  for (const [name, result] of Object.entries(summary.checks))
    if (result.count > 0) out[name as CheckName] = result.examples;
  return out;
}

describe('rollout health', () => {
  test('a clean run: every rollout healthy, every check at 0, the line lists no check', async () => {
    const summary = await check(
      [ok(0, 0), ok(0, 1), ok(1, 0), ok(1, 1)],
      [],
      [input(0, 0), input(0, 1), input(1, 0), input(1, 1)],
    );
    assert.deepEqual(found(summary), {});
    assert.equal(summary.checked, 4);
    assert.equal(summary.healthy, 4);
    assert.equal(summary.unhealthy, 0);
    assert.deepEqual(summary.run.verdicts, { healthy: 4, unhealthy: 0, unobserved: 0 });
    assert.equal(healthLine(summary), 'Rollout health: 4 checked, 4 healthy, 0 unhealthy');
  });

  test('the same task/rollout twice among successes: every copy is unhealthy', async () => {
    const summary = await check([ok(0, 0), ok(0, 1), ok(0, 0), ok(1, 0)]);
    assert.deepEqual(found(summary), { rollout_duplicate_identity: ['0:0'] });
    assert.equal(summary.checks.rollout_duplicate_identity.count, 2);
    assert.equal(summary.checked, 4);
    assert.equal(summary.unhealthy, 2);
  });

  test('a rollout the inputs list with neither a success nor a failure row is missing; one with a failure row failed', async () => {
    const summary = await check(
      [ok(0, 0)],
      [failed(0, 1, 'agent loop failed: HTTP 500')],
      [input(0, 0), input(0, 1), input(1, 0)],
    );
    assert.deepEqual(found(summary), { rollout_missing: ['1:0'], rollout_failed: ['0:1'] });
    assert.equal(summary.checked, 3);
    assert.equal(summary.healthy, 1);
    assert.equal(summary.unhealthy, 2);
  });

  test('a failure row superseded by a success, or of a rollout the inputs do not list, is not counted', async () => {
    const summary = await check(
      [ok(0, 0)],
      [failed(0, 0, 'first attempt failed'), failed(7, 0, 'another run')],
      [input(0, 0)],
    );
    assert.deepEqual(found(summary), {});
    assert.equal(summary.checked, 1);
    assert.equal(summary.run.artifacts.records, 3);
  });

  test("a timeout is the last attempt's code naming one (run_timeout_secs or a call's bound); the message is not read", async () => {
    const summary = await check(
      [],
      [
        failed(0, 0, '/run exceeded run_timeout_secs=5.0s', 'REMOTE_AGENT_RUN_TIMEOUT'),
        failed(1, 0, 'agent loop failed: timed out after 2.0s', 'REMOTE_TIMEOUT'),
        failed(1, 0, 'agent loop failed: HTTP 502', 'REMOTE_HTTP_STATUS'), // the retry failed otherwise
        failed(2, 0, 'agent loop failed: HTTP 500'),
        failed(3, 0, 'the text says timed out, but no code says so'),
        failed(4, 0, 'agent loop failed: timed out after 2.0s', 'REMOTE_TIMEOUT'),
      ],
    );
    assert.deepEqual(found(summary), {
      rollout_failed: ['0:0', '1:0', '2:0', '3:0', '4:0'],
      rollout_timeout: ['0:0', '4:0'],
    });
    assert.equal(summary.checked, 5);
    assert.equal(summary.unhealthy, 5);
  });

  test('a function_call with no later function_call_output of its call_id is unanswered', async () => {
    const summary = await check([
      ok(0, 0),
      ok(1, 0, { output: [call('a'), output('a'), call('b'), answer('done')] }),
      ok(2, 0, { output: [output('a'), call('a'), answer('done')] }), // the output came before the call
    ]);
    assert.deepEqual(found(summary), { rollout_unanswered_tool_call: ['1:0', '2:0'] });
    assert.equal(summary.unhealthy, 2);
  });

  test('an empty final answer: no assistant text after the last tool item, or only whitespace; a refusal is an answer', async () => {
    const refusal = { type: 'message', role: 'assistant', content: [{ type: 'refusal', refusal: 'I cannot.' }] };
    const summary = await check([
      ok(0, 0, { output: [answer(' \n\t')] }),
      ok(1, 0, { output: [answer('an old answer'), call('a'), output('a'), { type: 'reasoning', summary: [] }] }),
      ok(2, 0, { output: [] }),
      ok(3, 0, { output: [refusal] }),
      ok(4, 0, { output: [answer('  42 ')] }),
    ]);
    assert.deepEqual(found(summary), { rollout_empty_final_answer: ['0:0', '1:0', '2:0'] });
  });

  test('a trajectory ending on a tool output ended on max_steps; incomplete_details is reported as such; neither is also an empty answer', async () => {
    const summary = await check([
      ok(0, 0, { output: [call('a'), output('a')] }),
      ok(1, 0, {
        output: [answer('partial')],
        response: { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } },
      }),
      ok(2, 0, { output: [call('a')], response: { incomplete_details: { reason: 'max_output_tokens' } } }),
    ]);
    assert.deepEqual(found(summary), {
      rollout_max_steps: ['0:0'],
      rollout_incomplete: ['1:0', '2:0'],
      rollout_unanswered_tool_call: ['2:0'],
    });
    assert.equal(summary.unhealthy, 3);
  });

  test('identical outputs across all of a task’s repeats are a task warning, which leaves the rollouts healthy', async () => {
    const same = (rollout: number): Row =>
      ok(0, rollout, {
        output: [{ ...call('x'), call_id: `c${rollout}` }, { ...output('x'), call_id: `c${rollout}` }, answer('same')],
      });
    const summary = await check([
      same(0),
      same(1),
      same(2),
      ok(1, 0, { output: [answer('a')] }),
      ok(1, 1, { output: [answer('b')] }),
      ok(2, 0, { output: [answer('alone')] }), // a single repeat says nothing about sampling
    ]);
    assert.deepEqual(found(summary), { task_degenerate_repeats: ['0:*'] });
    assert.equal(summary.checks.task_degenerate_repeats.scope, 'task');
    assert.equal(summary.tasks_with_warnings, 1);
    assert.equal(summary.healthy, 6);
    assert.equal(
      healthLine(summary),
      'Rollout health: 6 checked, 6 healthy, 0 unhealthy (warnings: task_degenerate_repeats 1 task)',
    );
  });

  test('a reward outside [0, 1] or not a finite number', async () => {
    const rewards: unknown[] = [0, 1, 0.5, 1.5, -0.1, '1', true, null, undefined];
    const summary = await check(rewards.map((reward, task) => ok(task, 0, { reward })));
    assert.deepEqual(found(summary), { rollout_reward_out_of_range: ['3:0', '4:0', '5:0', '6:0', '7:0', '8:0'] });
  });

  test('missing or partial usage: absent, null, a count missing or not a number', async () => {
    const summary = await check([
      ok(0, 0),
      ok(1, 0, { response: { usage: undefined } }),
      ok(2, 0, { response: { usage: null } }),
      ok(3, 0, { response: { usage: { input_tokens: 1, output_tokens: 2 } } }),
      ok(4, 0, { response: { usage: { input_tokens: 1, output_tokens: '2', total_tokens: 3 } } }),
    ]);
    assert.deepEqual(found(summary), { rollout_usage_missing: ['1:0', '2:0', '3:0', '4:0'] });
  });

  test('an unreadable line is reported and the scan goes on; the line names every non-zero check', async () => {
    const summary = await check([ok(0, 0), '{"broken": ', ok(1, 0, { reward: 2 }), ok(1, 0)]);
    assert.deepEqual(found(summary), {
      record_unreadable: ['rollouts.jsonl:2'],
      rollout_reward_out_of_range: ['1:0'],
      rollout_duplicate_identity: ['1:0'],
    });
    assert.equal(summary.checked, 4);
    assert.equal(summary.unhealthy, 3);
    assert.equal(
      healthLine(summary),
      'Rollout health: 4 checked, 1 healthy, 3 unhealthy (record_unreadable 1, rollout_duplicate_identity 2, rollout_reward_out_of_range 1)',
    );
  });

  test('examples stop at 10; the summary file is written beside the run and holds no NaN', async () => {
    const rows = Array.from({ length: 25 }, (_, task) => ok(task, 0, { reward: Number.NaN }));
    const file = write('rollouts.jsonl', rows);
    const { summary, path: written } = await reportRunHealth(file);
    assert.equal(written, path.join(dir, 'rollouts_quality_summary.json'));
    const text = readFileSync(written, 'utf8');
    assert.doesNotMatch(text, /NaN|null/);
    assert.deepEqual(JSON.parse(text), summary);
    assert.equal(summary.checks.rollout_reward_out_of_range.count, 25);
    assert.deepEqual(
      summary.checks.rollout_reward_out_of_range.examples,
      Array.from({ length: 10 }, (_, t) => `${t}:0`),
    );
  });
});
