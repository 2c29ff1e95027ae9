/**
 * Token capture checked against the real engine: `gguf_model` (node-llama-cpp's CPU build, which test/run.sh
 * installs) serving the project's tiny GGUF, behind a real model server, a real remote agent with
 * `token_id_capture: true` and a scripted service on loopback that calls the model through its rollout's URL. What is
 * held is exactness, checked with a second, independent load of the same model: the captured generation ids decode to
 * the very text the service received, and re-scoring the captured prompt + generation from scratch gives the captured
 * log-probs back (|Δ| ≤ 1e-3). Then the rebuild: an append-only agent's three calls are one chain with the right loss
 * mask, a compacting agent's calls two roots, a call cut mid-stream masks its row, and 32 rollouts at once never
 * cross.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { writeTinyGguf } from '../../examples/local-llm/tiny-gguf.js';
import { request } from '../../src/http/client.js';
import type { Listening } from '../../src/http/server.js';
import { GgufEngine } from '../../src/model-server/gguf/engine.js';
import { GgufUpstream } from '../../src/model-server/gguf/upstream.js';
import type { ModelCallCapture } from '../../src/model-server/records.js';
import { createModelServer, type ModelServer } from '../../src/model-server/server.js';
import { assistantMessage, responseObject, type ServiceCall } from '../../src/testing/index.js';
import { trainerSample } from '../../src/training/export.js';
import { tempDir } from '../../test/support/cli.js';
import {
  basicRow,
  startHarness,
  withModelServer,
  type Harness,
  type RunResult,
} from '../../test/support/remote-agent.js';

/** Why these tests cannot run here, or undefined when node-llama-cpp resolves. */
const runtimeMissing = ((): string | undefined => {
  try {
    import.meta.resolve('node-llama-cpp');
    return undefined;
  } catch {
    return 'node-llama-cpp is not installed (test/run.sh installs its CPU build before the tests)';
  }
})();

/** Only upper bounds: the tiny model answers in milliseconds on a quiet machine, seconds on a busy one. */
const DEADLINE_MS = 120_000;
const TOLERANCE = 1e-3;

// The slice of node-llama-cpp the independent checks use.
interface ReferenceModel {
  detokenize(tokens: readonly number[], specialTokens?: boolean): string;
  createContext(options: { contextSize: number; threads: number }): Promise<{
    getSequence(): {
      controlledEvaluate(
        input: (number | [number, { generateNext: { probabilities: true } }])[],
      ): Promise<({ next: { probabilities?: Map<number, number> } } | undefined)[]>;
      dispose(): void;
    };
    dispose(): Promise<void>;
  }>;
  dispose(): Promise<void>;
}
interface ReferenceRuntime {
  getLlama(options: { gpu: false; build: 'never'; logLevel: 'error' }): Promise<{
    loadModel(options: { modelPath: string }): Promise<ReferenceModel>;
    dispose(): Promise<void>;
  }>;
}

let modelFile: string;
let engine: GgufEngine;
let server: ModelServer;
let listening: Listening;
let reference: { model: ReferenceModel; dispose(): Promise<void> };

before(async () => {
  if (runtimeMissing) return;
  // Favouring 'a' and 'b' keeps greedy output ASCII, so a conversation re-rendered from the text re-tokenizes to the
  // very ids generated (what prefix merging needs); sampled output at temperature 1 still ranges over every byte.
  modelFile = path.join(tempDir('tsgym-gguf-model-'), 'tiny.gguf');
  writeTinyGguf(modelFile, { seed: 11, favour: 'ab' });
  engine = await GgufEngine.load({ modelPath: modelFile, parallel: 2, threads: 1, where: 'policy_model' });
  server = createModelServer({
    name: 'policy_model',
    upstream: new GgufUpstream(engine, { model: 'tiny', extraBody: {}, timeoutMs: DEADLINE_MS }),
    limits: { maxOpen: 1000, maxCallsPerRollout: 100, idleMs: 600_000 },
    maxResponseBytes: 8 * 1024 * 1024,
    log: () => {},
  });
  listening = await server.app.listen(0);
  // Through a variable: node-llama-cpp is an optional peer dependency, absent when the project compiles.
  const runtimePackage = 'node-llama-cpp';
  const runtime = (await import(runtimePackage)) as ReferenceRuntime;
  const llama = await runtime.getLlama({ gpu: false, build: 'never', logLevel: 'error' });
  const model = await llama.loadModel({ modelPath: modelFile });
  reference = { model, dispose: async () => (await model.dispose(), await llama.dispose()) };
});

