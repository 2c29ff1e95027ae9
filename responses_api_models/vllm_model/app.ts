import { isPlainObject } from '../../src/config/types.js';
import { ConfigError } from '../../src/errors.js';
import { modelServerFromInstance } from '../../src/model-server/entry.js';
import { isMainModule, serveInstance } from '../../src/server/serve.js';

/**
 * `vllm_model`: a model server in front of a vLLM server (or any OpenAI-compatible one), keyed as NeMo Gym's
 * `responses_api_models/vllm_model` is (`base_url`, `api_key`, `model`, `default_headers`, `extra_body`, …). Calls
 * are relayed as they are on both dialects; the reference's Responses-to-chat translation and token-id capture
 * (`return_token_id_information`) are not available yet, and a setting that needs them stops start-up.
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
  if (inner.return_token_id_information === true) {
    throw new ConfigError(
      `${where('return_token_id_information')} is true, but token-id capture is not available in tsgym's vllm_model ` +
        'yet: its rows would carry no prompt_token_ids, generation_token_ids or generation_log_probs, and would look ' +
        'trainable without being so. Set it to false (evaluation records of every call are still kept), or run the ' +
        "reference's Python vllm_model with server_dir.",
      'GYM_CONFIG_TOKEN_CAPTURE',
    );
  }
  if (inner.request_prompt_and_generation_token_ids === true) {
    throw new ConfigError(
      `${where('request_prompt_and_generation_token_ids')} is true, but token-id capture is not available in tsgym's ` +
        'vllm_model yet. Set it to false.',
      'GYM_CONFIG_TOKEN_CAPTURE',
    );
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

if (isMainModule(import.meta.url)) {
  void serveInstance((ctx) => modelServerFromInstance(ctx, VLLM_MODEL_KEYS, prepareVllmBlock).app);
}
