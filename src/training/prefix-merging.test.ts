/**
 * `prefix_merging` and the row rebuild over synthetic captured calls: every shape the spec names (append-only,
 * compaction, ambiguous parent, retries resolved and not, empty calls) and every reason a row is masked.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ModelCallCapture, ModelCallRecord } from '../model-server/records.js';
import { flatten, perRequest, prefixMerging, type TokenEntry } from './prefix-merging.js';
import {
  assertPrefixContiguity,
  evaluationCapture,
  MASK_SAMPLE_KEY,
  rebuildTokenFields,
  TOKEN_CAPTURE_KEY,
} from './rebuild.js';

function entry(id: string, prompt: number[], generation: number[], createdAt = 0, text = `text of ${id}`): TokenEntry {
  return {
    model_call_id: id,
    prompt_token_ids: prompt,
    generation_token_ids: generation,
    generation_log_probs: generation.map((t) => -t / 100),
    output_items: [{ type: 'message', role: 'assistant', content: [{ type: 'output_text', text }] }],
    created_at: createdAt,
  };
}

/** Three append-only calls: system+user, then each adds the generation and a tool result. */
const appendOnly = [
  entry('c1', [1, 2, 3], [10, 11], 1),
  entry('c2', [1, 2, 3, 10, 11, 90, 91], [20, 21, 22], 2),
  entry('c3', [1, 2, 3, 10, 11, 90, 91, 20, 21, 22, 92], [30], 3),
];

describe('prefixMerging', () => {
  it('rebuilds an append-only rollout as one chain, whatever order the calls arrived in', () => {
    for (const order of [appendOnly, [...appendOnly].reverse(), [appendOnly[1]!, appendOnly[2]!, appendOnly[0]!]]) {
      const out = prefixMerging(order);
      assert.equal(out.chains.length, 1);
      assert.equal(out.notes.roots, 1);
      const chain = out.chains[0]!;
      assert.equal(chain.chain_id, 'main');
      assert.deepEqual(
        chain.links.map((l) => [l.entry.model_call_id, l.interstitial]),
        [
          ['c1', []],
          ['c2', [90, 91]],
          ['c3', [92]],
        ],
      );
      assert.equal(out.notes.delivered_fraction, 1);
      assert.equal(out.notes.generated_tokens_captured, 6);
      assert.equal(out.notes.generated_tokens_delivered, 6);
    }
  });

  it('gives the loss mask 1 on generated tokens and 0 on prompt and interstitial tokens', () => {
    const flat = flatten(prefixMerging(appendOnly).chains[0]!);
    assert.deepEqual(flat.token_ids, [1, 2, 3, 10, 11, 90, 91, 20, 21, 22, 92, 30]);
    assert.deepEqual(flat.loss_mask, [0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 0, 1]);
    assert.deepEqual(flat.log_probs, [0, 0, 0, -0.1, -0.11, 0, 0, -0.2, -0.21, -0.22, 0, -0.3]);
  });

  it('splits a compacted rollout into two roots: the first-finished chain delivered, the other a counted branch', () => {
    const compacted = [
      ...appendOnly.slice(0, 2),
      // The harness summarised its context: a new prompt that extends nothing.
      entry('c3', [1, 2, 77, 78], [40, 41, 42, 43], 3),
      entry('c4', [1, 2, 77, 78, 40, 41, 42, 43, 93], [50], 4),
    ];
    const out = prefixMerging(compacted);
    assert.equal(out.notes.roots, 2);
    assert.equal(out.notes.chains, 2);
    const main = out.chains.find((c) => c.chain_id === 'main')!;
    assert.deepEqual(
      main.links.map((l) => l.entry.model_call_id),
      ['c1', 'c2'],
    );
    assert.deepEqual(
      out.chains.find((c) => c.chain_id === 'branch-0')!.links.map((l) => l.entry.model_call_id),
      ['c3', 'c4'],
    );
    assert.equal(out.notes.generated_tokens_captured, 10);
    assert.equal(out.notes.generated_tokens_delivered, 5);
    assert.equal(out.notes.delivered_fraction, 0.5);
  });

  it('quarantines a call whose two candidate parents are identical', () => {
    const twins = [
      entry('a', [1, 2], [3], 1),
      entry('b', [1, 2], [3], 2), // same prompt and generation: a retry that produced the same tokens
      entry('c', [1, 2, 3, 4], [5], 3),
    ];
    const out = prefixMerging(twins);
    assert.deepEqual(out.ambiguous, ['c']);
    assert.ok(out.quarantined.includes('c'));
    assert.ok(out.chains.every((chain) => chain.links.every((l) => l.entry.model_call_id !== 'c')));
  });

  it('resolves a retry by the sibling a later call extends', () => {
    const retried = [
      entry('r1', [1, 2], [7, 7], 1), // the client never received this one
      entry('r2', [1, 2], [8], 2),
      entry('r3', [1, 2, 8, 9], [10], 3),
    ];
    const out = prefixMerging(retried);
    assert.deepEqual(out.notes.unresolved_retries, []);
    assert.deepEqual(out.quarantined, ['r1']);
    assert.equal(out.chains.length, 1);
    assert.deepEqual(
      out.chains[0]!.links.map((l) => l.entry.model_call_id),
      ['r2', 'r3'],
    );
  });

  it('marks a retried final call unresolved and keeps the lowest id', () => {
    const out = prefixMerging([entry('z2', [1, 2], [8], 1), entry('z1', [1, 2], [9], 2)]);
    assert.deepEqual(out.notes.unresolved_retries.sort(), ['z1', 'z2']);
    assert.deepEqual(out.quarantined, ['z2']);
    assert.deepEqual(
      out.chains.map((c) => c.links[0]!.entry.model_call_id),
      ['z1'],
    );
  });

  it('drops calls with no generated token, so they never pose as parents', () => {
    const out = prefixMerging([
      entry('e', [1, 2], [], 0),
      entry('x', [1, 2], [3], 1),
      entry('y', [1, 2, 3, 4], [5], 2),
    ]);
    assert.deepEqual(out.notes.empty_generation_calls, ['e']);
    assert.deepEqual(out.notes.unresolved_retries, [], 'the empty call is no retry sibling of x');
    assert.deepEqual(
      out.chains[0]!.links.map((l) => l.entry.model_call_id),
      ['x', 'y'],
    );
  });

  it('per_request makes one chain per call', () => {
    const out = perRequest(appendOnly);
    assert.deepEqual(
      out.chains.map((c) => [c.chain_id, c.links.length]),
      [
        ['req-0', 1],
        ['req-1', 1],
        ['req-2', 1],
      ],
    );
  });
});

