import { z } from 'zod';
import { integerAtLeast, onOff, parseBlock, positiveSeconds, type FieldIssue } from '../../src/config/fields.js';
import { isPlainObject, MISSING_VALUE } from '../../src/config/types.js';
import { ConfigError } from '../../src/errors.js';
import { authWarnings, parseServiceAuth } from '../../src/http/service-auth.js';
import { normalizeAgentBaseUrl } from '../../src/http/service-url.js';
import {
  DEFAULTS,
  pyFloat,
  type ModelServerRef,
  type RemoteAgentConfig,
  type ResourcesServerRef,
} from '../../src/rollout/settings.js';

/**
 * The remote agent's own config block (`<instance>.responses_api_agents.remote_agent`), validated up front so a
 * bad value stops start-up with one paragraph naming the key, the value and the rule (decision D18), instead of
 * surfacing as a hung or failing rollout later (reference quirks listed in U26). The scalar keys are a zod schema of
 * the shared field builders (src/config/fields.ts), listed in the order their errors are reported.
 */
const SCALARS = z.object({
  concurrency: integerAtLeast(1, DEFAULTS.concurrency, { rule: 'an integer ≥ 1' }),
  remote_responses_timeout_secs: positiveSeconds(DEFAULTS.remoteResponsesTimeoutSecs),
  run_timeout_secs: positiveSeconds(DEFAULTS.runTimeoutSecs),
  max_steps: integerAtLeast(1, undefined, { rule: 'an integer ≥ 1 or unset' }),
  max_response_bytes: integerAtLeast(1, DEFAULTS.maxResponseBytes, { rule: 'an integer ≥ 1' }),
  fill_echo_fields: onOff(false),
  token_id_capture: onOff(false),
});

/** A key left unset: absent, null, or still OmegaConf's `???`. Every optional key then takes its default. */
function isUnset(value: unknown): boolean {
  return value === undefined || value === null || value === MISSING_VALUE;
}

/** `env` is the agent server's environment, where `agent_api_key_env` names a variable. */
export function parseRemoteAgentConfig(
  inner: Record<string, unknown>,
  instanceName: string,
  env: NodeJS.ProcessEnv = process.env,
): RemoteAgentConfig {
  const where = (key: string): string => `${instanceName}.responses_api_agents.remote_agent.${key}`;
  const serviceBaseUrl = normalizeAgentBaseUrl(inner.agent_base_url, where('agent_base_url'));
  const auth = parseServiceAuth(inner, where, env);
  const resourcesServer = parseResourcesServerRef(inner.resources_server, where('resources_server'));
  const modelServer = parseModelServerRef(inner.model_server, where('model_server'));
  // `???` reads as unset here; the error still quotes the value as written.
  const scalars = Object.fromEntries(
    Object.keys(SCALARS.shape).map((key) => [key, isUnset(inner[key]) ? undefined : inner[key]]),
  );
  const block = parseBlock(SCALARS, scalars, ({ key, rule }: FieldIssue) => {
    return `${where(key)} = ${JSON.stringify(inner[key])} is invalid: it must be ${rule}.`;
  });
  const config: RemoteAgentConfig = {
    serviceBaseUrl,
    resourcesServer,
    concurrency: block.concurrency,
    remoteResponsesTimeoutSecs: block.remote_responses_timeout_secs,
    runTimeoutSecs: block.run_timeout_secs,
    maxSteps: block.max_steps ?? null,
    maxResponseBytes: block.max_response_bytes,
    auth,
    fillEchoFields: block.fill_echo_fields,
    tokenIdCapture: block.token_id_capture,
    warnings: authWarnings(auth, serviceBaseUrl, where),
    ...(modelServer ? { modelServer } : {}),
  };
  if (config.tokenIdCapture && !modelServer) {
    throw new ConfigError(
      `${where('token_id_capture')} is true, but ${where('model_server')} is not set: token ids are captured where ` +
        "the rollout's model calls pass, in a model server. Set model_server: {type: responses_api_models, name: " +
        '<a vllm_model with return_token_id_information: true, or an openai_model in front of llama-server>}, or ' +
        'set token_id_capture: false.',
    );
  }
  if (config.remoteResponsesTimeoutSecs >= config.runTimeoutSecs) {
    config.warnings.push(
      `${where('remote_responses_timeout_secs')} (${pyFloat(config.remoteResponsesTimeoutSecs)}) is not below ` +
        `run_timeout_secs (${pyFloat(config.runTimeoutSecs)}): a slow call will hit the whole-rollout bound first, ` +
        'so the per-call bound never applies. Lower remote_responses_timeout_secs or raise run_timeout_secs.',
    );
  }
  return config;
}

function parseResourcesServerRef(raw: unknown, where: string): ResourcesServerRef {
  const example = `${where.split('.').pop()}: {type: resources_servers, name: <the resources server's top-level key>}`;
  if (isUnset(raw)) throw new ConfigError(`${where} is required: ${example}.`);
  if (!isPlainObject(raw)) throw new ConfigError(`${where} must be a reference mapping, e.g. ${example}.`);
  if (raw.type !== 'resources_servers') {
    throw new ConfigError(
      `${where}.type must be 'resources_servers', got ${JSON.stringify(raw.type ?? null)}. Use ${example}.`,
    );
  }
  if (typeof raw.name !== 'string' || raw.name === '' || raw.name === MISSING_VALUE) {
    throw new ConfigError(`${where}.name must name a resources server instance defined in the config. Use ${example}.`);
  }
  return { type: 'resources_servers', name: raw.name };
}

/** `model_server` is optional: unset, the service calls its model on its own. */
function parseModelServerRef(raw: unknown, where: string): ModelServerRef | undefined {
  if (isUnset(raw)) return undefined;
  const example = `model_server: {type: responses_api_models, name: <the model server's top-level key>}`;
  if (!isPlainObject(raw)) throw new ConfigError(`${where} must be a reference mapping, e.g. ${example}.`);
  if (raw.type !== 'responses_api_models') {
    throw new ConfigError(
      `${where}.type must be 'responses_api_models', got ${JSON.stringify(raw.type ?? null)}. Use ${example}.`,
    );
  }
  if (typeof raw.name !== 'string' || raw.name === '' || raw.name === MISSING_VALUE) {
    throw new ConfigError(`${where}.name must name a model server instance defined in the config. Use ${example}.`);
  }
  return { type: 'responses_api_models', name: raw.name };
}
