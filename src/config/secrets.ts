/**
 * Secret masking (decision D16): under any key whose name contains key, token, secret or password
 * (any case), values become '****' and lists become lists of '****'. Mappings under such a key are
 * walked rather than blanked, so an instance named e.g. `keyword_search` keeps its host and port.
 * Every value of a header map (`agent_headers`, D21) is masked whatever the header is called
 * (`Authorization` names no secret word); the header names stay visible.
 */
import { isPlainObject, type GlobalConfig } from './types.js';
import { serializeConfig } from './yaml-io.js';

const SECRET_KEY = /key|token|secret|password/i;
// The model servers' header maps (the reference's key names) may carry an upstream's credential too.
const HEADER_MAPS = new Set(['agent_headers', 'openai_default_headers', 'default_headers']);
const MASK = '****';

export function isSecretKey(key: string): boolean {
  return SECRET_KEY.test(key);
}

/** A masked copy; the input is never modified. */
export function maskSecrets<T>(value: T): T {
  return maskValue(value, true) as T;
}

/** `secretKeys`: mask secret-named keys too, not only header maps. */
function maskValue(value: unknown, secretKeys: boolean): unknown {
  if (Array.isArray(value)) return value.map((item) => maskValue(item, secretKeys));
  if (!isPlainObject(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    if (HEADER_MAPS.has(key)) out[key] = maskedHeaders(item);
    else if (!secretKeys || isPlainObject(item) || !isSecretKey(key)) out[key] = maskValue(item, secretKeys);
    else out[key] = Array.isArray(item) ? item.map(() => MASK) : MASK;
  }
  return out;
}

/** A header map with its names kept and every value masked (anything else under that key: masked whole). */
function maskedHeaders(item: unknown): unknown {
  return isPlainObject(item) ? Object.fromEntries(Object.keys(item).map((name) => [name, MASK])) : MASK;
}

/** The config as users and the head server get to see it: secret values masked, as YAML. */
export function describeConfig(config: GlobalConfig): string {
  return serializeConfig(maskSecrets(config));
}

/**
 * The config a spawned server receives: other instances' `agent_headers` values masked, so a credential reaches
 * only the agent that sends it (a server that prints its config cannot leak another server's header).
 */
export function withForeignHeadersMasked(config: GlobalConfig, instanceName: string): GlobalConfig {
  let out: GlobalConfig | undefined;
  for (const [name, block] of Object.entries(config)) {
    if (name === instanceName || !isPlainObject(block) || !JSON.stringify(block).includes('"agent_headers"')) continue;
    out ??= { ...config };
    out[name] = maskValue(block, false);
  }
  return out ?? config;
}
