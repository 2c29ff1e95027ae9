/** `gym quickstart --env workplace` as a user runs it, from a fresh directory: the solver ends at mean reward 1.0. */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { runGym, tempDir } from '../../test/support/cli.js';

test('gym quickstart --env workplace: 7 rollouts, mean reward 1.0, the profile shows the state-check columns', async () => {
  const cwd = tempDir('tsgym-workplace-quickstart-');
  const run = await runGym(['quickstart', '--env', 'workplace'], { cwd });
  assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
  assert.match(run.stdout, /Agent service: workplace-solver \(deterministic, no model\)/);
  assert.match(run.stdout, /workplace environment \+ remote agent ready/);
  assert.match(run.stdout, /state_checks_passed/);
  assert.match(run.stdout, /unexpected_changes/);
  assert.match(run.stdout, /Result: 7 rollouts, mean reward 1\.0, 0 failed, 0 missing\./);
  const rollouts = readFileSync(path.join(cwd, 'results/quickstart/rollouts.jsonl'), 'utf8').trim().split('\n');
  assert.equal(rollouts.length, 7);
  for (const line of rollouts) assert.equal((JSON.parse(line) as { reward: number }).reward, 1);
});
