import { ggufModelServer } from '../../src/model-server/gguf/entry.js';
import { isMainModule, serveInstance } from '../../src/server/serve.js';

/**
 * `gguf_model`: a model server whose model is a GGUF file run in-process with node-llama-cpp (an optional peer
 * dependency), sampling token by token with each token's id and log-probability: a remote agent with
 * `token_id_capture: true` gets exact training tokens from a model on a laptop, no GPU server needed. The engine is
 * src/model-server/gguf/ (docs/models.md).
 */
if (isMainModule(import.meta.url)) {
  let release: (() => Promise<void>) | undefined;
  void serveInstance(
    async (ctx) => {
      const { server, engine } = await ggufModelServer(ctx);
      release = () => engine.close();
      return server.app;
    },
    { onShutdown: () => release?.() ?? Promise.resolve() },
  );
}
