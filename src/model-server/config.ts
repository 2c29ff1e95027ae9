/**
 * A model server's config block, validated at start-up so a bad value stops it with one paragraph naming the key.
 * The upstream keys are the reference's and differ by implementation (`openai_model`: `openai_base_url`,
 * `openai_api_key`, `openai_model`, `openai_default_headers`; `vllm_model`: `base_url`, `api_key`, `model`,
 * `default_headers`): each implementation's entry passes its names (`UpstreamKeys`). The bounds are tsgym's own and
 * shared by all of them.
 */
import { z } from 'zod';
import { integerAtLeast, instanceKeyParagraph, onOff, parseBlock, positiveSeconds } from '../config/fields.js';
import { isPlainObject, MISSING_VALUE } from '../config/types.js';
import { ConfigError } from '../errors.js';
import { DEFAULT_MAX_CAPTURED_TOKENS_PER_ROLLOUT, type RolloutBookLimits } from './rollouts.js';
import type { OpenAiUpstreamOptions } from './upstream.js';

export interface UpstreamKeys {
  baseUrl: string;
  apiKey: string;
  model: string;
  headers: string;
}

export interface ModelServerConfig {
  upstream: OpenAiUpstreamOptions;
  limits: RolloutBookLimits;
  dropInputReasoningItems: boolean;
  /** `max_concurrent_requests`: null = no cap. */
  maxConcurrentRequests: number | null;
}

export const MODEL_SERVER_DEFAULTS = {
  requestTimeoutSecs: 1800,
  maxResponseBytes: 64 * 1024 * 1024,
  maxOpenRollouts: 4096,
  maxCallsPerRollout: 1024,
  rolloutIdleTimeoutSecs: 3600,
  maxCapturedTokensPerRollout: DEFAULT_MAX_CAPTURED_TOKENS_PER_ROLLOUT,
} as const;

const BOUNDS = z.object({
  request_timeout_secs: positiveSeconds(MODEL_SERVER_DEFAULTS.requestTimeoutSecs),
  max_response_bytes: integerAtLeast(1, MODEL_SERVER_DEFAULTS.maxResponseBytes),
  max_open_rollouts: integerAtLeast(1, MODEL_SERVER_DEFAULTS.maxOpenRollouts),
  max_calls_per_rollout: integerAtLeast(1, MODEL_SERVER_DEFAULTS.maxCallsPerRollout),
  max_captured_tokens_per_rollout: integerAtLeast(1, MODEL_SERVER_DEFAULTS.maxCapturedTokensPerRollout),
  rollout_idle_timeout_secs: positiveSeconds(MODEL_SERVER_DEFAULTS.rolloutIdleTimeoutSecs),
  max_concurrent_requests: integerAtLeast(1, undefined, { rule: 'an integer >= 1, or null for no cap' }),
  drop_input_reasoning_items: onOff(false),
});

export function isUnset(value: unknown): boolean {
  return value === undefined || value === null || value === MISSING_VALUE;
}

/** tsgym's own bounds and knobs, the same for every implementation. */
export interface ServerSettings {
  limits: RolloutBookLimits;
  dropInputReasoningItems: boolean;
  /** `max_concurrent_requests`: null = no cap. */
  maxConcurrentRequests: number | null;
  timeoutMs: number;
  maxResponseBytes: number;
  extraBody: Record<string, unknown>;
}

export function parseServerSettings(inner: Record<string, unknown>, where: (key: string) => string): ServerSettings {
  const scalars = Object.fromEntries(
    Object.keys(BOUNDS.shape).map((key) => [key, isUnset(inner[key]) ? undefined : inner[key]]),
  );
  const block = parseBlock(BOUNDS, scalars, instanceKeyParagraph(where('').replace(/\.$/, '')));
  return {
    limits: {
      maxOpen: block.max_open_rollouts,
      maxCallsPerRollout: block.max_calls_per_rollout,
      idleMs: block.rollout_idle_timeout_secs * 1000,
      maxCapturedTokensPerRollout: block.max_captured_tokens_per_rollout,
    },
    dropInputReasoningItems: block.drop_input_reasoning_items,
    maxConcurrentRequests: block.max_concurrent_requests ?? null,
    timeoutMs: block.request_timeout_secs * 1000,
    maxResponseBytes: block.max_response_bytes,
    extraBody: objectOrEmpty(inner.extra_body, where('extra_body')),
  };
}

