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

/** A top-level number key (`+margin=0.02`); undefined when unset. Out of range or not a number is a config error. */
export function readNumber(
  config: Record<string, unknown>,
  key: string,
  range: { min: number; max: number; integer?: boolean },
): number | undefined {
  const value = config[key];
  if (value === undefined || value === null) return undefined;
  const kind = range.integer ? 'an integer' : 'a number';
  if (
    typeof value !== 'number' ||
    !Number.isFinite(value) ||
    (range.integer === true && !Number.isInteger(value)) ||
    value < range.min ||
    value > range.max
  ) {
    throw new ConfigError(
      `Config value '${key}' must be ${kind} from ${range.min} to ${range.max}, got ${JSON.stringify(value)}.`,
      'GYM_CONFIG_VALUE',
    );
  }
  return value;
}

/** A top-level text key (`+group_by=difficulty`); undefined when unset or empty. */
export function readText(config: Record<string, unknown>, key: string): string | undefined {
  const value = config[key];
  if (value === undefined || value === null || value === '') return undefined;
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  throw new ConfigError(`Config value '${key}' must be text, got ${JSON.stringify(value)}.`, 'GYM_CONFIG_VALUE');
}
