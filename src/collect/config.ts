/**
 * The rollout-collection keys of the resolved config (docs/design.md, "Collection keys"), checked once up front so the
 * run never discovers a bad setting halfway through.
 */
import { ConfigError, UsageError } from '../errors.js';
import { readSwitch } from '../config/switch.js';
import { DEFAULT_HEAD_PORT, DEFAULT_HOST, isPlainObject, type GlobalConfig } from '../config/types.js';

export type NumRepeats = number | Record<string, number>;

export interface HeadServerAddress {
  host: string;
  port: number;
}

export interface CollectionConfig {
  inputPath: string;
  outputPath: string;
  agentName: string | undefined;
  /** Raw lines to read; undefined = all. */
  limit: number | undefined;
  numRepeats: NumRepeats;
  numRepeatsAddSeed: boolean;
  concurrency: number;
  createParamsOverrides: Record<string, unknown>;
  resume: boolean;
  overwrite: boolean;
  disableAggregation: boolean;
  /** Deadline for one `/run` exchange with an agent. */
  runTimeoutMs: number;
  /** An in-flight rollout without progress for longer is flagged `stalled` (status file, progress line). */
  stallWarningSecs: number;
  /** How long dispatch waits for an agent whose connections are refused before giving up (D20). */
  agentUnreachableWaitMs: number;
  head: HeadServerAddress;
}

export const DEFAULT_CONCURRENCY = 64;
/** Longer than the remote agent's own `run_timeout_secs` (2100 s), so the agent reports its timeouts itself. */
export const DEFAULT_RUN_REQUEST_TIMEOUT_SECS = 3600;
export const DEFAULT_MAX_ROLLOUT_ATTEMPTS = 3;
export const DEFAULT_STALL_WARNING_SECS = 120;
/** How long a collection waits for an agent that refuses connections (a crashed server being restarted). */
export const DEFAULT_AGENT_UNREACHABLE_WAIT_SECS = 60;

/** Reference keys tsgym does not implement: refusing beats silently ignoring them. */
const UNSUPPORTED_KEYS = ['prompt_config', 'skills', 'rollout_collection_driver'] as const;

export function requireKeys(config: GlobalConfig, keys: ReadonlyArray<{ key: string; flag: string }>): void {
  const missing = keys.filter(({ key }) => config[key] === undefined || config[key] === null || config[key] === '');
  if (missing.length === 0) return;
  const flags = missing.map(({ key, flag }) => `${flag} (+${key}=<value>)`).join(', ');
  throw new UsageError(
    `missing required configuration: ${missing.map(({ key }) => key).join(', ')}. Provide each via its flag (see --help) or as a +key=<value> override: ${flags}.`,
  );
}

function optionalInt(config: GlobalConfig, key: string, min: number): number | undefined {
  const value = config[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'number' && Number.isInteger(value) && value >= min) return value;
  throw new ConfigError(
    `Config value '${key}' must be an integer >= ${min}, got ${JSON.stringify(value)}.`,
    'GYM_CONFIG_VALUE',
  );
}

export function parseNumRepeats(value: unknown): NumRepeats {
  if (value === undefined || value === null) return 1;
  if (typeof value === 'number') {
    if (!Number.isInteger(value) || value < 1)
      throw new ConfigError(`num_repeats must be >= 1, got ${value}.`, 'GYM_CONFIG_VALUE');
    return value;
  }
  if (isPlainObject(value)) {
    const bad = Object.entries(value).filter(([, n]) => typeof n !== 'number' || !Number.isInteger(n) || n < 1);
    if (bad.length > 0) {
      throw new ConfigError(
        `num_repeats dict values must be >= 1, got ${JSON.stringify(Object.fromEntries(bad))}.`,
        'GYM_CONFIG_VALUE',
      );
    }
    return value as Record<string, number>;
  }
  throw new ConfigError(
    `num_repeats must be an integer >= 1 or a dict {agent_name: int, _default: int}, got ${JSON.stringify(value)}.`,
    'GYM_CONFIG_VALUE',
  );
}

export function headServerAddress(config: GlobalConfig): HeadServerAddress {
  const head = isPlainObject(config.head_server) ? config.head_server : {};
  const host = typeof head.host === 'string' && head.host !== '' ? head.host : DEFAULT_HOST;
  const port =
    typeof head.port === 'number'
      ? head.port
      : typeof head.port === 'string' && /^\d+$/.test(head.port)
        ? Number(head.port)
        : DEFAULT_HEAD_PORT;
  return { host, port };
}