after(async () => {
  if (runtimeMissing) return;
  server.close();
  await listening.close();
  await engine.close();
  await reference.dispose();
});

/** Each generated token's log-prob, recomputed from scratch by the independent load. */
async function rescore(prompt: readonly number[], generated: readonly number[]): Promise<number[]> {
  const context = await reference.model.createContext({ contextSize: 2048, threads: 1 });
  try {
    const all = [...prompt, ...generated];
    const input = all.map((token, i): number | [number, { generateNext: { probabilities: true } }] =>
      i >= prompt.length - 1 && i < all.length - 1 ? [token, { generateNext: { probabilities: true } }] : token,
    );
    const outputs = await context.getSequence().controlledEvaluate(input);
    return generated.map((token, j) => Math.log(outputs[prompt.length - 1 + j]?.next.probabilities?.get(token) ?? 0));
  } finally {
    await context.dispose();
  }
}

type Message = { role: string; content: string };

/** The model URL the remote agent handed the service for this rollout. */
function modelUrl(call: ServiceCall): string {
  const base = call.headers['x-gym-model-base-url'];
  assert.equal(typeof base, 'string', 'the service was handed its rollout model URL');
  return `${String(base)}/chat/completions`;
}

/** One chat call through the rollout's capture URL; the text the service received. */
function chat(call: ServiceCall, messages: Message[], extra: Record<string, unknown> = {}): Promise<string> {
  return chatAt(modelUrl(call), messages, extra);
}

async function chatAt(url: string, messages: Message[], extra: Record<string, unknown>): Promise<string> {
  const res = await request(url, {
    method: 'POST',
    json: { model: 'any', messages, max_tokens: 12, temperature: 0, ...extra },
    timeoutMs: DEADLINE_MS,
  });
  assert.equal(res.status, 200, res.text());
  return (res.json() as { choices: { message: { content: string } }[] }).choices[0]!.message.content;
}

/** The text of a streamed chat call, read to its end. */
async function streamedChatAt(url: string, messages: Message[], extra: Record<string, unknown>): Promise<string> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'any', messages, stream: true, ...extra }),
  });
  let text = '';
  for (const line of (await res.text()).split('\n')) {
    if (!line.startsWith('data: {')) continue;
    const chunk = JSON.parse(line.slice(6)) as { choices: { delta: { content?: string } }[] };
    text += chunk.choices[0]?.delta.content ?? '';
  }
  return text;
}

function task(call: ServiceCall): string {
  const input = call.body.input;
  if (typeof input === 'string') return input;
  const first = Array.isArray(input) ? (input[0] as { content?: unknown } | undefined) : undefined;
  return typeof first?.content === 'string' ? first.content : '';
}

interface CapturedRow extends Omit<RunResult, 'response'> {
  mask_sample?: boolean;
  _ng_token_capture: { error?: string; chains?: number; roots?: number; n_calls: number };
  ng_model_call_capture: ModelCallCapture;
  response: { output: Record<string, unknown>[] };
}

type TokenItem = Record<string, unknown> & {
  prompt_token_ids: number[];
  generation_token_ids: number[];
  generation_log_probs: number[];
};

function tokenItems(row: CapturedRow): TokenItem[] {
  return row.response.output.filter((item) => Array.isArray(item.generation_token_ids)) as TokenItem[];
}

function itemText(item: Record<string, unknown>): string {
  return (item.content as { text: string }[]).map((part) => part.text).join('');
}

async function withService(
  handler: (call: ServiceCall) => Promise<Record<string, unknown>>,
  body: (harness: Harness) => Promise<void>,
): Promise<void> {
  const harness = await startHarness({ service: handler, ...withModelServer(listening.url, true) });
  try {
    await body(harness);
  } finally {
    await harness.close();
  }
}

const skip = runtimeMissing ? { skip: runtimeMissing } : {};

