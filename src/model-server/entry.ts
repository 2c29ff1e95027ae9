/**
 * What a model server's entry (`responses_api_models/<impl>/app.ts`) shares: read its block with its own key names,
 * build the server, and serve it as `gym env start` starts every server.
 */
import type { ServeContext } from '../server/serve.js';
import { FifoSemaphore } from '../server/agent-server.js';
import { parseModelServerConfig, type UpstreamKeys } from './config.js';
import { createModelServer, type ModelServer } from './server.js';
import { OpenAiUpstream } from './upstream.js';

/**
 * `prepare` maps the implementation's own keys onto the shared ones (or refuses settings it accepts but cannot honour
 * yet, throwing a ConfigError).
 */
export function modelServerFromInstance(
  { instance }: ServeContext,
  keys: UpstreamKeys,
  prepare: (inner: Record<string, unknown>, where: (key: string) => string) => Record<string, unknown> = (inner) =>
    inner,
): ModelServer {
  const where = (key: string): string =>
    `${instance.name}.${instance.serverType}.${instance.impl}${key === '' ? '' : `.${key}`}`;
  const config = parseModelServerConfig(prepare(instance.config, where), keys, where);
  return createModelServer({
    name: instance.name,
    upstream: new OpenAiUpstream(config.upstream),
    limits: config.limits,
    maxResponseBytes: config.upstream.maxResponseBytes,
    dropInputReasoningItems: config.dropInputReasoningItems,
    ...(config.maxConcurrentRequests !== null ? { limiter: new FifoSemaphore(config.maxConcurrentRequests) } : {}),
  });
}
