/**
 * test/leftovers.sh, the check test/run.sh makes after every run: it fails naming the files left in the run's temp dir
 * and the processes that still carry TMPDIR=<that dir>, stops those processes, and passes on a clean run. Driven
 * here through real processes against a temp dir of this test's own (not the run's, which other tests are using).
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { tempDir } from './support/cli.js';
import { eventually } from './support/wait.js';

const SCRIPT = fileURLToPath(new URL('../../test/leftovers.sh', import.meta.url));

function check(runTmp: string): { status: number | null; stdout: string; stderr: string } {
  const env = { ...process.env };
  delete env.TMPDIR;
  const result = spawnSync('bash', [SCRIPT, runTmp], { env, encoding: 'utf8', timeout: 60_000 });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

function alive(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

describe('the leftovers check after a test run', () => {
  const started: ChildProcess[] = [];
  afterEach(() => {
    for (const child of started.splice(0)) if (alive(child)) child.kill('SIGKILL');
  });

  test('an empty temp dir (but for the tsx cache) and no process carrying it: passes, saying so', () => {
    const runTmp = tempDir('tsgym-leftovers-clean-');
    mkdirSync(path.join(runTmp, 'tsx-0', 'cache'), { recursive: true }); // tsx's compile cache, shared by the run
    const result = check(runTmp);
    assert.equal(result.status, 0, result.stderr);
    assert.match(result.stdout, /nothing left behind/);
  });

  test('files left in the temp dir: fails naming each', () => {
    const runTmp = tempDir('tsgym-leftovers-files-');
    mkdirSync(path.join(runTmp, 'tsgym-config-abc'));
    writeFileSync(path.join(runTmp, 'tsgym-config-abc', 'gym.yaml'), '');
    writeFileSync(path.join(runTmp, 'stray.txt'), '');
    const result = check(runTmp);
    assert.equal(result.status, 1);
    assert.match(result.stderr, /left these in the temp dir/);
    assert.ok(result.stderr.includes(`  ${path.join(runTmp, 'tsgym-config-abc')}\n`), result.stderr);
    assert.ok(result.stderr.includes(path.join(runTmp, 'stray.txt')), result.stderr);
  });

  test('a process that still carries the run temp dir: fails naming it, and stops it', async () => {
    const runTmp = tempDir('tsgym-leftovers-procs-');
    // A process that ignores TERM, as a wedged server might: the check must still end it (KILL after its grace).
    const stray = spawn('sh', ['-c', 'trap "" TERM; while :; do sleep 1; done'], {
      env: { ...process.env, TMPDIR: runTmp },
      stdio: 'ignore',
    });
    started.push(stray);
    const bystander = spawn('sleep', ['300'], { env: { ...process.env, TMPDIR: `${runTmp}-other` }, stdio: 'ignore' });
    started.push(bystander);
    // spawn returns once the child has exec'd, so its environment is already the one given here.
    const result = check(runTmp);
    assert.equal(result.status, 1, result.stdout);
    assert.match(result.stderr, /outlived the tests that started them/);
    assert.match(result.stderr, new RegExp(`\\b${stray.pid}: sh -c trap`));
    assert.doesNotMatch(result.stderr, new RegExp(`\\b${bystander.pid}:`), 'another run is not blamed');
    await eventually(() => !alive(stray), { what: 'the stray process is stopped', timeoutMs: 30_000 });
    assert.equal(stray.signalCode, 'SIGKILL');
    assert.ok(alive(bystander), "another run's process is left alone");
  });
});
