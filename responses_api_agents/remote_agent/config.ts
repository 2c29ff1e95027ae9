import { z } from 'zod';
import { MISSING_VALUE } from '../../src/config/types.js';
import { ConfigError } from '../../src/errors.js';
import { authWarnings, parseServiceAuth } from '../../src/http/service-auth.js';
import { normalizeAgentBaseUrl } from '../../src/http/service-url.js';
import { DEFAULTS, pyFloat, type RemoteAgentConfig, type ResourcesServerRef } from '../../src/rollout/settings.js';

/**
 * The remote agent's own config block (`<instance>.responses_api_agents.remote_agent`), validated up front so a
 * bad value stops start-up with one paragraph naming the key, the value and the rule (decision D18), instead of
 * surfacing as a hung or failing rollout later (reference quirks listed in U26).
 */

/** A key left unset: absent, null, or still OmegaConf's `???`. Every optional key then takes its default. */
const UNSET = z.union([z.undefined(), z.null(), z.literal(MISSING_VALUE)]);

const integerAtLeastOne = z.number().refine((n) => Number.isInteger(n) && n >= 1);
/** zod's number is finite: NaN and ±Infinity are refused with the rest. */
const positiveSeconds = z.number().positive();

/** `schema`, or `fallback` when the key is unset (a preprocess, so that an absent key is read too). */
function unsetOr<Value, Fallback>(schema: z.ZodType<Value>, fallback: Fallback) {
  return z
    .preprocess((value) => (UNSET.safeParse(value).success ? undefined : value), schema.optional())
    .transform((value) => value ?? fallback);
}

/**
 * The keys checked here, in the order they are checked: the first key that fails is the one reported. The block's
 * other keys (`entrypoint`, `agent_base_url`, the credential keys) pass through; the last two are read with the
 * helpers the other service callers share.
 */
const BLOCK = z.looseObject({
  resources_server: z.object({
    type: z.literal('resources_servers'),
    name: z.string().refine((name) => name !== '' && name !== MISSING_VALUE),
  }),
  concurrency: unsetOr(integerAtLeastOne, DEFAULTS.concurrency),
  remote_responses_timeout_secs: unsetOr(positiveSeconds, DEFAULTS.remoteResponsesTimeoutSecs),
  run_timeout_secs: unsetOr(positiveSeconds, DEFAULTS.runTimeoutSecs),
  max_steps: unsetOr(integerAtLeastOne, null),
  max_response_bytes: unsetOr(integerAtLeastOne, DEFAULTS.maxResponseBytes),
  fill_echo_fields: unsetOr(z.boolean(), false),
});

/** What each scalar key must be, as its error says it. */
const RULES: Record<string, string> = {
  concurrency: 'an integer ≥ 1',
  remote_responses_timeout_secs: 'a number of seconds > 0',
  run_timeout_secs: 'a number of seconds > 0',
  max_steps: 'an integer ≥ 1 or unset',
  max_response_bytes: 'an integer ≥ 1',
  fill_echo_fields: 'true or false',
};

/** `env` is the agent server's environment, where `agent_api_key_env` names a variable. */
export function parseRemoteAgentConfig(
  inner: Record<string, unknown>,
  instanceName: string,
  env: NodeJS.ProcessEnv = process.env,
): RemoteAgentConfig {
  const where = (key: string): string => `${instanceName}.responses_api_agents.remote_agent.${key}`;
  const serviceBaseUrl = normalizeAgentBaseUrl(inner.agent_base_url, where('agent_base_url'));
  const auth = parseServiceAuth(inner, where, env);
  const parsed = BLOCK.safeParse(inner);
  if (!parsed.success) throw blockError(parsed.error.issues[0]!, inner, where);
  const block = parsed.data;
  const config: RemoteAgentConfig = {
    serviceBaseUrl,
    resourcesServer: { type: block.resources_server.type, name: block.resources_server.name },
    concurrency: block.concurrency,
    remoteResponsesTimeoutSecs: block.remote_responses_timeout_secs,
    runTimeoutSecs: block.run_timeout_secs,
    maxSteps: block.max_steps,
    maxResponseBytes: block.max_response_bytes,
    auth,
    fillEchoFields: block.fill_echo_fields,
    warnings: authWarnings(auth, serviceBaseUrl, where),
  };
  if (config.remoteResponsesTimeoutSecs >= config.runTimeoutSecs) {
    config.warnings.push(
      `${where('remote_responses_timeout_secs')} (${pyFloat(config.remoteResponsesTimeoutSecs)}) is not below ` +
        `run_timeout_secs (${pyFloat(config.runTimeoutSecs)}): a slow call will hit the whole-rollout bound first, ` +
        'so the per-call bound never applies. Lower remote_responses_timeout_secs or raise run_timeout_secs.',
    );
  }
  return config;
}

/** The paragraph for the first key that failed: the key, the value and the rule (D18). */
function blockError(
  issue: z.core.$ZodIssue,
  inner: Record<string, unknown>,
  where: (key: string) => string,
): ConfigError {
  const [key, member] = issue.path as [string, string | undefined];
  if (key === 'resources_server') return resourcesServerError(inner.resources_server, member, where(key));
  return new ConfigError(`${where(key)} = ${JSON.stringify(inner[key])} is invalid: it must be ${RULES[key]}.`);
}

/** What is wrong with the `resources_server` reference: `member` is the key of it that failed, if any. */
function resourcesServerError(raw: unknown, member: string | undefined, where: string): ConfigError {
  const example = `${where.split('.').pop()}: {type: resources_servers, name: <the resources server's top-level key>}`;
  if (member === undefined) {
    return UNSET.safeParse(raw).success
      ? new ConfigError(`${where} is required: ${example}.`)
      : new ConfigError(`${where} must be a reference mapping, e.g. ${example}.`);
  }
  if (member === 'type') {
    const type = (raw as Partial<ResourcesServerRef>).type;
    return new ConfigError(
      `${where}.type must be 'resources_servers', got ${JSON.stringify(type ?? null)}. Use ${example}.`,
    );
  }
  return new ConfigError(`${where}.name must name a resources server instance defined in the config. Use ${example}.`);
}