// ---------------------------------------------------------------------------------------------------------------
// The row rebuild

function record(e: TokenEntry, index: number, extra: Partial<ModelCallRecord> = {}): ModelCallRecord {
  return {
    model_call_id: e.model_call_id,
    response_id: null,
    call_index: index,
    model_ref: { type: 'responses_api_models', name: 'policy_model' },
    model: 'm',
    dialect: 'chat',
    status_code: 200,
    response_status: null,
    finish_reason: 'stop',
    started_at: e.created_at - 0.5,
    completed_at: e.created_at,
    tokens_in: e.prompt_token_ids.length,
    tokens_out: e.generation_token_ids.length,
    tokens_reasoning: null,
    tokens_total: null,
    cached_tokens: null,
    error_category: null,
    latency_total_ms: 1,
    latency_ttft_ms: null,
    prompt_token_ids: [...e.prompt_token_ids],
    generation_token_ids: [...e.generation_token_ids],
    generation_log_probs: [...e.generation_log_probs],
    output_items: [...e.output_items],
    token_id_capture: true,
    ...extra,
  };
}

function captureOf(calls: ModelCallRecord[], gaps?: ModelCallCapture['gaps']): ModelCallCapture {
  return {
    rollout_id: '0-0',
    metrics: {
      tokens_in: null,
      tokens_out: null,
      tokens_reasoning: null,
      tokens_total: null,
      cached_tokens: null,
      latency_total_ms: null,
      num_calls: calls.length,
    },
    calls,
    ...(gaps ? { gaps } : {}),
  };
}

/** The row's output as the service returned it: each call's message, with Gym's tool outputs between. */
function rowOf(texts: string[]): Record<string, unknown> {
  const output: unknown[] = [];
  texts.forEach((text, i) => {
    output.push({ type: 'message', role: 'assistant', content: [{ type: 'output_text', text }] });
    output.push({ type: 'function_call_output', call_id: `t${i}`, output: 'tool says' });
  });
  return { reward: 1, response: { id: 'r', output } };
}

const texts = appendOnly.map((e) => (e.output_items[0]!.content as { text: string }[])[0]!.text);

