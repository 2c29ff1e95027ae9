/**
 * A finished rollout's row made trainable from its captured model calls (the reference's
 * `finalize_rollout_token_capture`): the calls are merged by `prefix_merging`, the delivered chain is projected onto
 * the row's `response.output` (each model-generated item that a call produced gets `prompt_token_ids`, the whole
 * contiguous sequence before it, `generation_token_ids` and `generation_log_probs`), and `_ng_token_capture` reports
 * the build. A row that cannot be trained on gets `mask_sample: true` and the reason in `_ng_token_capture.error`:
 * nothing captured, a call that failed or lost its ids, an ambiguous parent, an unresolved retry, or a call whose
 * generated text is not in the row's output. Its output items then carry no token fields at all.
 *
 * A row whose output already carries token ids (the agent returned them) is left as it is: those are what the policy
 * sampled.
 */
import { isRecord } from '../contract/records.js';
import type { ModelCallCapture, ModelCallRecord } from '../model-server/records.js';
import { prefixMerging, type BuildOutput, type Chain, type TokenEntry } from './prefix-merging.js';

export const TOKEN_CAPTURE_KEY = '_ng_token_capture';
export const MASK_SAMPLE_KEY = 'mask_sample';

/** `_ng_token_capture`: the build's metrics (the reference's names) and, when the row is masked, why. */
export interface TokenCaptureReport {
  builder: 'prefix_merging';
  n_calls: number;
  roots?: number;
  chains?: number;
  quarantined_calls?: number;
  delivered_fraction?: number;
  generated_tokens_captured?: number;
  generated_tokens_delivered?: number;
  empty_generation_calls?: number;
  unresolved_retries?: number;
  error?: string;
}

/** The evaluation record as a row carries it: the token arrays and output items moved out (they are on the items). */
export function evaluationCapture(capture: ModelCallCapture): ModelCallCapture {
  const calls = capture.calls.map((call) => {
    const {
      prompt_token_ids: _p,
      generation_token_ids: _g,
      generation_log_probs: _l,
      output_items: _o,
      ...record
    } = call;
    return record;
  });
  return { ...capture, calls };
}

function carriesTokenIds(output: unknown): boolean {
  return Array.isArray(output) && output.some((item) => isRecord(item) && Array.isArray(item.generation_token_ids));
}

/** The fields to set on a finished row (its `response` with token-bearing output, the report, the mask). */
export type RebuiltFields = Record<string, unknown>;

class Unusable extends Error {}

/**
 * The fields a row gets from its capture, or undefined when the row already carries token ids. Never throws: whatever
 * goes wrong masks the row with the reason.
 */
export function rebuildTokenFields(row: Record<string, unknown>, capture: ModelCallCapture): RebuiltFields | undefined {
  const response = row.response;
  if (isRecord(response) && carriesTokenIds(response.output)) return undefined;
  const report: TokenCaptureReport = { builder: 'prefix_merging', n_calls: capture.calls.length };
  try {
    if (!isRecord(response) || !Array.isArray(response.output)) throw new Unusable('the row has no response.output');
    const entries = tokenEntries(capture);
    const built = prefixMerging(entries);
    Object.assign(report, buildMetrics(built, entries.length));
    refuseUnsafe(built);
    const main = built.chains.find((c) => c.chain_id === 'main')!;
    const output = projectChain(main, response.output as unknown[]);
    assertPrefixContiguity(output);
    return { response: { ...response, output }, [TOKEN_CAPTURE_KEY]: report };
  } catch (err) {
    report.error = err instanceof Unusable ? err.message : `${(err as Error).name}: ${(err as Error).message}`;
    return { [MASK_SAMPLE_KEY]: true, [TOKEN_CAPTURE_KEY]: report };
  }
}

/** A failure row (the rollout itself failed): never trainable, and says so. */
export function maskedFailureFields(capture: ModelCallCapture): RebuiltFields {
  const report: TokenCaptureReport = {
    builder: 'prefix_merging',
    n_calls: capture.calls.length,
    error: 'the rollout failed, so its capture is not delivered',
  };
  return { [MASK_SAMPLE_KEY]: true, [TOKEN_CAPTURE_KEY]: report };
}

/** The captured calls as builder entries; a gap, a failed call or a call without ids makes the rollout unusable. */
function tokenEntries(capture: ModelCallCapture): TokenEntry[] {
  if (capture.gaps && capture.gaps.length > 0) {
    throw new Unusable(`the capture is incomplete: ${capture.gaps.map((g) => g.detail ?? g.code).join('; ')}`);
  }
  if (capture.calls.length === 0) {
    throw new Unusable(
      'nothing was recorded for this rollout: its service made no model call through the rollout URL it was given',
    );
  }
  return capture.calls.map(entryOf);
}

