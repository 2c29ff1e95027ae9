/**
 * `gguf_model` under a real `gym env start` (the entry, its config, node-llama-cpp loading the project's tiny GGUF in
 * the server's own process), the whole path a newcomer follows in docs/training.md: the counter environment, the
 * remote agent with `token_id_capture: true`, a service that asks the model once per step through its rollout's URL
 * and shows the model's reply, `gym eval run`, then `gym eval export --format trainer`. Every row is trainable and its
 * sample's loss mask covers exactly the tokens the model generated. A `model_path` that is missing stops start-up
 * with one paragraph naming the key.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { writeTinyGguf } from '../../examples/local-llm/tiny-gguf.js';
import { findFreePort, installRoot } from '../../src/config/index.js';
import { request } from '../../src/http/client.js';
import { counterTaskReply } from '../../src/testing/counter-brain.js';
import { assistantMessage, startScriptedService, type ServiceCall } from '../../src/testing/index.js';
import { COUNTER_TASKS, readJsonl, runGym, runRemoteAgentEval, startGymEnv, tempDir } from '../../test/support/cli.js';
import { DIST_EXAMPLES, spawnService } from '../../test/support/examples.js';

const runtimeMissing = ((): string | undefined => {
  try {
    import.meta.resolve('node-llama-cpp');
    return undefined;
  } catch {
    return 'node-llama-cpp is not installed (test/run.sh installs its CPU build before the tests)';
  }
})();

const cleanups: (() => Promise<unknown>)[] = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

const SERVICE = `${DIST_EXAMPLES}counter-planner/service.js`;
const CONFIG = path.join(installRoot(), 'responses_api_models/gguf_model/configs/gguf_model.yaml');
const AGENT = '++remote_agent.responses_api_agents.remote_agent';

/** The conversation so far as chat messages: the model's own replies as they came, tool results as tool turns. */
function chatMessages(call: ServiceCall): { role: string; content: string }[] {
  const input = call.body.input;
  if (typeof input === 'string') return [{ role: 'user', content: input }];
  const messages: { role: string; content: string }[] = [];
  for (const item of (input ?? []) as Record<string, unknown>[]) {
    if (item.type === 'function_call_output') messages.push({ role: 'tool', content: String(item.output) });
    else if (item.role === 'user' || item.role === 'assistant') {
      const content = item.content;
      const text = typeof content === 'string' ? content : (content as { text: string }[]).map((p) => p.text).join('');
      messages.push({ role: item.role, content: text });
    }
  }
  return messages;
}

/** Solves the counter tasks (the scripted brain decides), asking the model once per step and showing its reply. */
async function brain(call: ServiceCall): Promise<unknown> {
  const res = await request(`${String(call.headers['x-gym-model-base-url'])}/chat/completions`, {
    method: 'POST',
    json: { model: 'tiny', messages: chatMessages(call), max_tokens: 5, temperature: 0 },
    timeoutMs: 120_000,
  });
  if (res.status !== 200) throw new Error(`model call failed: HTTP ${res.status} ${res.text()}`);
  const text = (res.json() as { choices: { message: { content: string } }[] }).choices[0]!.message.content;
  const reply = counterTaskReply(call);
  return { ...reply, output: [assistantMessage(text), ...(reply.output as unknown[])] };
}

/** What one collection through `gym env start` + `gym eval run` + `gym eval export --format trainer` left. */
interface Collected {
  rows: Record<string, unknown>[];
  samples: Record<string, unknown>[];
  /** What the export printed: how many rows it took and skipped, by reason. */
  summary: string;
}

/** `gym env start` with the counter environment, `gguf_model` on `modelPath` and a capturing remote agent. */
async function collect(dir: string, modelPath: string, serviceUrl: string): Promise<Collected> {
  const headPort = await findFreePort();
  const env = await startGymEnv(
    [
      `+config_paths=[${path.join(installRoot(), 'counter_remote.yaml')},${CONFIG}]`,
      `${AGENT}.agent_base_url=${serviceUrl}`,
      `${AGENT}.model_server={type: responses_api_models, name: policy_model}`,
      `${AGENT}.token_id_capture=true`,
      `++policy_model_path=${modelPath}`,
      '++policy_model.responses_api_models.gguf_model.threads=1',
      `++head_server.port=${headPort}`,
    ],
    { cwd: dir, logDir: path.join(dir, 'logs'), servers: 3, timeoutMs: 180_000 },
  );
  cleanups.push(env.stop);
  const run = await runRemoteAgentEval(headPort, COUNTER_TASKS, 'out/rollouts.jsonl', { cwd: dir });
  assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
  const exported = await runGym(
    ['eval', 'export', 'out/rollouts.jsonl', '--format', 'trainer', '-o', 'out/train.jsonl'],
    {
      cwd: dir,
    },
  );
  assert.equal(exported.code, 0, `${exported.stdout}\n${exported.stderr}`);
  await env.stop();
  return {
    rows: readJsonl(path.join(dir, 'out/rollouts.jsonl')),
    samples: readJsonl(path.join(dir, 'out/train.jsonl')),
    summary: `${run.stdout}\n${exported.stdout}${exported.stderr}\n${readdirSync(path.join(dir, 'out'))
      .filter((name) => name.includes('fail'))
      .map((name) => readFileSync(path.join(dir, 'out', name), 'utf8').slice(0, 2000))
      .join('\n')}`,
  };
}