/** `where(key)` is the dotted path of a key, e.g. `policy_model.responses_api_models.openai_model.openai_model`. */
export function parseModelServerConfig(
  inner: Record<string, unknown>,
  keys: UpstreamKeys,
  where: (key: string) => string,
): ModelServerConfig {
  const baseUrl = upstreamBaseUrl(inner[keys.baseUrl], where(keys.baseUrl));
  const model = inner[keys.model];
  if (typeof model !== 'string' || model.trim() === '' || model === MISSING_VALUE) {
    throw new ConfigError(
      `${where(keys.model)} is required: the model name the upstream serves (sent as "model" on every call), ` +
        `got ${JSON.stringify(model ?? null)}.`,
    );
  }
  const apiKey = inner[keys.apiKey];
  if (!isUnset(apiKey) && typeof apiKey !== 'string') {
    throw new ConfigError(`${where(keys.apiKey)} must be a string (the upstream's API key), got a ${typeof apiKey}.`);
  }
  const settings = parseServerSettings(inner, where);
  return {
    upstream: {
      baseUrl,
      // An empty key (local servers need none) sends no Authorization header.
      apiKey: typeof apiKey === 'string' && apiKey !== '' && apiKey !== MISSING_VALUE ? apiKey : undefined,
      model,
      defaultHeaders: stringMap(inner[keys.headers], where(keys.headers)),
      extraBody: settings.extraBody,
      timeoutMs: settings.timeoutMs,
      maxResponseBytes: settings.maxResponseBytes,
    },
    limits: settings.limits,
    dropInputReasoningItems: settings.dropInputReasoningItems,
    maxConcurrentRequests: settings.maxConcurrentRequests,
  };
}

function stringMap(raw: unknown, where: string): Record<string, string> {
  if (isUnset(raw)) return {};
  if (!isPlainObject(raw) || Object.values(raw).some((value) => typeof value !== 'string')) {
    throw new ConfigError(`${where} must be a mapping of header names to string values, e.g. {X-Org: my-org}.`);
  }
  return raw as Record<string, string>;
}

function objectOrEmpty(raw: unknown, where: string): Record<string, unknown> {
  if (isUnset(raw)) return {};
  if (!isPlainObject(raw)) throw new ConfigError(`${where} must be a mapping (keys merged into every request body).`);
  return raw;
}

/**
 * The upstream's base URL, `/v1` included (calls go to `<base>/responses` and `<base>/chat/completions`). The error
 * never repeats the value: a URL may hold a credential.
 */
function upstreamBaseUrl(raw: unknown, where: string): string {
  const example = 'e.g. http://localhost:8000/v1 or https://api.openai.com/v1';
  if (Array.isArray(raw)) {
    if (raw.length !== 1) {
      throw new ConfigError(
        `${where} lists ${raw.length} replicas; tsgym's model server talks to one upstream (replica pinning is not ` +
          'available yet). Give one base URL, or start one model server per replica.',
      );
    }
    return upstreamBaseUrl(raw[0], where);
  }
  if (typeof raw !== 'string' || raw.trim() === '' || raw === MISSING_VALUE) {
    throw new ConfigError(`${where} is required: the upstream's OpenAI-compatible base URL, ${example}.`);
  }
  let url: URL | undefined;
  try {
    url = new URL(raw.trim());
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.username !== '' || url.password !== '') {
    throw new ConfigError(
      `${where} is rejected (value not shown, it may hold a secret): it must be an http(s) URL without embedded ` +
        `credentials (the key goes in the api key setting), ${example}.`,
    );
  }
  return raw.trim().replace(/\/+$/, '');
}
