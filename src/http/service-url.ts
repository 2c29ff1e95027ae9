import { ConfigError } from '../errors.js';

/**
 * The service's base URL (`agent_base_url`, or `gym agent check URL`), checked before anything is sent to it. Kept in
 * the HTTP layer because both the remote agent and the agent check read it, and neither may reach into the other.
 */

/**
 * Validate and normalise `agent_base_url`. Only http(s); no query, fragment or `;params` (not even a bare `?` or
 * `#`, which `new URL` would silently drop); no credentials (they belong in agent_api_key_env, and a URL holding one would end up in
 * logs). The error never repeats the URL, since the offending part may be a secret (D16).
 */
export function normalizeAgentBaseUrl(raw: unknown, where: string): string {
  if (raw === undefined || raw === null || raw === '???' || (typeof raw === 'string' && raw.trim() === '')) {
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
    return reject(
      'it is not a valid URL (check the host and the port number)',
      'Use e.g. http://your-agent-host:9000.',
    );
  }
  if (url.pathname.includes(';')) reject('its path has ";" parameters', 'Remove the ";…" part of the path.');
  if (url.hostname === '') reject('it has no host', 'Use e.g. http://your-agent-host:9000.');
  return text.replace(/\/+$/, '');
}