describe('rebuildTokenFields', () => {
  it('projects the chain onto the output: contiguous prompts, exact ids and log-probs, a report', () => {
    const fields = rebuildTokenFields(rowOf(texts), captureOf(appendOnly.map((e, i) => record(e, i))))!;
    assert.equal(fields[MASK_SAMPLE_KEY], undefined, JSON.stringify(fields[TOKEN_CAPTURE_KEY]));
    const output = (fields.response as { output: Record<string, unknown>[] }).output;
    const carriers = output.filter((item) => item.generation_token_ids);
    assert.equal(carriers.length, 3);
    assert.deepEqual(carriers[0]!.prompt_token_ids, [1, 2, 3]);
    assert.deepEqual(carriers[1]!.prompt_token_ids, [1, 2, 3, 10, 11, 90, 91]);
    assert.deepEqual(carriers[2]!.prompt_token_ids, [1, 2, 3, 10, 11, 90, 91, 20, 21, 22, 92]);
    assert.deepEqual(carriers[1]!.generation_token_ids, [20, 21, 22]);
    assert.deepEqual(carriers[1]!.generation_log_probs, [-0.2, -0.21, -0.22]);
    assert.ok(
      output.some((item) => item.type === 'function_call_output'),
      'tool outputs are kept',
    );
    assertPrefixContiguity(output);
    assert.deepEqual(fields[TOKEN_CAPTURE_KEY], {
      builder: 'prefix_merging',
      n_calls: 3,
      roots: 1,
      chains: 1,
      quarantined_calls: 0,
      delivered_fraction: 1,
      generated_tokens_captured: 6,
      generated_tokens_delivered: 6,
      empty_generation_calls: 0,
      unresolved_retries: 0,
    });
  });

  const masked: [string, () => RebuiltArgs, RegExp][] = [
    ['nothing recorded', () => [rowOf(texts), captureOf([])], /nothing was recorded/],
    [
      'a failed call',
      () => [rowOf(texts), captureOf([record(appendOnly[0]!, 0, { error_category: 'upstream_stream_cut' })])],
      /failed: upstream_stream_cut/,
    ],
    [
      'a call without ids',
      () => {
        const { prompt_token_ids: _p, ...lost } = record(appendOnly[0]!, 0);
        return [rowOf(texts), captureOf([lost])];
      },
      /has no token ids/,
    ],
    [
      'a gap',
      () => [
        rowOf(texts),
        captureOf([record(appendOnly[0]!, 0)], [{ code: 'token_id_capture_over_cap', detail: 'over' }]),
      ],
      /incomplete: over/,
    ],
    [
      'an ambiguous parent',
      () => [
        rowOf(['a', 'b', 'c']),
        captureOf(
          [entry('a', [1], [2], 1, 'a'), entry('b', [1], [2], 2, 'b'), entry('c', [1, 2, 3], [4], 3, 'c')].map((e, i) =>
            record(e, i),
          ),
        ),
      ],
      /ambiguous parent/,
    ],
    [
      'an unresolved retry',
      () => [
        rowOf(['a', 'b']),
        captureOf([entry('a', [1], [2], 1, 'a'), entry('b', [1], [3], 2, 'b')].map((e, i) => record(e, i))),
      ],
      /unresolved retry/,
    ],
    [
      'text the output does not hold',
      () => [
        rowOf([texts[0]!, 'the service rewrote this', texts[2]!]),
        captureOf(appendOnly.map((e, i) => record(e, i))),
      ],
      /not in the row's output/,
    ],
  ];
  for (const [what, args, reason] of masked) {
    it(`masks the row, with the reason, on ${what}`, () => {
      const fields = rebuildTokenFields(...args())!;
      assert.equal(fields[MASK_SAMPLE_KEY], true);
      const report = fields[TOKEN_CAPTURE_KEY] as { error: string };
      assert.match(report.error, reason);
      assert.equal(fields.response, undefined, 'a masked row gets no token fields on its output');
    });
  }

  it('leaves a row whose agent already returned token ids as it is', () => {
    const row = rowOf(texts);
    (row.response as { output: Record<string, unknown>[] }).output[0]!.generation_token_ids = [1];
    assert.equal(rebuildTokenFields(row, captureOf([])), undefined);
  });

  it('keeps token arrays out of the evaluation record on the row', () => {
    const capture = evaluationCapture(captureOf([record(appendOnly[0]!, 0)]));
    assert.equal(JSON.stringify(capture).includes('prompt_token_ids'), false);
    assert.equal(JSON.stringify(capture).includes('output_items'), false);
    assert.equal(capture.calls[0]!.tokens_in, 3);
  });
});

type RebuiltArgs = [Record<string, unknown>, ModelCallCapture];