/** Every row is one chain holding every model call, and its sample's loss mask covers exactly the generated tokens. */
function assertTrainable({ rows, samples, summary }: Collected): void {
  assert.equal(rows.length, 5, summary);
  const generated = new Map<string, number>();
  for (const row of rows) {
    assert.equal(row.mask_sample, undefined, JSON.stringify(row._ng_token_capture));
    assert.equal((row._ng_token_capture as { chains: number }).chains, 1);
    const items = (row.response as { output: Record<string, unknown>[] }).output.filter((item) =>
      Array.isArray(item.generation_token_ids),
    );
    const calls = (row.ng_model_call_capture as { calls: unknown[] }).calls.length;
    assert.ok(calls >= 1);
    assert.equal(items.length, calls, 'every model call is a link of the chain');
    const key = `${String(row._ng_task_index)}:${String(row._ng_rollout_index)}`;
    generated.set(
      key,
      items.reduce((sum, item) => sum + (item.generation_token_ids as number[]).length, 0),
    );
  }
  assert.equal(samples.length, 5, summary);
  for (const sample of samples) {
    const mask = sample.loss_mask as number[];
    assert.equal((sample.input_ids as number[]).length, mask.length);
    const key = `${String(sample.task_index)}:${String(sample.rollout_index)}`;
    assert.equal(mask.filter((bit) => bit === 1).length, generated.get(key));
  }
}

describe('gguf_model under gym env start', runtimeMissing ? { skip: runtimeMissing } : {}, () => {
  test('runs a GGUF in-process; rows carry exact tokens and the export feeds a trainer', async () => {
    const dir = tempDir('tsgym-gguf-env-');
    const modelPath = path.join(dir, 'tiny.gguf');
    writeTinyGguf(modelPath, { seed: 5, favour: 'ab' });
    const service = await startScriptedService(brain);
    cleanups.push(() => service.close());
    assertTrainable(await collect(dir, modelPath, service.url));
  });

  test('the local-llm example with no model file of its own, through the rollout URL: every row trainable', async () => {
    const dir = tempDir('tsgym-gguf-env-');
    const modelPath = path.join(dir, 'tiny.gguf');
    // A model that takes the tool, closes its strings and objects and writes no space under the reply grammar (its
    // vocabulary reads a space back as SentencePiece's '▁', not as the space byte it generated), and whose template
    // closes a reply with the end token it generates, as real chat templates do: each call extends the one before.
    writeTinyGguf(modelPath, { favour: '"ti}{1', eosClosesReply: true });
    const service = await spawnService(
      process.execPath,
      [SERVICE, '--brain', 'local', '--port', '0', '--max-tool-calls', '2'],
      { timeoutMs: 120_000 },
    );
    cleanups.push(() => service.close());
    assertTrainable(await collect(dir, modelPath, service.url));
  });

  test('a missing model_path stops start-up with one paragraph naming the key', async () => {
    const dir = tempDir('tsgym-gguf-env-');
    const result = await runGym(
      [
        'env',
        'start',
        `+config_paths=[${CONFIG}]`,
        `++policy_model_path=${path.join(dir, 'no-such.gguf')}`,
        `++head_server.port=${await findFreePort()}`,
        `++nemo_gym_log_dir=${path.join(dir, 'logs')}`,
      ],
      { cwd: dir },
    );
    assert.equal(result.code, 1, result.stdout + result.stderr);
    assert.match(result.stderr, /policy_model\.responses_api_models\.gguf_model\.model_path: no such file/);
    assert.doesNotMatch(result.stderr, /\n\s+at /, 'no stack trace');
  });
});
