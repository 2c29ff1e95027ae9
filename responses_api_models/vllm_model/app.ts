import { isPlainObject } from '../../src/config/types.js';
import { ConfigError } from '../../src/errors.js';
import { modelServerFromInstance } from '../../src/model-server/entry.js';
import type { TokenIdShape } from '../../src/model-server/token-ids.js';
import { isMainModule, serveInstance } from '../../src/server/serve.js';

/**
 * `vllm_model`: a model server in front of a vLLM server (or any OpenAI-compatible one), keyed as NeMo Gym's
 * `responses_api_models/vllm_model` is (`base_url`, `api_key`, `model`, `default_headers`, `extra_body`, …). Calls
 * on `/v1/chat/completions` are relayed as they are; a `/v1/responses` call is translated, as the reference's is, into
 * a chat completion for vLLM and its answer (or stream) back into a Responses object (src/model-server/responses-chat.ts),
 * unless `is_responses_native: true` (the reference's key: a model vLLM serves on its own `/v1/responses`), which relays
 * it as it is. `return_token_id_information: true` lets a remote agent with `token_id_capture: true` capture each call's
 * token ids and log-probs from vLLM (src/model-server/token-ids.ts); `request_prompt_and_generation_token_ids` is
 * accepted (tsgym always asks vLLM for `return_token_ids`, and falls back to `/tokenize` when it gives none).
 */
export const VLLM_MODEL_KEYS = {
  baseUrl: 'base_url',
  apiKey: 'api_key',
  model: 'model',
  headers: 'default_headers',
} as const;

/**
 * The block as the shared engine reads it: `chat_template_kwargs` goes into every body (vLLM reads it there), and
 * settings of the reference that this server cannot honour yet are refused rather than silently ignored.
 */
export function prepareVllmBlock(
  inner: Record<string, unknown>,
  where: (key: string) => string,
): Record<string, unknown> {
  for (const key of ['return_token_id_information', 'request_prompt_and_generation_token_ids', 'is_responses_native']) {
    const value = inner[key];
    if (value !== undefined && value !== null && typeof value !== 'boolean') {
      throw new ConfigError(`${where(key)} must be true or false, got ${JSON.stringify(value)}.`);
    }
  }
  const overrides = inner.sampling_overrides;
  if (overrides !== undefined && overrides !== null) {
    throw new ConfigError(
      `${where('sampling_overrides')} is set, which tsgym's vllm_model does not apply yet. Remove it, or put fixed ` +
        'sampling parameters in extra_body (merged under every request body).',
    );
  }
  const kwargs = inner.chat_template_kwargs;
  if (kwargs === undefined || kwargs === null) return inner;
  if (!isPlainObject(kwargs)) throw new ConfigError(`${where('chat_template_kwargs')} must be a mapping or null.`);
  const extra = isPlainObject(inner.extra_body) ? inner.extra_body : {};
  return { ...inner, extra_body: { ...extra, chat_template_kwargs: kwargs } };
}

/** vLLM gives token ids only when the block asks for them (`return_token_id_information: true`). */
export function vllmTokenIdShape(inner: Record<string, unknown>): TokenIdShape | undefined {
  return inner.return_token_id_information === true ? 'vllm' : undefined;
}

/** The reference translates `/v1/responses` into chat completions unless the block says `is_responses_native: true`. */
export function vllmTranslatesResponses(inner: Record<string, unknown>): boolean {
  return inner.is_responses_native !== true;
}

if (isMainModule(import.meta.url)) {
  void serveInstance(
    (ctx) =>
      modelServerFromInstance(ctx, VLLM_MODEL_KEYS, {
        prepare: prepareVllmBlock,
        tokenIdShape: vllmTokenIdShape,
        translateResponses: vllmTranslatesResponses,
        tokensOnAnswer: (inner) => inner.return_token_id_information === true,
      }).app,
  );
}
