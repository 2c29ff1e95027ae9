/**
 * Building the global config (reference `GlobalConfigDictParser.parse`), lowest precedence first:
 * config files from `config_paths` (recursive, as in the reference) < the first env.yaml under the search roots < CLI
 * overrides. Then: structural directives, the `???` check, server validation, host/port assignment,
 * interpolation, reference checks. The result is plain, fully resolved data.
 */
import path from 'node:path';
import { ConfigError } from '../errors.js';
import { assignAddresses } from './addresses.js';
import { expandConfigPaths, readConfigPathsValue, readYamlFile } from './config-paths.js';
import { applyDirectives } from './directives.js';
import { Interpolator } from './interpolation.js';
import { assertNoMissingValues } from './mandatory.js';
import { mergeAll } from './merge.js';
import { parseOverrides, parseOverrideToken } from './overrides.js';
import { findUnderRoots, searchRoots } from './roots.js';
import { asServerRef, classifyServers, referenceHint, type InstanceShape } from './servers.js';
import { ConfigSources } from './sources.js';
import { isPlainObject, isServerType, RESERVED_TOP_LEVEL_KEYS, type GlobalConfig, type PlainObject } from './types.js';

export interface LoadOptions {
  overrides: string[];
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Assign a free port to every instance without one (default true). false leaves those ports unset. */
  allocatePorts?: boolean;
  /** Where notices go (duplicate includes, skipped almost-servers). Default: stderr. */
  warn?: (message: string) => void;
}

/** Settings read while assigning addresses; resolved before anything else. */
const ADDRESS_SETTINGS = [
  'default_host',
  'use_absolute_ip',
  'head_server',
  'port_range_low',
  'port_range_high',
  'disallowed_ports',
  'error_on_almost_servers',
];
/** Inner-config fields validation and address assignment read. */
const INSTANCE_FIELDS = ['entrypoint', 'domain', 'host', 'port'];

function defaultWarn(message: string): void {
  process.stderr.write(`${message}\n`);
}

function findEnvYaml(roots: readonly string[]): string | undefined {
  return findUnderRoots('env.yaml', roots);
}

function resolveInstanceFields(config: PlainObject, interpolator: Interpolator): void {
  for (const [name, value] of Object.entries(config)) {
    if (RESERVED_TOP_LEVEL_KEYS.has(name) || !isPlainObject(value)) continue;
    for (const [serverType, impls] of Object.entries(value)) {
      if (!isServerType(serverType) || !isPlainObject(impls)) continue;
      for (const [impl, inner] of Object.entries(impls)) {
        if (!isPlainObject(inner)) continue;
        for (const field of INSTANCE_FIELDS) {
          if (Object.hasOwn(inner, field)) inner[field] = interpolator.resolveAt([name, serverType, impl, field]);
        }
      }
    }
  }
}

function rejectAlmostServers(config: PlainObject, sources: ConfigSources, warn: (message: string) => void): void {
  const { almostServers } = classifyServers(config);
  if (almostServers.length === 0) return;
  const details = almostServers.map(
    (entry) => `'${entry.name}'${sources.at([entry.name])}: ${entry.problems.join('; ')}`,
  );
  if (config.error_on_almost_servers === false) {
    for (const detail of details) warn(`Almost-Server Detected: ${detail}. This server will NOT be started.`);
    return;
  }
  throw new ConfigError(
    `Found ${almostServers.length} almost-server(s) with validation errors: ${details.join(' | ')}. A server instance is <name>: {<responses_api_models|resources_servers|responses_api_agents>: {<impl>: {entrypoint: …}}}. Fix them, or set ++error_on_almost_servers=false to bypass this error (those entries are then not started).`,
    'GYM_CONFIG_ALMOST_SERVER',
  );
}

function checkReferences(config: GlobalConfig, instances: readonly InstanceShape[], sources: ConfigSources): void {
  for (const instance of instances) {
    const inner = (config[instance.name] as PlainObject)[instance.serverType] as PlainObject;
    for (const [field, value] of Object.entries(inner[instance.impl] as PlainObject)) {
      const ref = asServerRef(value);
      if (!ref) continue;
      if (instances.some((candidate) => candidate.name === ref.name && candidate.serverType === ref.type)) continue;
      const path = [instance.name, instance.serverType, instance.impl, field];
      throw new ConfigError(
        `In server instance '${instance.name}', field '${field}'${sources.at(path)} references ${ref.type}/'${ref.name}', which is not defined in the merged config. ${referenceHint(ref.name, ref.type, instances)} Fix the name, or add the config that defines '${ref.name}' to config_paths.`,
        'GYM_CONFIG_SERVER_REF',
      );
    }
  }
}

