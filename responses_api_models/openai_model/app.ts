import { modelServerFromInstance } from '../../src/model-server/entry.js';
import { isMainModule, serveInstance } from '../../src/server/serve.js';

/**
 * `openai_model`: a model server in front of any OpenAI-compatible API (OpenAI, vLLM, llama-server, Ollama), keyed as
 * NeMo Gym's `responses_api_models/openai_model` is (`openai_base_url`, `openai_api_key`, `openai_model`,
 * `openai_default_headers`). The engine is src/model-server/ (docs/models.md).
 */
export const OPENAI_MODEL_KEYS = {
  baseUrl: 'openai_base_url',
  apiKey: 'openai_api_key',
  model: 'openai_model',
  headers: 'openai_default_headers',
} as const;

if (isMainModule(import.meta.url)) {
  // Token ids, when a rollout asks for them, as llama-server gives them (`logprobs.content[i].id`); an upstream that
  // gives none (OpenAI's API) fails such a call naming token_id_capture.
  void serveInstance(
    (ctx) => modelServerFromInstance(ctx, OPENAI_MODEL_KEYS, { tokenIdShape: () => 'llama_server' }).app,
  );
}
