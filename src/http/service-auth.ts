import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ConfigError } from '../errors.js';

/**
 * Credentials and trust for the service hop (decision D21). By default Gym sends no credential to the service; a
 * remote agent may name one: `agent_api_key_env: NAME` sends `Authorization: Bearer <$NAME>` (the value is read from
 * the agent server's environment, never written in a config), and `agent_headers: {Header: value}` sends any other
 * scheme (values usually `${oc.env:VAR}`). `agent_ca_file` trusts a private CA for an `https://` service. Every
 * problem is a config error at start-up that names the key or the variable and never repeats a value; the secret
 * values are kept so every error text the agent writes can be scrubbed of them (a service may echo a token back).
 */

export interface ServiceAuth {
  /** Headers added to every `/v1/responses` call (empty when no credential is configured). */
  headers: Record<string, string>;
  /** Every secret value sent, for `redactSecrets`. */
  secrets: string[];
  /** The variable `Authorization` comes from, for error hints. */
  apiKeyEnv?: string;
  /** PEM text of the CA bundle to trust, and where it came from. */
  ca?: { file: string; pem: string };
}

export interface ServiceAuthSettings {
  agent_api_key_env?: unknown;
  agent_headers?: unknown;
  agent_ca_file?: unknown;
}

/**
 * Headers tsgym sets itself or that belong to one connection (RFC 9110 §7.6.1); a user header must not replace
 * them. `Cookie` is the service's own jar (D7): a credential is never a cookie.
 */
const RESERVED_HEADERS = new Set([
  'host',
  'content-length',
  'content-type',
  'content-encoding',
  'transfer-encoding',
  'cookie',
  'connection',
  'keep-alive',
  'proxy-authorization',
  'proxy-authenticate',
  'proxy-connection',
  'te',
  'trailer',
  'upgrade',
  'expect',
]);
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
const MAX_HEADERS = 32;
const MAX_HEADER_VALUE_BYTES = 8192;
const MASK = '****';

/** Read and check the three keys; `where(key)` names a key in error texts. */
export function parseServiceAuth(
  settings: ServiceAuthSettings,
  where: (key: string) => string,
  env: NodeJS.ProcessEnv,
  baseDir: string = process.cwd(),
): ServiceAuth {
  const auth: ServiceAuth = { headers: {}, secrets: [] };
  const keyEnv = settings.agent_api_key_env;
  if (!isUnset(keyEnv)) {
    const name = parseEnvName(keyEnv, where('agent_api_key_env'));
    const value = env[name];
    if (value === undefined || value.trim() === '') {
      throw new ConfigError(
        `${where('agent_api_key_env')} names the environment variable ${name}, which is ${value === undefined ? 'not set' : 'empty'}. ` +
          `Export it first (export ${name}=<your token>): the remote agent reads it from its own environment, inherited ` +
          'from gym env start, and sends it as Authorization: Bearer <value> on every call to your service.',
        'REMOTE_AGENT_API_KEY_ENV',
      );
    }
    checkHeaderValue(value.trim(), `the value of ${name} (${where('agent_api_key_env')})`);
    auth.headers.authorization = `Bearer ${value.trim()}`;
    auth.secrets.push(value.trim());
    auth.apiKeyEnv = name;
  }
  if (!isUnset(settings.agent_headers)) {
    for (const [name, value] of parseHeaderMap(settings.agent_headers, where('agent_headers'))) {
      const lower = name.toLowerCase();
      if (lower === 'authorization' && auth.apiKeyEnv !== undefined) {
        throw new ConfigError(
          `${where('agent_headers')} sets Authorization, and ${where('agent_api_key_env')} sets it too. Keep one: ` +
            'agent_api_key_env for a bearer token, or agent_headers.Authorization for another scheme.',
          'REMOTE_AGENT_HEADERS',
        );
      }
      if (Object.hasOwn(auth.headers, lower)) {
        throw new ConfigError(
          `${where('agent_headers')} sets ${name} twice (header names are case-insensitive).`,
          'REMOTE_AGENT_HEADERS',
        );
      }
      auth.headers[lower] = value;
      auth.secrets.push(value);
    }
  }
  if (!isUnset(settings.agent_ca_file)) auth.ca = readCaFile(settings.agent_ca_file, where('agent_ca_file'), baseDir);
  return auth;
}

function parseEnvName(raw: unknown, where: string): string {
  // The value is a variable's name, not the key; a value that cannot be a name may be a pasted token: never echo it.
  if (typeof raw !== 'string' || !ENV_NAME.test(raw.trim())) {
    throw new ConfigError(
      `${where} must be the name of an environment variable (letters, digits and _, not starting with a digit), ` +
        'not the key itself (value not shown). Put the key in a variable, e.g. export MY_AGENT_TOKEN=…, and give ' +
        'its name here: MY_AGENT_TOKEN.',
      'REMOTE_AGENT_API_KEY_ENV',
    );
  }
  return raw.trim();
}

