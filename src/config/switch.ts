import { ConfigError } from '../errors.js';

/**
 * A top-level on/off key of the resolved config (`+json=true`, `+overwrite=true`…): YAML `true` or `false`, unset
 * means off. Read by the collector and `gym eval`, which keep zod out of their start-up (see src/config/fields.ts).
 */
export function readSwitch(config: Record<string, unknown>, key: string): boolean {
  const value = config[key];
  if (value === undefined || value === null) return false;
  if (typeof value === 'boolean') return value;
  throw new ConfigError(
    `Config value '${key}' must be true or false, got ${JSON.stringify(value)}.`,
    'GYM_CONFIG_VALUE',
  );
}
