import { ConfigError } from '../../src/errors.js';
import { authWarnings, parseServiceAuth } from '../../src/http/service-auth.js';
import { normalizeAgentBaseUrl } from '../../src/http/service-url.js';
import { DEFAULTS, pyFloat, type RemoteAgentConfig, type ResourcesServerRef } from '../../src/rollout/settings.js';

/**
 * The remote agent's own config block (`<instance>.responses_api_agents.remote_agent`), validated up front so a
 * bad value stops start-up with one paragraph naming the key, the value and the rule (decision D18), instead of
 * surfacing as a hung or failing rollout later (reference quirks listed in U26).
 */

/** `env` is the agent server's environment, where `agent_api_key_env` names a variable. */
export function parseRemoteAgentConfig(
  inner: Record<string, unknown>,
  instanceName: string,
  env: NodeJS.ProcessEnv = process.env,
): RemoteAgentConfig {
  const where = (key: string): string => `${instanceName}.responses_api_agents.remote_agent.${key}`;
  const agentBaseUrl = normalizeAgentBaseUrl(inner.agent_base_url, where('agent_base_url'));
  const auth = parseServiceAuth(inner, where, env);
  const config: RemoteAgentConfig = {
    agentBaseUrl,
    resourcesServer: parseResourcesServerRef(inner.resources_server, where('resources_server')),
    concurrency: integerAtLeastOne(inner.concurrency, DEFAULTS.concurrency, where('concurrency')),
    remoteResponsesTimeoutSecs: positiveSeconds(
      inner.remote_responses_timeout_secs,
      DEFAULTS.remoteResponsesTimeoutSecs,
      where('remote_responses_timeout_secs'),
    ),
    runTimeoutSecs: positiveSeconds(inner.run_timeout_secs, DEFAULTS.runTimeoutSecs, where('run_timeout_secs')),
    maxSteps: isUnset(inner.max_steps) ? null : integerAtLeastOne(inner.max_steps, 0, where('max_steps'), 'or unset'),
    maxResponseBytes: integerAtLeastOne(
      inner.max_response_bytes,
      DEFAULTS.maxResponseBytes,
      where('max_response_bytes'),
    ),
    auth,
    fillEchoFields: flag(inner.fill_echo_fields, where('fill_echo_fields')),
    warnings: authWarnings(auth, agentBaseUrl, where),
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

function parseResourcesServerRef(raw: unknown, where: string): ResourcesServerRef {
  const example = `${where.split('.').pop()}: {type: resources_servers, name: <the resources server's top-level key>}`;
  if (isUnset(raw)) throw new ConfigError(`${where} is required: ${example}.`);
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new ConfigError(`${where} must be a reference mapping, e.g. ${example}.`);
  }
  const ref = raw as Record<string, unknown>;
  if (ref.type !== 'resources_servers') {
    throw new ConfigError(
      `${where}.type must be 'resources_servers', got ${JSON.stringify(ref.type ?? null)}. Use ${example}.`,
    );
  }
  if (typeof ref.name !== 'string' || ref.name === '' || ref.name === '???') {
    throw new ConfigError(`${where}.name must name a resources server instance defined in the config. Use ${example}.`);
  }
  return { type: 'resources_servers', name: ref.name };
}

function integerAtLeastOne(raw: unknown, fallback: number, where: string, unsetNote = ''): number {
  if (isUnset(raw)) return fallback;
  if (typeof raw !== 'number' || !Number.isInteger(raw) || raw < 1) {
    throw new ConfigError(
      `${where} = ${JSON.stringify(raw)} is invalid: it must be an integer ≥ 1${unsetNote ? ` ${unsetNote}` : ''}.`,
    );
  }
  return raw;
}

function positiveSeconds(raw: unknown, fallback: number, where: string): number {
  if (isUnset(raw)) return fallback;
  if (typeof raw !== 'number' || !Number.isFinite(raw) || raw <= 0) {
    throw new ConfigError(`${where} = ${JSON.stringify(raw)} is invalid: it must be a number of seconds > 0.`);
  }
  return raw;
}

/** An on/off key: YAML `true`/`false`; unset means off. */
function flag(raw: unknown, where: string): boolean {
  if (isUnset(raw)) return false;
  if (typeof raw !== 'boolean')
    throw new ConfigError(`${where} = ${JSON.stringify(raw)} is invalid: it must be true or false.`);
  return raw;
}

function isUnset(value: unknown): boolean {
  return value === undefined || value === null || value === '???';
}