function parseHeaderMap(raw: unknown, where: string): Array<[string, string]> {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new ConfigError(
      `${where} must be a mapping of header name to value, e.g. {X-Api-Key: '\${oc.env:MY_AGENT_KEY}'} (value not shown).`,
      'REMOTE_AGENT_HEADERS',
    );
  }
  const entries = Object.entries(raw as Record<string, unknown>);
  if (entries.length > MAX_HEADERS) {
    throw new ConfigError(
      `${where} sets ${entries.length} headers; at most ${MAX_HEADERS} are allowed.`,
      'REMOTE_AGENT_HEADERS',
    );
  }
  return entries.map(([name, value]) => {
    if (!HEADER_NAME.test(name)) {
      throw new ConfigError(
        `${where} has the header name ${JSON.stringify(name.slice(0, 64))}, which is not a valid HTTP header name ` +
          "(letters, digits and !#$%&'*+.^_`|~- only).",
        'REMOTE_AGENT_HEADERS',
      );
    }
    if (RESERVED_HEADERS.has(name.toLowerCase())) {
      throw new ConfigError(
        `${where}.${name} is not allowed: tsgym sets ${name} itself or it belongs to one connection ` +
          `(not allowed: ${[...RESERVED_HEADERS].join(', ')}). Send credentials as Authorization or a custom header.`,
        'REMOTE_AGENT_HEADERS',
      );
    }
    if (typeof value !== 'string' || value.trim() === '') {
      throw new ConfigError(
        `${where}.${name} must be a non-empty string (value not shown); when it reads a variable with \${oc.env:VAR}, ` +
          'check that the variable is set and not empty.',
        'REMOTE_AGENT_HEADERS',
      );
    }
    checkHeaderValue(value.trim(), `${where}.${name}`);
    return [name, value.trim()];
  });
}

function checkHeaderValue(value: string, what: string): void {
  if (/[\u0000-\u0008\u000a-\u001f\u007f]/.test(value) || /[^\u0000-\u00ff]/.test(value)) {
    throw new ConfigError(
      `${what} holds a line break, a control character or a non-Latin-1 character, which an HTTP header cannot carry ` +
        '(value not shown). Check for a trailing newline in the variable or file it comes from.',
      'REMOTE_AGENT_HEADERS',
    );
  }
  if (Buffer.byteLength(value, 'latin1') > MAX_HEADER_VALUE_BYTES) {
    throw new ConfigError(
      `${what} is longer than ${MAX_HEADER_VALUE_BYTES} bytes (value not shown).`,
      'REMOTE_AGENT_HEADERS',
    );
  }
}

/** A PEM bundle with at least one certificate; the error names the key and the path. */
export function readCaFile(
  raw: unknown,
  where: string,
  baseDir: string = process.cwd(),
): { file: string; pem: string } {
  if (typeof raw !== 'string' || raw.trim() === '') {
    throw new ConfigError(
      `${where} must be the path of a PEM file holding your CA certificate(s).`,
      'REMOTE_AGENT_CA_FILE',
    );
  }
  const file = path.resolve(baseDir, raw.trim());
  let pem: string;
  try {
    pem = readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const reason =
      code === 'ENOENT'
        ? 'does not exist'
        : code === 'EISDIR'
          ? 'is a directory'
          : `cannot be read (${code ?? String(err)})`;
    throw new ConfigError(
      `${where} = ${file} ${reason}. Point it at the PEM file of the CA that signed your service's certificate.`,
      'REMOTE_AGENT_CA_FILE',
    );
  }
  if (!pem.includes('-----BEGIN CERTIFICATE-----')) {
    throw new ConfigError(
      `${where} = ${file} holds no PEM certificate (no "-----BEGIN CERTIFICATE-----" line). Export the CA certificate ` +
        'in PEM form, e.g. openssl x509 -in ca.der -inform der -out ca.pem.',
      'REMOTE_AGENT_CA_FILE',
    );
  }
  return { file, pem };
}

/** `text` with every secret value replaced by `****` (secrets shorter than 4 characters are not credentials). */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) if (secret.length >= 4 && out.includes(secret)) out = out.split(secret).join(MASK);
  return out;
}

/** Start-up warnings: a credential in clear text to another machine, a CA file that an http:// URL never uses. */
export function authWarnings(auth: ServiceAuth, baseUrl: string, where: (key: string) => string): string[] {
  const warnings: string[] = [];
  const url = new URL(baseUrl);
  const loopback = ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname) || url.hostname.startsWith('127.');
  if (url.protocol === 'http:' && auth.secrets.length > 0 && !loopback) {
    warnings.push(
      `a credential (${auth.apiKeyEnv !== undefined ? where('agent_api_key_env') : where('agent_headers')}) is sent to ` +
        `${url.host} over plain http, readable by anyone on the path; use an https:// agent_base_url.`,
    );
  }
  if (url.protocol === 'http:' && auth.ca) {
    warnings.push(`${where('agent_ca_file')} is set but agent_base_url is http://, so the CA is never used.`);
  }
  return warnings;
}

function isUnset(value: unknown): boolean {
  return value === undefined || value === null || value === '???';
}
