import { ConfigError } from '../../src/errors.js';
import { authWarnings, parseServiceAuth, type ServiceAuth } from './service-auth.js';

/**
 * The remote agent's own config block (`<instance>.responses_api_agents.remote_agent`), validated up front so a
 * bad value stops start-up with one paragraph naming the key, the value and the rule (decision D18), instead of
 * surfacing as a hung or failing rollout later (reference quirks listed in U26).
 */

export interface ResourcesServerRef {
  type: 'resources_servers';
  name: string;
}

export interface RemoteAgentConfig {
  /** Normalised: no surrounding whitespace, no trailing slash; any path prefix kept. */
  agentBaseUrl: string;
  resourcesServer: ResourcesServerRef;
  concurrency: number;
  remoteResponsesTimeoutSecs: number;
  runTimeoutSecs: number;
  /** `null` = no step bound. */
  maxSteps: number | null;
  maxResponseBytes: number;
  /** Credential headers and CA for the service hop (`agent_api_key_env`, `agent_headers`, `agent_ca_file`). */
  auth: ServiceAuth;
  /** Start-up warnings (legal but probably unintended settings), for the server to print once. */
  warnings: string[];
}

export const DEFAULTS = {
  concurrency: 32,
  remoteResponsesTimeoutSecs: 1800,
  runTimeoutSecs: 2100,
  maxResponseBytes: 64 * 1024 * 1024,
} as const;

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
    maxResponseBytes: integerAtLeastOne(inner.max_response_bytes, DEFAULTS.maxResponseBytes, where('max_response_bytes')),
    auth,
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

/**
 * Validate and normalise `agent_base_url`. Only http(s); no query, fragment or `;params` (not even a bare `?` or
 * `#`, which `new URL` would silently drop); no credentials (they belong in agent_api_key_env, and a URL holding one would end up in
 * logs). The error never repeats the URL, since the offending part may be a secret (D16).
 */
export function normalizeAgentBaseUrl(raw: unknown, where: string): string {
  if (isUnset(raw) || (typeof raw === 'string' && raw.trim() === '')) {
    throw new ConfigError(
      `${where} is required: set it to your service's base URL, e.g. http://your-agent-host:9000 ` +
        '(Gym POSTs to <agent_base_url>/v1/responses).',
    );
  }
  if (typeof raw !== 'string') {
    throw new ConfigError(`${where} must be a string URL such as http://your-agent-host:9000, got a ${typeof raw}.`);
  }
  const text = raw.trim();
  const reject = (problem: string, fix: string): never => {
    throw new ConfigError(`${where} is rejected (value not shown, it may hold a secret): ${problem}. ${fix}`);
  };
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(text)?.[1]?.toLowerCase();
  if (scheme !== 'http' && scheme !== 'https') {
    reject('it must start with http:// or https://', 'Write the full base URL, e.g. http://your-agent-host:9000.');
  }
  const authority = text.slice(text.indexOf('//') + 2).split(/[/?#]/, 1)[0] ?? '';
  if (authority.includes('@')) {
    reject(
      'it embeds credentials (user[:password]@)',
      'a credential never goes in the URL; remove it and send it with agent_api_key_env (a bearer token read from ' +
        'an environment variable) or agent_headers, or protect the service at the network level.',
    );
  }
  if (text.includes('?')) reject('it has a query string', 'Remove everything from the "?" on.');
  if (text.includes('#')) reject('it has a fragment', 'Remove everything from the "#" on.');
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return reject('it is not a valid URL (check the host and the port number)', 'Use e.g. http://your-agent-host:9000.');
  }
  if (url.pathname.includes(';')) reject('its path has ";" parameters', 'Remove the ";…" part of the path.');
  if (url.hostname === '') reject('it has no host', 'Use e.g. http://your-agent-host:9000.');
  return text.replace(/\/+$/, '');
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

function isUnset(value: unknown): boolean {
  return value === undefined || value === null || value === '???';
}

/** Seconds as Python prints a float (`1800` → `1800.0`, `0.25` → `0.25`), so error texts match the reference. */
export function pyFloat(value: number): string {
  if (Number.isInteger(value) && Math.abs(value) < 1e16) return `${value}.0`;
  return String(value);
}
