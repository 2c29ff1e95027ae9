/**
 * What a model server's entry (`responses_api_models/<impl>/app.ts`) shares: read its block with its own key names,
 * build the server, and serve it as `gym env start` starts every server.
 */
import type { ServeContext } from '../server/serve.js';
import { FifoSemaphore } from '../server/agent-server.js';
import { parseModelServerConfig, type UpstreamKeys } from './config.js';
import { createModelServer, type ModelServer } from './server.js';
import type { TokenIdShape } from './token-ids.js';
import { OpenAiUpstream } from './upstream.js';

/**
 * `prepare` maps the implementation's own keys onto the shared ones (or refuses settings it accepts but cannot honour
 * yet, throwing a ConfigError); `tokenIdShape` says how the upstream gives token ids for `token_id_capture`, from the
 * block (undefined: it gives none, and a captured call through it fails naming the setting).
 */
export function modelServerFromInstance(
  { instance }: ServeContext,
  keys: UpstreamKeys,
  prepare: (inner: Record<string, unknown>, where: (key: string) => string) => Record<string, unknown> = (inner) =>
    inner,
  tokenIdShape: (inner: Record<string, unknown>) => TokenIdShape | undefined = () => undefined,
): ModelServer {
  const where = (key: string): string =>
    `${instance.name}.${instance.serverType}.${instance.impl}${key === '' ? '' : `.${key}`}`;
  const config = parseModelServerConfig(prepare(instance.config, where), keys, where);
  return createModelServer({
    name: instance.name,
    upstream: new OpenAiUpstream({ ...config.upstream, tokenIdShape: tokenIdShape(instance.config) }),
    limits: config.limits,
    maxResponseBytes: config.upstream.maxResponseBytes,
    dropInputReasoningItems: config.dropInputReasoningItems,
    ...(config.maxConcurrentRequests !== null ? { limiter: new FifoSemaphore(config.maxConcurrentRequests) } : {}),
  });
}
