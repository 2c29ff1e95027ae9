import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, test } from 'node:test';
import { readJsonl, runGym, tempDir } from '../../../test/support/cli.js';

/** `gym quickstart --env math` as a user runs it, from a fresh working directory: the math entry of the table. */
describe('gym quickstart --env math', () => {
  test('solves every example row with the math solver: mean reward 1.0', async () => {
    const cwd = tempDir('gym-quickstart-math-');
    const run = await runGym(['quickstart', '--env', 'math'], { cwd });
    assert.equal(run.code, 0, `quickstart failed:\n${run.stdout}\n${run.stderr}`);
    assert.match(run.stdout, /^Agent service: math-solver \(deterministic, no model\) at http:\/\/127\.0\.0\.1:\d+$/m);
    assert.match(run.stdout, /^Environment: math environment \+ remote agent ready in /m);
    assert.match(run.stdout, /Result: 12 rollouts, mean reward 1\.0, 0 failed, 0 missing\./);
    assert.match(run.stdout, /answer_found\s+1\s/, 'the environment extras are profile columns');
    const rollouts = readJsonl(path.join(cwd, 'results/quickstart/rollouts.jsonl'));
    assert.equal(rollouts.length, 12);
    for (const row of rollouts) assert.equal(row.reward, 1);
    assert.deepEqual(readJsonl(path.join(cwd, 'results/quickstart/rollouts_failures.jsonl')), []);
  });

  test('--brain other than the solver is a config error naming the fix', async () => {
    const run = await runGym(['quickstart', '--env', 'math', '--brain', 'claude'], {
      cwd: tempDir('gym-quickstart-math-'),
    });
    assert.equal(run.code, 1);
    assert.match(
      run.stderr,
      /--env math runs its deterministic solver \(examples\/math-solver\) only; drop --brain claude\./,
    );
  });
});