/** `skip_verification` / `skip_verification_reward` at the top level apply to every agent that does not set them. */
function propagateAgentDefaults(config: PlainObject, instances: readonly InstanceShape[]): void {
  for (const key of ['skip_verification', 'skip_verification_reward']) {
    if (!Object.hasOwn(config, key)) continue;
    for (const instance of instances) {
      if (instance.serverType === 'responses_api_agents' && !Object.hasOwn(instance.config, key))
        instance.config[key] = config[key];
    }
  }
}

function directorySetting(config: PlainObject, key: string, cwd: string, sources: ConfigSources): void {
  const value = config[key] ?? path.join(cwd, key === 'results_dir' ? 'results' : 'cache');
  if (typeof value !== 'string' || value.trim() === '') {
    throw new ConfigError(
      `Config value '${key}'${sources.at([key])} must be a non-empty directory path, got ${JSON.stringify(value)}.`,
      'GYM_CONFIG_DIRECTORY',
    );
  }
  config[key] = path.resolve(cwd, value);
}

function writeDefaults(config: PlainObject, cwd: string, sources: ConfigSources): void {
  config.dry_run ??= false;
  config.model_endpoint_readiness_timeout_seconds ??= 600;
  const readiness = config.model_endpoint_readiness_timeout_seconds;
  if (typeof readiness !== 'number' || !(readiness >= 0)) {
    throw new ConfigError(
      `Config value 'model_endpoint_readiness_timeout_seconds'${sources.at(['model_endpoint_readiness_timeout_seconds'])} must be a number of seconds >= 0 (0 disables the check), got ${JSON.stringify(readiness)}.`,
      'GYM_CONFIG_TIMEOUT',
    );
  }
  directorySetting(config, 'results_dir', cwd, sources);
  directorySetting(config, 'cache_dir', cwd, sources);
}

export async function loadGlobalConfig(options: LoadOptions): Promise<GlobalConfig> {
  const env = options.env ?? process.env;
  const cwd = path.resolve(options.cwd ?? process.cwd());
  const warn = options.warn ?? defaultWarn;
  const roots = searchRoots(env, cwd);
  const sources = new ConfigSources();

  const cli = parseOverrides(options.overrides);
  const envYamlPath = findEnvYaml(roots);
  const envYaml = envYamlPath ? readYamlFile(envYamlPath) : undefined;

  const configPathsSource = Object.hasOwn(cli, 'config_paths') ? 'from the command line' : `in '${envYamlPath}'`;
  const entries = readConfigPathsValue(
    Object.hasOwn(cli, 'config_paths') ? cli.config_paths : envYaml?.data.config_paths,
    configPathsSource,
  );
  const { mergeOrder, discovered } = expandConfigPaths(entries, roots, configPathsSource, warn);

  for (const file of mergeOrder) sources.addFile(file.file, file.parsed.positions);
  if (envYaml) sources.addFile(envYaml.source, envYaml.positions);
  for (const token of options.overrides) sources.addOverride(token, parseOverrideToken(token).path);

  let config = mergeAll([...mergeOrder.map((file) => file.parsed.data), envYaml?.data ?? {}, cli]);
  if (discovered.length > 0) config.config_paths = discovered;

  config = applyDirectives(config, sources);
  assertNoMissingValues(config, sources);

  const interpolator = new Interpolator(config, env, sources);
  for (const key of ADDRESS_SETTINGS) if (Object.hasOwn(config, key)) config[key] = interpolator.resolveAt([key]);
  resolveInstanceFields(config, interpolator);
  rejectAlmostServers(config, sources, warn);

  const { instances } = classifyServers(config);
  propagateAgentDefaults(config, instances);
  await assignAddresses(config, instances, { allocatePorts: options.allocatePorts ?? true, sources });

  const resolved = interpolator.resolveAll();
  writeDefaults(resolved, cwd, sources);
  checkReferences(resolved, classifyServers(resolved).instances, sources);
  return resolved;
}
