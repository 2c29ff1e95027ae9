import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { createWorkplaceServer } from '../../resources_servers/workplace/app.js';
import type { WorkplaceRow } from '../../resources_servers/workplace/scripts/generate.js';
import type { ConversationItem, DecideContext, FunctionTool } from '../../src/service/index.js';
import { runAgentCheck } from '../../src/check/agent-check.js';
import { loadRowProbes } from '../../src/check/row-probes.js';
import {
  AGENT_CHECK_DEADLINES,
  DIST_EXAMPLES,
  REPO_ROOT,
  runDatasetRollouts,
  spawnService,
} from '../../test/support/examples.js';
import { createWorkplaceSolver, parseWorkplaceRequest, startWorkplaceSolverService } from './index.js';

const DATA = `${REPO_ROOT}resources_servers/workplace/data/`;
const ctx = {} as DecideContext;

function rowsOf(file: string): WorkplaceRow[] {
  return readFileSync(`${DATA}${file}`, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as WorkplaceRow);
}

function rollouts(serviceUrl: string, file: string) {
  return runDatasetRollouts(serviceUrl, {
    environment: createWorkplaceServer,
    environmentName: 'workplace_resources_server',
    dataset: `${DATA}${file}`,
    maxSteps: 40,
  });
}

describe('workplace solver (deterministic, no model)', () => {
  test('understands one script per sub-task of every example and validation row', () => {
    for (const row of [...rowsOf('example.jsonl'), ...rowsOf('validation.jsonl')]) {
      assert.equal(
        parseWorkplaceRequest(row.responses_create_params.input[1]!.content).length,
        row.subtasks.length,
        row.task_id,
      );
    }
  });

  test('looks things up first, acts on what the tools said, then reports', async () => {
    const row = rowsOf('example.jsonl')[1]!; // "Mark my task … as done."
    const solve = createWorkplaceSolver();
    const tools = row.responses_create_params.tools as FunctionTool[];
    const conversation: ConversationItem[] = [...row.responses_create_params.input];
    assert.deepEqual(await solve(conversation, tools, ctx), {
      toolCalls: [{ name: 'list_tasks', arguments: { status: 'all' } }],
    });
    const target = row.office.tasks.find(
      (task) => task.id === (row.expected_changes[0] as { task_id: string }).task_id,
    )!;
    conversation.push(
      { type: 'function_call', call_id: 'a', name: 'list_tasks', arguments: '{"status":"all"}' },
      {
        type: 'function_call_output',
        call_id: 'a',
        output: JSON.stringify({ tasks: row.office.tasks.map((task) => ({ ...task, due_date: task.due })) }),
      },
    );
    assert.deepEqual(await solve(conversation, tools, ctx), {
      toolCalls: [{ name: 'complete_task', arguments: { task_id: target.id } }],
    });
    conversation.push(
      { type: 'function_call', call_id: 'b', name: 'complete_task', arguments: JSON.stringify({ task_id: target.id }) },
      { type: 'function_call_output', call_id: 'b', output: '{"task":{},"already_completed":false}' },
    );
    assert.deepEqual(await solve(conversation, tools, ctx), { final: `Done: completed ${target.title}.` });
  });

  test('reports what it could not do instead of guessing', async () => {
    const solve = createWorkplaceSolver();
    const ask: ConversationItem = { role: 'user', content: 'Mark my task "Water the plants" as done.' };
    const listed: ConversationItem[] = [
      ask,
      { type: 'function_call', call_id: 'a', name: 'list_tasks', arguments: '{"status":"all"}' },
      { type: 'function_call_output', call_id: 'a', output: '{"tasks":[]}' },
    ];
    assert.deepEqual(await solve(listed, [{ type: 'function', name: 'list_tasks' }], ctx), {
      final: 'Done: could not finish: found no task Water the plants.',
    });
    assert.match(((await solve([ask], [], ctx)) as { final: string }).final, /does not declare list_tasks/);
    assert.match(
      ((await solve([{ role: 'user', content: 'hello' }], [], ctx)) as { final: string }).final,
      /understood no request/,
    );
  });

  test('scores 1.0 on every example row through the remote agent and the real workplace environment', async (t) => {
    const service = await startWorkplaceSolverService({ port: 0 });
    try {
      const results = await rollouts(service.url, 'example.jsonl');
      if ('unavailable' in results) return t.skip(results.unavailable);
      assert.deepEqual(results.rewards, [1, 1, 1, 1, 1, 1, 1]);
      for (const row of results.rows) {
        assert.equal(row.state_checks_passed, row.state_checks_total);
        assert.equal(row.unexpected_changes, 0);
        assert.equal(row.office, undefined, 'the office stays out of the rollout row');
      }
    } finally {
      await service.close();
    }
  });

  test('scores 1.0 on all 200 validation rows', async (t) => {
    const service = await startWorkplaceSolverService({ port: 0 });
    try {
      const results = await rollouts(service.url, 'validation.jsonl');
      if ('unavailable' in results) return t.skip(results.unavailable);
      assert.equal(results.rewards.length, 200);
      const failed = results.rows
        .filter((row) => row.reward !== 1)
        .map(
          (row) =>
            `${String(row.task_id)}: ${JSON.stringify(row.failed_checks)} ${JSON.stringify(row.unexpected_change_details)}`,
        );
      assert.deepEqual(failed, []);
    } finally {
      await service.close();
    }
  });

  test('runs with one command and passes gym agent check --rows on the example rows', async () => {
    const service = await spawnService(process.execPath, [
      `${DIST_EXAMPLES}workplace-solver/service.js`,
      '--port',
      '0',
    ]);
    try {
      assert.match(service.output(), /workplace-solver \(deterministic, no model\) listening on/);
      const report = await runAgentCheck(service.url, {
        ...AGENT_CHECK_DEADLINES,
        rows: await loadRowProbes(`${DATA}example.jsonl`),
      });
      const rowProbes = report.checks.find((check) => check.name === 'row-probes');
      assert.equal(rowProbes?.status, 'pass', JSON.stringify(rowProbes));
      assert.deepEqual(
        report.checks
          .filter((check) => check.status === 'fail' || check.status === 'warn')
          .map((check) => `${check.name}: ${check.detail}`),
        [],
      );
    } finally {
      await service.close();
    }
  });
});
