import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import net from 'node:net';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { tempDir } from '../../../test/support/cli.js';
import { startFakeModelServer } from '../../../test/support/fake-model-server.js';
import { eventually } from '../../../test/support/wait.js';

const REPO = fileURLToPath(new URL('../../../../', import.meta.url));
const GYM = path.join(REPO, 'bin', 'gym.js');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  cwd: string;
}

/** `gym quickstart` exactly as a user runs it, from a fresh working directory. */
function runQuickstart(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Run> {
  const cwd = tempDir('gym-quickstart-');
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [GYM, 'quickstart', ...args], {
      cwd,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr, cwd }));
  });
}

function assertFiveOfFive(run: Run): void {
  assert.equal(run.code, 0, `quickstart failed:\n${run.stdout}\n${run.stderr}`);
  assert.match(run.stdout, /Result: 5 rollouts, mean reward 1\.0, 0 failed, 0 missing\./);
  assert.match(run.stdout, /function_call → .*function_call_output → .*→ message/);
  const rollouts = readFileSync(path.join(run.cwd, 'results/quickstart/rollouts.jsonl'), 'utf8').trim().split('\n');
  assert.equal(rollouts.length, 5);
  for (const line of rollouts) assert.equal((JSON.parse(line) as { reward?: unknown }).reward, 1);
  assert.equal(readFileSync(path.join(run.cwd, 'results/quickstart/rollouts_failures.jsonl'), 'utf8'), '');
}

describe('gym quickstart', () => {
  test('offline with the deterministic planner: 5 rollouts, mean reward 1.0, one trajectory shown', async () => {
    const run = await runQuickstart([]);
    assertFiveOfFive(run);
    assert.match(run.stdout, /counter-planner \(deterministic, no model\)/);
    assert.match(run.stdout, /Profile \(gym eval profile\):/);
    assert.match(run.stdout, /rollouts_aggregate_metrics\.json/);
  });

  test('--brain claude drives the same tasks through the claude CLI (a fake claude on PATH)', async () => {
    const bin = tempDir('fake-claude-bin-');
    const fake = path.join(REPO, 'dist/test/support/fake-claude.js');
    const shim = path.join(bin, 'claude');
    writeFileSync(shim, `#!/bin/sh\nexec "${process.execPath}" "${fake}" "$@"\n`);
    chmodSync(shim, 0o755);
    const run = await runQuickstart(['--brain', 'claude'], {
      PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}`,
      FAKE_CLAUDE_MODE: 'fenced',
    });
    assertFiveOfFive(run);
    assert.match(run.stdout, /claude-cli \(haiku\)/);
  });

  test('--brain openai drives the same tasks through an OpenAI-compatible endpoint (a local fake)', async () => {
    const model = await startFakeModelServer();
    try {
      const run = await runQuickstart(['--brain', 'openai', '--model-url', model.url, '--model', 'fake-model'], {
        OPENAI_API_KEY: 'sk-quickstart-test',
      });
      assertFiveOfFive(run);
      assert.ok(model.requests.length >= 15, 'every step of every rollout asked the model');
      assert.equal(model.requests[0]?.headers.authorization, 'Bearer sk-quickstart-test');
    } finally {
      await model.close();
    }
  });

  test(
    'Ctrl-C during the collection stops it and every server at once: exit 130, no result printed',
    { timeout: 300_000 },
    async () => {
      // A model server that accepts and never answers: every rollout hangs at its first step until Ctrl-C.
      const sockets = new Set<net.Socket>();
      const model = net.createServer((socket) => void sockets.add(socket));
      await new Promise<void>((resolve) => model.listen(0, '127.0.0.1', resolve));
      const port = (model.address() as net.AddressInfo).port;
      const cwd = tempDir('gym-quickstart-int-');
      const child = spawn(
        process.execPath,
        [GYM, 'quickstart', '--brain', 'openai', '--model-url', `http://127.0.0.1:${port}/v1`, '--model', 'm'],
        {
          cwd,
          env: { ...process.env, OPENAI_API_KEY: 'sk-test' },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
      const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
      try {
        // The collection is under way once the first model call arrives; the bound is only for a very busy machine.
        await eventually(
          () => {
            if (child.exitCode !== null || child.signalCode !== null)
              throw new Error(`quickstart exited before its first model call:\n${output}`);
            return sockets.size > 0;
          },
          {
            what: () => `the first model call (output so far:\n${output})`,
            timeoutMs: 120_000,
            intervalMs: 20,
          },
        );
        child.kill('SIGINT');
        assert.equal(await exited, 130, output);
        assert.match(output, /Interrupted: stopping everything the quickstart started/);
        assert.doesNotMatch(output, /^Result: /m);
        assert.doesNotMatch(output, /\n\s+at /);
      } finally {
        child.kill('SIGKILL');
        for (const socket of sockets) socket.destroy();
        model.close();
      }
    },
  );

  test('an unknown brain is a one-paragraph error, exit 1, no stack trace', async () => {
    const run = await runQuickstart(['--brain', 'gpt-17']);
    assert.equal(run.code, 1);
    assert.match(run.stderr, /^Error: --brain gpt-17 is not a brain the quickstart knows/);
    assert.doesNotMatch(run.stderr, /\n\s+at /);
  });

  test('--brain openai without a model URL says which flags to add', async () => {
    const run = await runQuickstart(['--brain', 'openai']);
    assert.equal(run.code, 1);
    assert.match(run.stderr, /--model-url/);
  });

  test('--env counter runs the counter entry of the environment table: 5 rollouts, mean reward 1.0', async () => {
    const run = await runQuickstart(['--env', 'counter']);
    assertFiveOfFive(run);
    assert.match(run.stdout, /^Environment: counter environment \+ remote agent ready in /m);
  });

  test('an unknown --env is a usage error (exit 2) listing the environments the quickstart knows', async () => {
    const run = await runQuickstart(['--env', 'chess']);
    assert.equal(run.code, 2);
    assert.match(run.stderr, /--env chess is not an environment the quickstart knows: choose one of counter\b/);
    assert.doesNotMatch(run.stderr, /\n\s+at /);
  });
});
