import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { runGym, spawnGym } from '../../test/support/cli.js';
import { writeRun } from '../../test/support/view-runs.js';
import { eventually } from '../../test/support/wait.js';

test('gym view prints the URL it serves on, serves the index there, and stops on a signal', async () => {
  const run = writeRun();
  const gym = spawnGym(['view', 'rollouts.jsonl', '--port', '0'], { cwd: run.dir });
  let stdout = '';
  gym.child.stdout!.on('data', (chunk: string) => (stdout += chunk));
  try {
    await eventually(() => /\n/.test(stdout) || gym.child.exitCode !== null, {
      what: 'the URL line',
      timeoutMs: 120_000,
    });
    const match = /^Viewing rollouts\.jsonl at (http:\/\/127\.0\.0\.1:\d+)\n/.exec(stdout);
    assert.ok(match, `unexpected output: ${stdout}${gym.stderr()}`);
    // A page shows the rows indexed so far when indexing takes longer than it waits (on a busy machine it can):
    // the index shows all five once indexed.
    let page = '';
    await eventually(
      async () => {
        const res = await fetch(`${match[1]}/`);
        assert.equal(res.status, 200);
        page = await res.text();
        return /5 rollouts<\/strong>: 3 ok/.test(page);
      },
      { what: () => `the index to list the 5 rollouts (last page: ${page})`, timeoutMs: 120_000, intervalMs: 100 },
    );
  } finally {
    gym.child.kill('SIGTERM');
  }
  const result = await gym.result;
  assert.equal(result.code, 0, result.stderr);
});

test('gym view on a missing file exits 1 naming the file', async () => {
  const run = writeRun();
  const result = await runGym(['view', path.join('results', 'missing.jsonl')], { cwd: run.dir });
  assert.equal(result.code, 1);
  assert.match(result.stderr, /^Error: results\/missing\.jsonl does not exist\./);
});

test('gym view A B serves the comparison and says where; a third file is a usage error', async () => {
  const a = writeRun();
  const b = writeRun();
  const gym = spawnGym(['view', a.rollouts, b.rollouts, '--port', '0'], { cwd: a.dir });
  let stdout = '';
  gym.child.stdout!.on('data', (chunk: string) => (stdout += chunk));
  try {
    await eventually(() => /\n/.test(stdout) || gym.child.exitCode !== null, {
      what: 'the URL line',
      timeoutMs: 120_000,
    });
    const match =
      /^Comparing .*rollouts\.jsonl \(A\) with .*rollouts\.jsonl \(B\) at (http:\/\/127\.0\.0\.1:\d+\/compare)\n/.exec(
        stdout,
      );
    assert.ok(match, `unexpected output: ${stdout}${gym.stderr()}`);
    let page = '';
    await eventually(
      async () => {
        const res = await fetch(match[1]!);
        assert.equal(res.status, 200);
        page = await res.text();
        return /3 tasks<\/strong>: <span class="verdict-improved">0 improved/.test(page);
      },
      { what: () => `the comparison of the 3 tasks (last page: ${page})`, timeoutMs: 120_000, intervalMs: 100 },
    );
  } finally {
    gym.child.kill('SIGTERM');
  }
  assert.equal((await gym.result).code, 0);
  const extra = await runGym(['view', a.rollouts, b.rollouts, 'third.jsonl'], { cwd: a.dir });
  assert.equal(extra.code, 2);
  assert.match(extra.stderr, /gym view does not understand 'third\.jsonl'/);
});
