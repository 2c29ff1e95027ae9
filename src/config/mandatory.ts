/** The `???` check: every leaf still unset after merging is reported in one error. */
import { ConfigError } from '../errors.js';
import type { ConfigSources } from './sources.js';
import { formatPath, isPlainObject, MISSING_VALUE } from './types.js';

type Path = Array<string | number>;

export function findMissingValues(value: unknown, path: Path = [], out: Path[] = []): Path[] {
  if (value === MISSING_VALUE) out.push(path);
  else if (Array.isArray(value)) value.forEach((item, index) => findMissingValues(item, [...path, index], out));
  else if (isPlainObject(value))
    for (const [key, item] of Object.entries(value)) findMissingValues(item, [...path, key], out);
  return out;
}

export function assertNoMissingValues(config: unknown, sources: ConfigSources): void {
  const missing = findMissingValues(config);
  if (missing.length === 0) return;
  const listed = missing.map((path) => `  - ${formatPath(path)}${sources.at(path)}`).join('\n');
  const example = missing
    .slice(0, 3)
    .map((path) => `++${formatPath(path)}=<value>`)
    .join(' ');
  throw new ConfigError(
    `${missing.length} required config value(s) are unset (still '???') after merging:\n${listed}\n` +
      `Provide each value via a CLI override, in env.yaml, or in a config you pass via config_paths. For example, on the command line:\n  ${example}`,
    'GYM_CONFIG_MISSING_VALUES',
  );
}
