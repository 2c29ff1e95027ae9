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
    tokensOnAnswer?: boolean;
  },
): ModelServer {
  return createModelServer({
    name: instance.name,
    upstream,
    limits: settings.limits,
    maxResponseBytes: settings.maxResponseBytes,
    dropInputReasoningItems: settings.dropInputReasoningItems,
    translateResponses: settings.translateResponses === true,
    tokensOnAnswer: settings.tokensOnAnswer === true,
    ...(settings.maxConcurrentRequests !== null ? { limiter: new FifoSemaphore(settings.maxConcurrentRequests) } : {}),
  });
}

/** How an implementation's block differs from the shared engine's, each read from the block. */
export interface ImplementationHooks {
  /** Map the implementation's own keys onto the shared ones, or refuse settings it cannot honour (ConfigError). */
  prepare?: (inner: Record<string, unknown>, where: (key: string) => string) => Record<string, unknown>;
  /** How the upstream gives token ids for `token_id_capture`; undefined: it gives none (a captured call fails). */
  tokenIdShape?: (inner: Record<string, unknown>) => TokenIdShape | undefined;
  /** `/v1/responses` calls go upstream as chat completions (vllm_model unless `is_responses_native`). */
  translateResponses?: (inner: Record<string, unknown>) => boolean;
  /** Every whole chat answer carries its token ids, as the reference's `return_token_id_information` gives them. */
  tokensOnAnswer?: (inner: Record<string, unknown>) => boolean;
}

export function modelServerFromInstance(
  ctx: ServeContext,
  keys: UpstreamKeys,
  hooks: ImplementationHooks = {},
): ModelServer {
  const where = keyPath(ctx);
  const inner = ctx.instance.config;
  const config = parseModelServerConfig(hooks.prepare ? hooks.prepare(inner, where) : inner, keys, where);
  const upstream = new OpenAiUpstream({ ...config.upstream, tokenIdShape: hooks.tokenIdShape?.(inner) });
  return modelServerAround(ctx, upstream, {
    ...config,
    maxResponseBytes: config.upstream.maxResponseBytes,
    translateResponses: hooks.translateResponses?.(inner) === true,
    tokensOnAnswer: hooks.tokensOnAnswer?.(inner) === true,
  });
}
