/**
 * Secret masking (decision D16): under any key whose name contains key, token, secret or password
 * (any case), values become '****' and lists become lists of '****'. Mappings under such a key are
 * walked rather than blanked, so an instance named e.g. `keyword_search` keeps its host and port.
 */
import { isPlainObject, type GlobalConfig } from './types.js';
import { serializeConfig } from './yaml-io.js';

const SECRET_KEY = /key|token|secret|password/i;
const MASK = '****';

export function isSecretKey(key: string): boolean {
  return SECRET_KEY.test(key);
}

/** A masked copy; the input is never modified. */
export function maskSecrets<T>(value: T): T {
  return maskValue(value) as T;
}

function maskValue(value: unknown): unknown {
  if (Array.isArray(value)) return value.map((item) => maskValue(item));
  if (!isPlainObject(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    if (isPlainObject(item) || !isSecretKey(key)) out[key] = maskValue(item);
    else out[key] = Array.isArray(item) ? item.map(() => MASK) : MASK;
  }
  return out;
}

/** The config as users and the head server get to see it: secret values masked, as YAML. */
export function describeConfig(config: GlobalConfig): string {
  return serializeConfig(maskSecrets(config));
}