export function parseCollectionConfig(config: GlobalConfig): CollectionConfig {
  requireKeys(config, [
    { key: 'input_jsonl_fpath', flag: '--input' },
    { key: 'output_jsonl_fpath', flag: '--output' },
  ]);
  for (const key of UNSUPPORTED_KEYS) {
    if (config[key] !== undefined && config[key] !== null) {
      throw new ConfigError(
        `'${key}' is not supported by tsgym's gym eval run; remove +${key}=… from the command line or config.`,
        'GYM_CONFIG_UNSUPPORTED',
      );
    }
  }
  const agentName = config.agent_name;
  if (agentName !== undefined && agentName !== null && typeof agentName !== 'string') {
    throw new ConfigError(
      `Config value 'agent_name' must be a string, got ${JSON.stringify(agentName)}.`,
      'GYM_CONFIG_VALUE',
    );
  }
  const overrides = config.responses_create_params ?? {};
  if (!isPlainObject(overrides)) {
    throw new ConfigError(
      `Config value 'responses_create_params' must be a mapping of fields to merge into every row's responses_create_params, got ${JSON.stringify(overrides)}.`,
      'GYM_CONFIG_VALUE',
    );
  }
  const timeout = config.run_request_timeout_secs ?? DEFAULT_RUN_REQUEST_TIMEOUT_SECS;
  if (typeof timeout !== 'number' || !(timeout > 0)) {
    throw new ConfigError(
      `Config value 'run_request_timeout_secs' must be a number of seconds > 0, got ${JSON.stringify(timeout)}.`,
      'GYM_CONFIG_VALUE',
    );
  }
  const stall = config.stall_warning_secs ?? DEFAULT_STALL_WARNING_SECS;
  if (typeof stall !== 'number' || !(stall > 0)) {
    throw new ConfigError(
      `Config value 'stall_warning_secs' must be a number of seconds > 0, got ${JSON.stringify(stall)}; e.g. +stall_warning_secs=300.`,
      'GYM_CONFIG_VALUE',
    );
  }
  if (readSwitch(config, 'resume_from_cache') && readSwitch(config, 'overwrite')) {
    throw new ConfigError(
      'resume_from_cache=true (--resume) and overwrite=true contradict each other: resume keeps the earlier rollouts, overwrite discards them. Pass only one.',
      'GYM_CONFIG_VALUE',
    );
  }
  const unreachableWait = config.agent_unreachable_wait_secs ?? DEFAULT_AGENT_UNREACHABLE_WAIT_SECS;
  if (typeof unreachableWait !== 'number' || !(unreachableWait > 0) || !Number.isFinite(unreachableWait)) {
    throw new ConfigError(
      `Config value 'agent_unreachable_wait_secs' must be a number of seconds > 0, got ${JSON.stringify(unreachableWait)}.`,
      'GYM_CONFIG_VALUE',
    );
  }
  const limit = optionalInt(config, 'limit', 0);
  const concurrency = optionalInt(config, 'num_samples_in_parallel', 0);
  return {
    inputPath: String(config.input_jsonl_fpath),
    outputPath: String(config.output_jsonl_fpath),
    agentName: typeof agentName === 'string' && agentName !== '' ? agentName : undefined,
    limit: limit === 0 ? undefined : limit,
    numRepeats: parseNumRepeats(config.num_repeats),
    numRepeatsAddSeed: readSwitch(config, 'num_repeats_add_seed'),
    concurrency: concurrency === undefined || concurrency === 0 ? DEFAULT_CONCURRENCY : concurrency,
    createParamsOverrides: overrides,
    resume: readSwitch(config, 'resume_from_cache'),
    overwrite: readSwitch(config, 'overwrite'),
    disableAggregation: readSwitch(config, 'disable_aggregation'),
    runTimeoutMs: timeout * 1000,
    stallWarningSecs: stall,
    agentUnreachableWaitMs: unreachableWait * 1000,
    head: headServerAddress(config),
  };
}

/**
 * `NEMO_GYM_MAX_ROLLOUT_ATTEMPTS`: unset or empty → 3; a positive integer → that; anything else → a warning and 3.
 */
export function maxRolloutAttempts(env: NodeJS.ProcessEnv, warn: (line: string) => void): number {
  const raw = env.NEMO_GYM_MAX_ROLLOUT_ATTEMPTS;
  if (raw === undefined || raw.trim() === '') return DEFAULT_MAX_ROLLOUT_ATTEMPTS;
  const text = raw.trim();
  let reason: string;
  if (!/^[+-]?\d+$/.test(text)) reason = `invalid literal for int() with base 10: '${raw}'`;
  else if (Number(text) < 1) reason = `must be >= 1, got ${Number(text)}`;
  else return Number(text);
  warn(
    `WARNING: could not parse NEMO_GYM_MAX_ROLLOUT_ATTEMPTS='${raw}' (${reason}); falling back to default ${DEFAULT_MAX_ROLLOUT_ATTEMPTS}.`,
  );
  return DEFAULT_MAX_ROLLOUT_ATTEMPTS;
}
