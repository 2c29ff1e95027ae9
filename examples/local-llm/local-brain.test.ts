/**
 * The local brain against the real llama.cpp runtime (node-llama-cpp's CPU build, which test/run.sh installs):
 * a tiny untrained GGUF written here in milliseconds, served by the counter service with `--brain local`, driven
 * through `gym env start` + `gym eval run` on the counter tasks. What is held is the plumbing — valid items, tool
 * calls that ran, rows written, usage recorded — not the reward (the model knows nothing). Each way the brain
 * refuses to start, or a reply it cannot use, is provoked in a real process too.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { validateResponse } from '../../src/contract/index.js';
import { findFreePort } from '../../src/config/index.js';
import { COUNTER_TOOLS } from '../../src/counter/tools.js';
import { request } from '../../src/http/client.js';
import { COUNTER_TASKS, readJsonl, runGym, runRemoteAgentEval, tempDir } from '../../test/support/cli.js';
import { GYM_BIN } from '../../test/support/environments.js';
import { DIST_EXAMPLES, REPO_ROOT, spawnService } from '../../test/support/examples.js';
import { eventually } from '../../test/support/wait.js';
import { NODE_LLAMA_CPP_VERSION } from '../../src/model-server/gguf/runtime.js';
import { writeTinyGguf } from './tiny-gguf.js';

const SERVICE = `${DIST_EXAMPLES}counter-planner/service.js`;
const COUNTER_CONFIG = path.join(REPO_ROOT, 'counter_remote.yaml');

/** Why the runtime tests cannot run here, or undefined when node-llama-cpp resolves from this file. */
const runtimeMissing = ((): string | undefined => {
  try {
    import.meta.resolve('node-llama-cpp');
    return undefined;
  } catch {
    return `node-llama-cpp is not installed (test/run.sh installs ${NODE_LLAMA_CPP_VERSION}'s CPU build before the tests)`;
  }
})();

/** What the test reads of a row's response. */
interface RowResponse {
  model: string;
  output: { type: string; name?: string; call_id?: string; arguments?: string; output?: string }[];
  usage: { input_tokens: number; output_tokens: number; total_tokens: number };
}

/** A tiny model that asks for tools and closes its strings (tiny-gguf.ts `favour`). */
function tinyModel(): string {
  const file = path.join(tempDir('tsgym-local-llm-'), 'tiny.gguf');
  writeTinyGguf(file, { favour: '"ti' });
  return file;
}

/**
 * Every deadline here is only an upper bound: loading even the tiny model and answering with one thread takes
 * seconds on a busy machine, milliseconds on a quiet one.
 */
const DEADLINE_MS = 300_000;

