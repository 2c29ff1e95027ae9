/**
 * The math environment end to end through the real CLI: `gym eval run` starting the environment from
 * `configs/math.yaml` with the example solver (every example row at reward 1.0), and `gym env start` +
 * `gym eval run --no-serve` with a scripted service that answers wrongly, not at all, and through the calculator,
 * under a config override that the server honours.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { readJsonl, runGym, spawnGym, tempDir, writeJsonl, type RunningGym } from '../../test/support/cli.js';
import { findFreePort } from '../../src/config/index.js';
import { normalizeInput } from '../../src/service/index.js';
import {
  finalAnswer,
  functionCall,
  startScriptedService,
  toolAsk,
  toolOutputsIn,
  type ScriptedService,
} from '../../src/testing/index.js';
import { DIST_EXAMPLES, spawnService, type SpawnedService } from '../../test/support/examples.js';
import { CALCULATOR_TOOL } from './tools.js';
import { eventually } from '../../test/support/wait.js';

const CONFIG = 'resources_servers/math/configs/math.yaml';
const EXAMPLES = 'resources_servers/math/data/example.jsonl';
const ENV_KEY = 'math_resources_server.resources_servers.math';

const cleanup: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const step of cleanup.reverse()) await step();
});

describe('math environment end to end', () => {
  it('gym eval run with the example solver: every example row at reward 1.0, the verdict in each row', async () => {
    const solver: SpawnedService = await spawnService(process.execPath, [
      `${DIST_EXAMPLES}math-solver/service.js`,
      '--port',
      '0',
    ]);
    cleanup.push(() => solver.close());
    const dir = tempDir('tsgym-math-e2e-');
    const res = await runGym(
      [
        'eval',
        'run',
        `+config_paths=[${CONFIG}]`,
        `++remote_agent.responses_api_agents.remote_agent.agent_base_url=${solver.url}`,
        `++head_server.port=${await findFreePort()}`,
        '-a',
        'remote_agent',
        '-i',
        EXAMPLES,
        '-o',
        'out/rollouts.jsonl',
      ],
      { cwd: dir },
    );
    assert.equal(res.code, 0, `${res.stdout}\n${res.stderr}`);
    const rollouts = readJsonl(path.join(dir, 'out/rollouts.jsonl'));
    assert.equal(rollouts.length, 12);
    for (const row of rollouts) {
      assert.equal(
        row.reward,
        1,
        JSON.stringify({ extracted: row.extracted_answer, expected: row.expected_answer, reason: row.match_reason }),
      );
      assert.equal(typeof row.extracted_answer, 'string');
      assert.ok(['string_equal', 'numeric_equal', 'symbolic_equal'].includes(String(row.match_reason)));
      assert.equal(row.answer_found, 1);
      assert.ok(typeof row.task_type === 'string' && typeof row.expected_answer === 'string');
    }
    const withCalculator = rollouts.filter((row) => row.calculator_calls === 1);
    assert.equal(withCalculator.length, 6, 'arithmetic, percent and word rows went through the calculator tool');
    for (const row of withCalculator) {
      const types = (row.response as { output: Array<{ type: string }> }).output.map((item) => item.type);
      assert.deepEqual(types, ['function_call', 'function_call_output', 'message']);
    }
    assert.equal(readJsonl(path.join(dir, 'out/rollouts_failures.jsonl')).length, 0);
    const metrics = JSON.parse(readFileSync(path.join(dir, 'out/rollouts_aggregate_metrics.json'), 'utf8')) as [
      {
        key_metrics: Record<string, number>;
        agent_metrics: Record<string, number>;
      },
    ];
    assert.equal(metrics[0].key_metrics['mean/reward'], 1);
    assert.equal(metrics[0].agent_metrics['match_reason/mismatch'], 0);
    assert.match(res.stdout, /12 tasks, 12 rollouts expected: 12 completed, 0 failed/);
  });

  it('gym env start + gym eval run --no-serve: wrong, missing and calculator answers, a config override honoured', async () => {
    // Row 0 answers right via the calculator; row 1 wrong; row 2 only in prose (boxed-only config: no answer);
    // row 3 asks the calculator something it refuses, then gives up.
    const service: ScriptedService = await startScriptedService((call) => {
      const question = String(normalizeInput(call.body.input)[0]!.content);
      const outputs = toolOutputsIn(call.body.input);
      if (question.startsWith('Q0')) {
        if (outputs.length === 0)
          return toolAsk(functionCall('calculator', { expression: '(13 + 52) * 3 - 82' }, 'calc_0'));
        return finalAnswer(`\\boxed{${(JSON.parse(outputs[0]!.output) as { result: number }).result}}`);
      }
      if (question.startsWith('Q1')) return finalAnswer('I believe it is \\boxed{\\frac{4}{3}}.');
      if (question.startsWith('Q2')) return finalAnswer('The answer is 168.');
      if (outputs.length === 0) return toolAsk(functionCall('calculator', { expression: 'import("fs")' }, 'calc_3'));
      return finalAnswer(`The calculator said ${outputs[0]!.output}; I give up.`);
    });
    cleanup.push(() => service.close());
    const dir = tempDir('tsgym-math-env-');
    const rows = ['113', '\\frac{3}{4}', '168', '7'].map((expected, index) => ({
      responses_create_params: {
        input: [{ role: 'user', content: `Q${index}: compute it.` }],
        tools: [CALCULATOR_TOOL],
      },
      expected_answer: expected,
    }));
    writeJsonl(path.join(dir, 'in.jsonl'), rows);
    const headPort = await findFreePort();
    const env: RunningGym = spawnGym(
      [
        'env',
        'start',
        `+config_paths=[${CONFIG}]`,
        `++remote_agent.responses_api_agents.remote_agent.agent_base_url=${service.url}`,
        `++${ENV_KEY}.answer_extraction=[boxed]`,
        `++head_server.port=${headPort}`,
      ],
      { cwd: dir },
    );
    let stdout = '';
    env.child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    const exited = env.result;
    cleanup.push(async () => {
      if (env.child.exitCode === null) env.child.kill('SIGINT');
      await exited;
    });
    await eventually(() => /All 2 \/ 2 servers ready/.test(stdout) || env.child.exitCode !== null, {
      what: () => `the environment to be ready (so far:\n${stdout}\n${env.stderr()})`,
      timeoutMs: 120_000,
    });
    assert.match(stdout, /All 2 \/ 2 servers ready/, env.stderr());

    const res = await runGym(
      [
        'eval',
        'run',
        '--no-serve',
        '+agent_name=remote_agent',
        '+input_jsonl_fpath=in.jsonl',
        '+output_jsonl_fpath=out.jsonl',
        `++head_server.port=${headPort}`,
      ],
      { cwd: dir },
    );
    assert.equal(res.code, 0, `${res.stdout}\n${res.stderr}`);
    const byTask = new Map(readJsonl(path.join(dir, 'out.jsonl')).map((row) => [row._ng_task_index, row]));
    assert.equal(byTask.size, 4);
    const verdict = (task: number) => {
      const row = byTask.get(task)!;
      return [row.reward, row.match_reason, row.extracted_answer, row.calculator_calls];
    };
    assert.deepEqual(verdict(0), [1, 'string_equal', '113', 1]);
    assert.deepEqual(verdict(1), [0, 'mismatch', '\\frac{4}{3}', 0]);
    assert.deepEqual(
      verdict(2),
      [0, 'no_answer_found', null, 0],
      'answer_extraction=[boxed] from the override reached the server',
    );
    assert.deepEqual(verdict(3), [0, 'no_answer_found', null, 1]);
    const refusal = (byTask.get(3)!.response as { output: Array<{ type: string; output?: string }> }).output.find(
      (item) => item.type === 'function_call_output',
    );
    assert.match(String(refusal?.output), /the function 'import' is not allowed/);
    assert.match(res.stdout, /Mean reward 0\.2500 over 4 completed/);

    env.child.kill('SIGINT');
    const stopped = await exited;
    assert.ok(
      stopped.code === 0 || stopped.code === 130,
      `gym env start ended with ${stopped.code}: ${stopped.stderr}`,
    );
  });

  it('gym env start refuses a wrong config value with a sentence naming the key', async () => {
    const dir = tempDir('tsgym-math-badconfig-');
    const res = await runGym(
      [
        'env',
        'start',
        `+config_paths=[${CONFIG}]`,
        `++${ENV_KEY}.relative_tolerance=-1`,
        `++head_server.port=${await findFreePort()}`,
      ],
      { cwd: dir },
    );
    assert.equal(res.code, 1);
    assert.match(
      res.stderr,
      /math_resources_server\.resources_servers\.math\.relative_tolerance is -1, but it must be a number ≥ 0 and < 1/,
    );
    assert.doesNotMatch(res.stderr, /\n\s+at .*\.js:\d+/, 'no stack trace');
  });
});
