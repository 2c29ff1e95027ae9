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
  void serveInstance((ctx) => modelServerFromInstance(ctx, OPENAI_MODEL_KEYS).app);
}