/** Run a command to its exit; its output and code. */
function runToExit(args: string[], timeoutMs = DEADLINE_MS): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${args.join(' ')} did not exit within ${timeoutMs} ms:\n${output}`));
    }, timeoutMs);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

describe('the local brain (llama.cpp in-process) through the real CLI', () => {
  test('gym env start + gym eval run: every counter row written, its tool calls run, its usage counted', async (t) => {
    if (runtimeMissing) return t.skip(runtimeMissing);
    const service = await spawnService(
      process.execPath,
      [SERVICE, '--brain', 'local', '--model', tinyModel(), '--port', '0', '--threads', '1', '--max-tool-calls', '3'],
      { timeoutMs: DEADLINE_MS },
    );
    const dir = tempDir('tsgym-local-llm-');
    const headPort = await findFreePort();
    const env = spawn(
      process.execPath,
      [
        GYM_BIN,
        'env',
        'start',
        `+config_paths=[${COUNTER_CONFIG}]`,
        `++remote_agent.responses_api_agents.remote_agent.agent_base_url=${service.url}`,
        `++head_server.port=${headPort}`,
      ],
      { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let envOutput = '';
    env.stdout.setEncoding('utf8').on('data', (chunk: string) => (envOutput += chunk));
    env.stderr.setEncoding('utf8').on('data', (chunk: string) => (envOutput += chunk));
    const exited = new Promise<number | null>((resolve) => env.once('exit', (code) => resolve(code)));
    try {
      assert.match(service.output(), /^local \(tiny\.gguf\) listening on/m);
      await eventually(() => /All 2 \/ 2 servers ready/.test(envOutput) || env.exitCode !== null, {
        what: () => `gym env start to report ready (output so far:\n${envOutput})`,
        timeoutMs: DEADLINE_MS,
      });
      assert.match(envOutput, /All 2 \/ 2 servers ready/);
      const run = await runRemoteAgentEval(headPort, COUNTER_TASKS, 'out/rollouts.jsonl', { cwd: dir });
      assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}\n${service.output()}`);
      assert.match(run.stdout, /5 tasks, 5 rollouts expected: 5 completed, 0 failed/);

      const rows = readJsonl(path.join(dir, 'out/rollouts.jsonl'));
      assert.equal(rows.length, 5);
      const declared = new Set(COUNTER_TOOLS.map((tool) => tool.name));
      for (const row of rows) {
        const response = row.response as RowResponse;
        const valid = validateResponse(response);
        assert.ok(valid.ok, valid.ok ? '' : valid.message);
        assert.equal(response.model, 'local (tiny.gguf)');
        const items = response.output;
        const calls = items.filter((item) => item.type === 'function_call');
        // --max-tool-calls 3: three asks, each run by the environment, then the final answer.
        assert.equal(calls.length, 3, JSON.stringify(items));
        for (const call of calls) {
          assert.ok(declared.has(String(call.name)), call.name);
          const args: unknown = JSON.parse(String(call.arguments));
          assert.ok(typeof args === 'object' && args !== null && !Array.isArray(args), call.arguments);
          const result = items.find((item) => item.type === 'function_call_output' && item.call_id === call.call_id);
          assert.ok(result, `no function_call_output for ${call.call_id}`);
          assert.ok(typeof JSON.parse(String(result.output)) === 'object', result.output);
        }
        assert.equal(items[items.length - 1]!.type, 'message');
        // Four model calls, each a prompt of hundreds of byte tokens and a reply of a dozen or more.
        const usage = response.usage;
        assert.ok(usage.input_tokens > 4 * 100, JSON.stringify(usage));
        assert.ok(usage.output_tokens >= 4 * 5, JSON.stringify(usage));
        assert.equal(usage.total_tokens, usage.input_tokens + usage.output_tokens);
        assert.equal(typeof row.reward, 'number');
      }
      const metrics = JSON.parse(readFileSync(path.join(dir, 'out/rollouts_aggregate_metrics.json'), 'utf8')) as [
        {
          key_metrics: Record<string, number>;
        },
      ];
      assert.ok((metrics[0].key_metrics['mean/output_tokens'] ?? 0) > 0, JSON.stringify(metrics[0].key_metrics));
    } finally {
      env.kill('SIGINT');
      const code = await exited;
      await service.close();
      assert.equal(code, 0, envOutput);
    }
  });

  test('gym quickstart --brain local --model FILE: the counter quickstart with the model as the brain', async (t) => {
    if (runtimeMissing) return t.skip(runtimeMissing);
    const run = await runGym(['quickstart', '--brain', 'local', '--model', tinyModel()], {
      cwd: tempDir('tsgym-local-llm-'),
    });
    assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
    assert.match(run.stdout, /^Agent service: local \(tiny\.gguf\) at http/m);
    assert.match(run.stdout, /Result: 5 rollouts, mean reward [\d.]+, 0 failed, 0 missing\./);
    // Untrained and not capped (no --max-tool-calls here), it asks for tools until the agent's max_steps.
    assert.match(run.stdout, /^ {2}function_call → function_call_output → function_call/m);
  });

  test('gym quickstart --brain local without --model says which flag to add', async () => {
    const run = await runGym(['quickstart', '--brain', 'local'], { cwd: tempDir('tsgym-local-llm-') });
    assert.equal(run.code, 1, run.stderr);
    assert.match(
      run.stderr,
      /^Error: --brain local runs a GGUF model in-process: add --model <path of the \.gguf file>/m,
    );
  });

  test('a reply cut off at --max-tokens answers HTTP 500 naming the flag, and the service stays up', async (t) => {
    if (runtimeMissing) return t.skip(runtimeMissing);
    const service = await spawnService(
      process.execPath,
      [SERVICE, '--brain', 'local', '--model', tinyModel(), '--port', '0', '--threads', '1', '--max-tokens', '3'],
      { timeoutMs: DEADLINE_MS },
    );
    try {
      const body = { input: [{ role: 'user', content: 'add 1 then get the count' }], tools: COUNTER_TOOLS };
      for (let attempt = 0; attempt < 2; attempt++) {
        const res = await request(`${service.url}/v1/responses`, {
          method: 'POST',
          json: body,
          timeoutMs: DEADLINE_MS,
        });
        assert.equal(res.status, 500, res.text());
        assert.match(res.text(), /cut off at the token limit \(3 tokens\).*raise --max-tokens/);
      }
    } finally {
      await service.close();
    }
  });

  test('a file that is not a GGUF model: one line naming it, exit 2', async (t) => {
    if (runtimeMissing) return t.skip(runtimeMissing);
    const file = path.join(tempDir('tsgym-local-llm-'), 'notes.gguf');
    writeFileSync(file, 'not a model\n');
    const { code, output } = await runToExit([SERVICE, '--brain', 'local', '--model', file, '--port', '0']);
    assert.equal(code, 2, output);
    assert.match(output, /^Error: --model .*notes\.gguf: llama\.cpp could not load it as a GGUF model \(.+\)\.$/m);
  });

  // Without --model at all it starts, for calls that carry a model URL: ./model-url.test.ts.
  test('no such model file: refused before anything loads', async () => {
    const missing = await runToExit([SERVICE, '--brain', 'local', '--model', '/nonexistent/m.gguf', '--port', '0']);
    assert.equal(missing.code, 2, missing.output);
    assert.match(
      missing.output,
      /^Error: --model \/nonexistent\/m\.gguf: no such file; give the path of a GGUF model file\.$/m,
    );
  });

  test('without node-llama-cpp installed: one line telling the user what to install', async () => {
    // The compiled tree as an install without the optional peer: every package but node-llama-cpp linked in.
    const root = tempDir('tsgym-no-llama-');
    symlinkSync(path.join(REPO_ROOT, 'dist'), path.join(root, 'dist'));
    writeFileSync(path.join(root, 'package.json'), '{"type": "module"}\n');
    mkdirSync(path.join(root, 'node_modules'));
    const modules = path.join(REPO_ROOT, 'node_modules');
    for (const name of readdirSync(modules)) {
      if (name === 'node-llama-cpp' || name === '@node-llama-cpp' || name.startsWith('.')) continue;
      symlinkSync(path.join(modules, name), path.join(root, 'node_modules', name));
    }
    const service = path.join(root, 'dist/examples/counter-planner/service.js');
    const { code, output } = await runToExit([
      '--preserve-symlinks',
      '--preserve-symlinks-main',
      service,
      '--brain',
      'local',
      '--model',
      tinyModel(),
      '--port',
      '0',
    ]);
    assert.equal(code, 2, output);
    assert.equal(output.trim().split('\n').length, 1, output);
    assert.match(
      output,
      /not installed \(an optional peer dependency of tsgym\): run npm install node-llama-cpp@3\.21\.1/,
    );
  });
});