function entryOf(call: ModelCallRecord): TokenEntry {
  if (call.error_category !== null) {
    throw new Unusable(`model call ${call.call_index} (${call.model_call_id}) failed: ${call.error_category}`);
  }
  const { prompt_token_ids: prompt, generation_token_ids: ids, generation_log_probs: logProbs } = call;
  if (!prompt || !ids || !logProbs) {
    throw new Unusable(
      `model call ${call.call_index} (${call.model_call_id}) has no token ids` +
        (call.token_id_capture ? '' : ': it was not made through the training-token-capture URL the service was given'),
    );
  }
  if (ids.length !== logProbs.length) {
    throw new Unusable(
      `model call ${call.call_index} has ${ids.length} generated ids and ${logProbs.length} log-probs`,
    );
  }
  return {
    model_call_id: call.model_call_id,
    prompt_token_ids: prompt,
    generation_token_ids: ids,
    generation_log_probs: logProbs,
    output_items: call.output_items ?? [],
    created_at: call.completed_at ?? call.started_at,
  };
}

function buildMetrics(built: BuildOutput, calls: number): Partial<TokenCaptureReport> {
  const notes = built.notes;
  return {
    roots: notes.roots,
    chains: notes.chains,
    quarantined_calls: built.quarantined.length,
    delivered_fraction: notes.delivered_fraction,
    generated_tokens_captured: notes.generated_tokens_captured,
    generated_tokens_delivered: notes.generated_tokens_delivered,
    empty_generation_calls: notes.empty_generation_calls.length,
    unresolved_retries: notes.unresolved_retries.length,
    n_calls: calls,
  };
}

function refuseUnsafe(built: BuildOutput): void {
  if (built.ambiguous.length > 0) {
    throw new Unusable(`ambiguous parent: call(s) ${built.ambiguous.join(', ')} extend two identical earlier calls`);
  }
  if (built.notes.unresolved_retries.length > 0) {
    throw new Unusable(
      `unresolved retry: calls ${built.notes.unresolved_retries.join(', ')} share a prompt and no later call says ` +
        'which one the agent kept',
    );
  }
  if (built.chains.length === 0) throw new Unusable('no call generated a token, so there is nothing to train on');
}

/** Model-generated output items: the ones a captured call's output is matched against. */
function isModelItem(item: unknown): item is Record<string, unknown> {
  return isRecord(item) && (item.type === 'function_call' || (item.type === 'message' && item.role === 'assistant'));
}

function messageText(item: Record<string, unknown>): string {
  if (typeof item.content === 'string') return item.content;
  if (!Array.isArray(item.content)) return '';
  return item.content
    .map((part) => (isRecord(part) && typeof part.text === 'string' && part.type !== 'refusal' ? part.text : ''))
    .join('');
}

function sameGeneration(captured: Record<string, unknown>, item: Record<string, unknown>): boolean {
  if (captured.type !== item.type) return false;
  if (captured.type === 'function_call') return captured.name === item.name && captured.arguments === item.arguments;
  return messageText(captured) === messageText(item);
}

/**
 * The delivered chain onto the row's output: each link's generated items are found in order in the output (the
 * service may put tool outputs and its own items between them), and the last of them carries the link's tokens. A
 * generated item missing from the output is a mismatch: the row is not what the tokens say.
 */
function projectChain(chain: Chain, original: readonly unknown[]): unknown[] {
  const output: unknown[] = original.map((item) => (isRecord(item) ? { ...item } : item));
  let cursor = 0;
  let before: number[] = [...chain.root_prompt];
  for (const [step, link] of chain.links.entries()) {
    if (step > 0) before = before.concat(link.interstitial);
    const tokens = {
      prompt_token_ids: before,
      generation_token_ids: [...link.entry.generation_token_ids],
      generation_log_probs: [...link.entry.generation_log_probs],
    };
    const wanted = link.entry.output_items.filter(isModelItem);
    if (wanted.length === 0) {
      // A generation with no visible item (an end token alone, reasoning only): a token-only item keeps it in place.
      output.splice(cursor, 0, { type: 'message', role: 'assistant', content: [], ...tokens });
      cursor++;
    } else {
      let carrier: Record<string, unknown> | undefined;
      for (const item of wanted) {
        const at = output.findIndex(
          (candidate, i) => i >= cursor && isModelItem(candidate) && sameGeneration(item, candidate),
        );
        if (at < 0) {
          throw new Unusable(
            `model call ${link.entry.model_call_id} generated ${describe(item)}, which is not in the row's output ` +
              '(the service changed or dropped what the model generated)',
          );
        }
        carrier = output[at] as Record<string, unknown>;
        cursor = at + 1;
      }
      Object.assign(carrier!, tokens);
    }
    before = before.concat(tokens.generation_token_ids);
  }
  return output;
}

function describe(item: Record<string, unknown>): string {
  const text = item.type === 'function_call' ? `a call of ${String(item.name)}` : JSON.stringify(messageText(item));
  return text.length > 80 ? `${text.slice(0, 80)}…` : text;
}

/** The reference's `assert_prefix_contiguity`: each token-bearing item's prompt extends every token seen before. */
export function assertPrefixContiguity(output: readonly unknown[]): void {
  let seen: readonly number[] = [];
  for (const item of output) {
    if (!isRecord(item) || !Array.isArray(item.generation_token_ids)) continue;
    const prompt = (item.prompt_token_ids ?? []) as number[];
    if (prompt.length < seen.length || seen.some((id, i) => prompt[i] !== id)) {
      throw new Unusable(
        "the projection is not prefix-contiguous: an item's prompt_token_ids does not extend the tokens before it",
      );
    }
    seen = [...prompt, ...(item.generation_token_ids as number[])];
  }
}
