/**
 * What a model server's entry (`responses_api_models/<impl>/app.ts`) shares: read its block with its own key names,
 * build the server around its upstream, and serve it as `gym env start` starts every server.
 */
import type { ServeContext } from '../server/serve.js';
import { FifoSemaphore } from '../server/agent-server.js';
import { parseModelServerConfig, type UpstreamKeys } from './config.js';
import type { RolloutBookLimits } from './rollouts.js';
import { createModelServer, type ModelServer } from './server.js';
import type { TokenIdShape } from './token-ids.js';
import { OpenAiUpstream, type Upstream } from './upstream.js';

/** The dotted path of a key in the instance's block, for error paragraphs (`''` names the block itself). */
export function keyPath({ instance }: ServeContext): (key: string) => string {
  return (key) => `${instance.name}.${instance.serverType}.${instance.impl}${key === '' ? '' : `.${key}`}`;
}

/** The model server around an upstream, with the block's bounds. */
export function modelServerAround(
  { instance }: ServeContext,
  upstream: Upstream,
  settings: {
    limits: RolloutBookLimits;
    maxResponseBytes: number;
    dropInputReasoningItems: boolean;
    maxConcurrentRequests: number | null;
    translateResponses?: boolean;
  },
): ModelServer {
  return createModelServer({
    name: instance.name,
    upstream,
    limits: settings.limits,
    maxResponseBytes: settings.maxResponseBytes,
    dropInputReasoningItems: settings.dropInputReasoningItems,
    translateResponses: settings.translateResponses === true,
    ...(settings.maxConcurrentRequests !== null ? { limiter: new FifoSemaphore(settings.maxConcurrentRequests) } : {}),
  });
}

/**
 * `prepare` maps the implementation's own keys onto the shared ones (or refuses settings it accepts but cannot honour
 * yet, throwing a ConfigError); `tokenIdShape` says how the upstream gives token ids for `token_id_capture`, from the
 * block (undefined: it gives none, and a captured call through it fails naming the setting); `translateResponses`
 * says whether `/v1/responses` calls go upstream as chat completions (vllm_model unless `is_responses_native`).
 */
export function modelServerFromInstance(
  ctx: ServeContext,
  keys: UpstreamKeys,
  prepare: (inner: Record<string, unknown>, where: (key: string) => string) => Record<string, unknown> = (inner) =>
    inner,
  tokenIdShape: (inner: Record<string, unknown>) => TokenIdShape | undefined = () => undefined,
  translateResponses: (inner: Record<string, unknown>) => boolean = () => false,
): ModelServer {
  const where = keyPath(ctx);
  const config = parseModelServerConfig(prepare(ctx.instance.config, where), keys, where);
  const upstream = new OpenAiUpstream({ ...config.upstream, tokenIdShape: tokenIdShape(ctx.instance.config) });
  return modelServerAround(ctx, upstream, {
    ...config,
    maxResponseBytes: config.upstream.maxResponseBytes,
    translateResponses: translateResponses(ctx.instance.config),
  });
}
