/**
 * The workplace environment end to end through the real CLI: `gym env start` launches the environment and the
 * remote agent from `configs/workplace.yaml` as child processes, `gym eval run --no-serve` collects the example
 * rows against the deterministic solver (every row 1.0), and Ctrl-C stops everything. A second run, started by
 * `gym eval run` itself, drives an agent that forgets to send e-mails: its rows score 0 with partial credit, and
 * the aggregate metrics say so.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { createWorkplaceSolver, startWorkplaceSolverService } from '../../examples/workplace-solver/index.js';
import { readJsonl, runGym, runRemoteAgentEval, tempDir } from '../../test/support/cli.js';
import { findFreePort } from '../../src/config/index.js';
import { serve } from '../../src/service/index.js';
import { GYM_BIN } from '../../test/support/environments.js';
import { eventually } from '../../test/support/wait.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const CONFIG = path.join(ROOT, 'resources_servers/workplace/configs/workplace.yaml');
const EXAMPLES = path.join(ROOT, 'resources_servers/workplace/data/example.jsonl');
const AGENT_URL = '++remote_agent.responses_api_agents.remote_agent.agent_base_url';

test('gym env start + gym eval run --no-serve: the solver scores 1.0 on every example row', async () => {
  const service = await startWorkplaceSolverService({ port: 0 });
  const dir = tempDir('tsgym-workplace-e2e-');
  const headPort = await findFreePort();
  const env = spawn(
    process.execPath,
    [
      GYM_BIN,
      'env',
      'start',
      `+config_paths=[${CONFIG}]`,
      `${AGENT_URL}=${service.url}`,
      `++head_server.port=${headPort}`,
    ],
    {
      cwd: dir,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  env.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  env.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = new Promise<number | null>((resolve) => env.once('exit', (code) => resolve(code)));
  try {
    await eventually(() => /All 2 \/ 2 servers ready/.test(stdout) || env.exitCode !== null, {
      what: () => `gym env start to report ready (so far:\n${stdout}\n${stderr})`,
      timeoutMs: 120_000,
    });
    assert.match(stdout, /All 2 \/ 2 servers ready/, `${stdout}\n${stderr}`);
    assert.match(stdout, /workplace_resources_server/);

    const res = await runRemoteAgentEval(headPort, EXAMPLES, 'out/rollouts.jsonl', { cwd: dir });
    assert.equal(res.code, 0, `${res.stdout}\n${res.stderr}`);
    assert.match(res.stdout, /7 tasks, 7 rollouts expected: 7 completed, 0 failed/);
    assert.match(res.stdout, /Mean reward 1\.0000 over 7 completed/);
    const rollouts = readJsonl(path.join(dir, 'out/rollouts.jsonl'));
    assert.equal(rollouts.length, 7);
    for (const row of rollouts) {
      assert.equal(row.reward, 1);
      assert.equal(row.state_checks_passed, row.state_checks_total);
      assert.equal(row.unexpected_changes, 0);
      assert.equal('expected_changes' in row, false, 'the answer key stays out of the rollout row');
      assert.equal('office' in row, false);
    }
    const metrics = JSON.parse(readFileSync(path.join(dir, 'out/rollouts_aggregate_metrics.json'), 'utf8')) as [
      {
        key_metrics: Record<string, number>;
      },
    ];
    assert.equal(metrics[0].key_metrics['mean/reward'], 1);
    // The materialized inputs keep the full rows, answer key included, for anyone auditing a score.
    assert.ok(
      readJsonl(path.join(dir, 'out/rollouts_materialized_inputs.jsonl')).every((row) =>
        Array.isArray(row.expected_changes),
      ),
    );
  } finally {
    env.kill('SIGINT');
    assert.equal(await exited, 0, stderr);
    await service.close();
  }
});

test('an agent that forgets the e-mails: reward 0 on those rows, partial credit visible in the metrics', async () => {
  const solve = createWorkplaceSolver();
  const forgetful = await serve(
    async (conversation, tools, ctx) => {
      const decision = await solve(conversation, tools, ctx);
      if (!('toolCalls' in decision)) return decision;
      const calls = decision.toolCalls.filter((call) => call.name !== 'send_email');
      return calls.length > 0 ? { toolCalls: calls } : { final: 'All done (no e-mails sent).' };
    },
    { port: 0, host: '127.0.0.1', brainName: 'forgetful' },
  );
  try {
    const dir = tempDir('tsgym-workplace-e2e-');
    const res = await runGym(
      [
        'eval',
        'run',
        `+config_paths=[${CONFIG}]`,
        `${AGENT_URL}=${forgetful.url}`,
        `++head_server.port=${await findFreePort()}`,
        '-a',
        'remote_agent',
        '-i',
        EXAMPLES,
        '-o',
        'out/r.jsonl',
      ],
      { cwd: dir },
    );
    assert.equal(res.code, 0, `${res.stdout}\n${res.stderr}`);
    const rollouts = readJsonl(path.join(dir, 'out/r.jsonl'));
    assert.equal(rollouts.length, 7);
    for (const row of rollouts) {
      const needsEmail = (row.subtasks as string[]).some(
        (kind) => kind.endsWith('_notify') || kind === 'share_location',
      );
      assert.equal(row.reward, needsEmail ? 0 : 1, String(row.task_id));
      if (needsEmail) {
        assert.ok((row.state_checks_passed as number) < (row.state_checks_total as number));
        assert.ok(
          (row.failed_checks as string[]).every((line) => /e-mail sent to .*: no e-mail was sent/.test(line)),
          JSON.stringify(row.failed_checks),
        );
      }
    }
    const metrics = JSON.parse(readFileSync(path.join(dir, 'out/r_aggregate_metrics.json'), 'utf8')) as [
      {
        key_metrics: Record<string, number>;
        agent_metrics: Record<string, number>;
      },
    ];
    const fraction = metrics[0].agent_metrics['mean/state_check_fraction'] as number;
    assert.ok(fraction > 0 && fraction < 1, `mean/state_check_fraction ${fraction}`);
    assert.equal(metrics[0].agent_metrics['mean/unexpected_changes'], 0);
    assert.ok(
      (metrics[0].agent_metrics['mean/reward'] as number) < fraction,
      'exact-match reward sits below the partial credit',
    );
    // Per difficulty: the one-change rows without e-mail pass, the five-change row (two e-mails) does not.
    assert.equal(metrics[0].key_metrics['mean/reward@difficulty_5'], 0);
    assert.equal(metrics[0].key_metrics['mean/state_check_fraction@difficulty_5'], 0.6);
    assert.equal(metrics[0].key_metrics['mean/reward@difficulty_1'], 1);
  } finally {
    await forgetful.close();
  }
});