describe('gguf_model: exact capture against the real engine', skip, () => {
  it('captures ids that decode to the text the agent got, and log-probs that re-scoring reproduces', async () => {
    // The model server's own bookkeeping, as the remote agent drives it: open, two calls, close.
    const base = `${listening.url}/ng-rollout/exact-0`;
    assert.equal((await request(`${base}/open`, { method: 'POST', json: {}, timeoutMs: DEADLINE_MS })).status, 200);
    const url = `${base}/training-token-capture/v1/chat/completions`;
    const messages = [{ role: 'user', content: 'say something' }];
    // Sampled at temperature 1 (seeded): tokens away from the favoured ones, multi-byte and broken UTF-8 included.
    // The second call streams, so its text is what the deltas add up to.
    const whole = await chatAt(url, messages, { temperature: 1, seed: 7, max_tokens: 24 });
    const streamed = await streamedChatAt(url, [...messages, { role: 'assistant', content: whole }], {
      temperature: 1,
      seed: 8,
      max_tokens: 24,
    });
    const closed = await request(`${base}/close`, { method: 'POST', json: {}, timeoutMs: DEADLINE_MS });
    const capture = closed.json() as ModelCallCapture;
    assert.equal(capture.calls.length, 2);
    const received = [whole, streamed];
    for (const [i, record] of capture.calls.entries()) {
      const { prompt_token_ids: prompt, generation_token_ids: ids, generation_log_probs: logProbs } = record;
      assert.equal(record.error_category, null);
      assert.ok(prompt && ids && logProbs && ids.length > 0, `call ${i} carries its ids`);
      assert.equal(reference.model.detokenize(ids, false), received[i], `call ${i}: the ids decode to its text`);
      const rescored = await rescore(prompt, ids);
      const worst = Math.max(...rescored.map((value, j) => Math.abs(value - logProbs[j]!)));
      process.stdout.write(`gguf_model call ${i}: ${ids.length} tokens, max |Δ log-prob| ${worst.toExponential(2)}\n`);
      assert.ok(worst <= TOLERANCE, `call ${i}: re-scored log-probs differ by up to ${worst}`);
    }
  });

  it('rebuilds an append-only agent of three calls into one chain, with the loss mask on generated tokens only', async () => {
    await withService(
      async (call) => {
        const messages: Message[] = [{ role: 'user', content: task(call) }];
        const texts: string[] = [];
        for (let turn = 0; turn < 3; turn++) {
          const text = await chat(call, messages, { max_tokens: 6 + turn });
          texts.push(text);
          messages.push({ role: 'assistant', content: text }, { role: 'user', content: `go on (${turn})` });
        }
        return responseObject(texts.map((text) => assistantMessage(text)));
      },
      async (harness) => {
        const row = (await harness.run(
          basicRow('count with me', { _ng_task_index: 1, _ng_rollout_index: 0 }),
        )) as unknown as CapturedRow;
        assert.equal(row.mask_sample, undefined, JSON.stringify(row._ng_token_capture));
        assert.equal(row._ng_token_capture.roots, 1);
        assert.equal(row._ng_token_capture.chains, 1);
        const items = tokenItems(row);
        assert.equal(items.length, 3);
        items.forEach((item) =>
          assert.equal(reference.model.detokenize(item.generation_token_ids, false), itemText(item)),
        );
        // Each link's prompt is the previous link's prompt + generation + the interstitial turn.
        for (let i = 1; i < items.length; i++) {
          const before = [...items[i - 1]!.prompt_token_ids, ...items[i - 1]!.generation_token_ids];
          assert.deepEqual(items[i]!.prompt_token_ids.slice(0, before.length), before);
        }
        // The collector adds the indices and the reward to what /run answers; the export reads them.
        const result = trainerSample({ ...row, reward: 1, _ng_task_index: 1, _ng_rollout_index: 0 });
        assert.ok('sample' in result, JSON.stringify(result));
        const { input_ids: inputIds, loss_mask: mask, logprobs } = result.sample;
        const last = items[2]!;
        assert.deepEqual(inputIds, [...last.prompt_token_ids, ...last.generation_token_ids]);
        const expected = new Array<number>(inputIds.length).fill(0);
        for (const item of items) {
          const start = item.prompt_token_ids.length;
          item.generation_token_ids.forEach((_, j) => (expected[start + j] = 1));
          item.generation_log_probs.forEach((logProb, j) => assert.equal(logprobs[start + j], logProb));
        }
        assert.deepEqual(mask, expected);
        assert.equal(mask.filter((bit) => bit === 1).length, 6 + 7 + 8);
      },
    );
  });

  it('gives a compacting agent two roots', async () => {
    await withService(
      async (call) => {
        const messages: Message[] = [{ role: 'user', content: task(call) }];
        const first = await chat(call, messages);
        messages.push({ role: 'assistant', content: first }, { role: 'user', content: 'more' });
        const second = await chat(call, messages);
        // The context is compacted: a fresh conversation holding a summary, no prefix of the earlier ones.
        const third = await chat(call, [{ role: 'user', content: `summary: ${first.length + second.length} chars` }]);
        return responseObject([assistantMessage(first), assistantMessage(second), assistantMessage(third)]);
      },
      async (harness) => {
        const row = (await harness.run(
          basicRow('a long task', { _ng_task_index: 2, _ng_rollout_index: 0 }),
        )) as unknown as CapturedRow;
        assert.equal(row._ng_token_capture.n_calls, 3);
        assert.equal(row._ng_token_capture.roots, 2, JSON.stringify(row._ng_token_capture));
        assert.equal(tokenItems(row).length, 2, 'the delivered chain is the first root: two calls');
      },
    );
  });

  it('masks the row when a model call is cut mid-stream', async () => {
    await withService(
      async (call) => {
        const controller = new AbortController();
        const res = await fetch(modelUrl(call), {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            model: 'any',
            messages: [{ role: 'user', content: task(call) }],
            stream: true,
            max_tokens: 2000,
          }),
          signal: controller.signal,
        });
        const reader = res.body!.getReader();
        await reader.read(); // the first chunk: the stream is under way
        controller.abort();
        await reader.cancel().catch(() => undefined);
        return responseObject([assistantMessage('gave up')]);
      },
      async (harness) => {
        const row = (await harness.run(
          basicRow('stream and drop it', { _ng_task_index: 3, _ng_rollout_index: 0 }),
        )) as unknown as CapturedRow;
        assert.equal(row.mask_sample, true);
        assert.match(row._ng_token_capture.error!, /model call 0 .* failed: client_gone/);
        assert.equal(tokenItems(row).length, 0);
        assert.equal(row.ng_model_call_capture.calls[0]!.error_category, 'client_gone');
      },
    );
  });

  it('keeps 32 concurrent rollouts apart', async () => {
    await withService(
      async (call) => {
        const messages: Message[] = [{ role: 'user', content: task(call) }];
        const first = await chat(call, messages, { max_tokens: 4 });
        messages.push({ role: 'assistant', content: first }, { role: 'user', content: 'again' });
        const second = await chat(call, messages, { max_tokens: 4 });
        return responseObject([assistantMessage(first), assistantMessage(second)]);
      },
      async (harness) => {
        const rows = (await Promise.all(
          Array.from({ length: 32 }, (_, i) =>
            harness.run(basicRow(`task number ${i}`, { _ng_task_index: 100 + i, _ng_rollout_index: 0 })),
          ),
        )) as unknown as CapturedRow[];
        rows.forEach((row, i) => {
          assert.equal(row.ng_model_call_capture.rollout_id, `${100 + i}-0`);
          assert.equal(row.mask_sample, undefined, JSON.stringify(row._ng_token_capture));
          const items = tokenItems(row);
          assert.equal(items.length, 2);
          for (const item of items) {
            // The tiny vocabulary has no space piece: a space is tokenized as the bytes of SentencePiece's '▁'.
            const prompt = reference.model.detokenize(item.prompt_token_ids, false).replaceAll('▁', ' ');
            assert.match(prompt, new RegExp(`task number ${i}\\n`), `rollout ${i} saw its own task`);
            assert.equal((prompt.match(/task number/g) ?? []).length, 1, `rollout ${i} saw no other task`);
          }
        });
      },
    );
  });
});
