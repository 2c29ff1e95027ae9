/**
 * Server instances: top-level `<name>: {<server_type>: {<impl>: {entrypoint, …}}}` entries, how they are
 * recognised and validated, and how names and `{type, name}` references are looked up.
 */
import { ConfigError } from '../errors.js';
import { closeMatches, quoteList } from './did-you-mean.js';
import {
  DOMAINS,
  isPlainObject,
  isServerType,
  RESERVED_TOP_LEVEL_KEYS,
  SERVER_TYPES,
  type GlobalConfig,
  type PlainObject,
  type ServerInstance,
  type ServerType,
} from './types.js';

/** A top-level entry that has the shape of a server instance. */
export interface InstanceShape {
  name: string;
  serverType: ServerType;
  impl: string;
  /** The inner block, live (not a copy). */
  config: PlainObject;
}

/** A top-level entry with a server-type key that breaks a rule: it is not started. */
export interface AlmostServer {
  name: string;
  problems: string[];
}

export interface ServerClassification {
  instances: InstanceShape[];
  almostServers: AlmostServer[];
}

/** Accept integers and digit strings (as pydantic does); anything else is not a port. */
export function asPort(value: unknown): number | undefined {
  const number = typeof value === 'string' && /^\s*\d+\s*$/.test(value) ? Number(value) : value;
  return typeof number === 'number' && Number.isInteger(number) && number >= 1 && number <= 65535 ? number : undefined;
}

function inspectInstance(name: string, value: PlainObject): { shape?: InstanceShape; problems: string[] } {
  const typeKeys = Object.keys(value).filter(isServerType);
  const problems: string[] = [];
  const otherKeys = Object.keys(value).filter((key) => !isServerType(key));
  if (typeKeys.length > 1)
    problems.push(
      `it holds more than one server type (${typeKeys.join(', ')}); an instance runs exactly one server, so split it into one top-level entry per server`,
    );
  if (otherKeys.length > 0)
    problems.push(
      `it has keys next to the server type (${otherKeys.join(', ')}); put settings inside ${typeKeys[0]}.<impl>`,
    );
  const serverType = typeKeys[0]!;
  const impls = value[serverType];
  if (!isPlainObject(impls)) {
    problems.push(
      `${serverType} must map one impl name (its directory) to its settings, e.g. ${serverType}: {my_impl: {entrypoint: app.py}}`,
    );
    return { problems };
  }
  const implNames = Object.keys(impls);
  if (implNames.length !== 1) {
    problems.push(
      `${serverType} must hold exactly one impl key, found ${implNames.length}${implNames.length ? ` (${implNames.join(', ')})` : ''}`,
    );
    return { problems };
  }
  const impl = implNames[0]!;
  const config = impls[impl];
  if (!isPlainObject(config)) {
    problems.push(`the settings under ${serverType}.${impl} must be a mapping with at least an entrypoint`);
    return { problems };
  }
  if (typeof config.entrypoint !== 'string' || config.entrypoint.trim() === '') {
    problems.push(`entrypoint is required and must be a file name, e.g. entrypoint: app.py`);
  }
  if (serverType === 'resources_servers') {
    if (config.domain === undefined || config.domain === null) {
      problems.push(`A domain is required for resources servers. Add domain: <one of ${DOMAINS.join(', ')}>`);
    } else if (!(DOMAINS as readonly unknown[]).includes(config.domain)) {
      problems.push(`domain ${JSON.stringify(config.domain)} is not one of ${DOMAINS.join(', ')}`);
    }
  }
  if (config.host !== undefined && config.host !== null && typeof config.host !== 'string') {
    problems.push(`host must be a string such as 127.0.0.1, got ${JSON.stringify(config.host)}`);
  }
  if (config.port !== undefined && config.port !== null && config.port !== 0 && asPort(config.port) === undefined) {
    problems.push(`port must be an integer between 1 and 65535, got ${JSON.stringify(config.port)}`);
  }
  return problems.length > 0 ? { problems } : { shape: { name, serverType, impl, config }, problems };
}

/**
 * Split the top level into valid instances and almost-servers. Reserved keys and mappings without a
 * server-type key are settings, never servers.
 */
export function classifyServers(config: GlobalConfig): ServerClassification {
  const instances: InstanceShape[] = [];
  const almostServers: AlmostServer[] = [];
  for (const [name, value] of Object.entries(config)) {
    if (RESERVED_TOP_LEVEL_KEYS.has(name) || !isPlainObject(value)) continue;
    if (!Object.keys(value).some(isServerType)) continue;
    const { shape, problems } = inspectInstance(name, value);
    if (shape) instances.push(shape);
    else almostServers.push({ name, problems });
  }
  return { instances, almostServers };
}

function toServerInstance(shape: InstanceShape): ServerInstance {
  const host = shape.config.host;
  const port = asPort(shape.config.port);
  if (typeof host !== 'string' || host === '' || port === undefined) {
    throw new ConfigError(
      `Server instance '${shape.name}' has no ${port === undefined ? 'port' : 'host'} in this config: it was loaded without port allocation, or it comes from YAML that never went through gym env start. Set it with ++${shape.name}.${shape.serverType}.${shape.impl}.${port === undefined ? 'port=<port>' : 'host=<host>'}.`,
      'GYM_CONFIG_SERVER_ADDRESS',
    );
  }
  return {
    name: shape.name,
    serverType: shape.serverType,
    impl: shape.impl,
    config: shape.config,
    host,
    port,
    url: `http://${host}:${port}`,
  };
}

/** Every valid server instance in config order (almost-servers are skipped). */
export function listServerInstances(config: GlobalConfig): ServerInstance[] {
  return classifyServers(config).instances.map(toServerInstance);
}

export function getServerInstance(config: GlobalConfig, name: string): ServerInstance {
  const { instances, almostServers } = classifyServers(config);
  const shape = instances.find((instance) => instance.name === name);
  if (shape) return toServerInstance(shape);
  const almost = almostServers.find((entry) => entry.name === name);
  if (almost) {
    throw new ConfigError(
      `'${name}' is in the config but is not a valid server instance: ${almost.problems.join('; ')}.`,
      'GYM_CONFIG_SERVER_NOT_FOUND',
    );
  }
  const names = instances.map((instance) => instance.name);
  const suggestions = closeMatches(name, names);
  const hint =
    suggestions.length > 0
      ? `Did you mean: ${quoteList(suggestions)}?`
      : `Defined server instances: ${names.length > 0 ? quoteList(names) : '(none)'}.`;
  throw new ConfigError(
    `There is no server instance named '${name}' in the config. ${hint}`,
    'GYM_CONFIG_SERVER_NOT_FOUND',
  );
}

/** The reference's hint for an unknown instance name: close names among instances of that type, or the full list. */
export function referenceHint(name: string, type: ServerType | undefined, instances: readonly InstanceShape[]): string {
  const candidates = instances
    .filter((instance) => type === undefined || instance.serverType === type)
    .map((instance) => instance.name);
  const suggestions = closeMatches(name, candidates);
  if (suggestions.length > 0) return `Did you mean: ${quoteList(suggestions)}?`;
  return `Available ${type ?? 'server instances'}: ${candidates.length > 0 ? quoteList(candidates) : '(none)'}`;
}

/** `{type, name}` as a reference, or undefined when `value` does not look like one. */
export function asServerRef(value: unknown): { type: ServerType; name: string } | undefined {
  if (!isPlainObject(value) || !isServerType(value.type) || typeof value.name !== 'string') return undefined;
  return { type: value.type, name: value.name };
}

/**
 * Look up the instance a reference names. `ref` is `{type, name}` (`type` may be omitted, as in a row's
 * `agent_ref`). `where` is the subject of the error sentence, e.g. "Row 3's agent_ref".
 */
export function resolveRef(config: GlobalConfig, ref: unknown, where: string): ServerInstance {
  const type = isPlainObject(ref) ? ref.type : undefined;
  const name = isPlainObject(ref) ? ref.name : undefined;
  if (typeof name !== 'string' || name === '' || (type !== undefined && type !== null && !isServerType(type))) {
    throw new ConfigError(
      `${where} must be a server reference {type: <${SERVER_TYPES.join('|')}>, name: <instance name>}, got ${JSON.stringify(ref)}.`,
      'GYM_CONFIG_SERVER_REF',
    );
  }
  const serverType = isServerType(type) ? type : undefined;
  const { instances } = classifyServers(config);
  const shape = instances.find(
    (instance) => instance.name === name && (serverType === undefined || instance.serverType === serverType),
  );
  if (shape) return toServerInstance(shape);
  throw new ConfigError(
    `${where} references ${serverType ?? 'server'}/'${name}', which is not defined in the merged config. ${referenceHint(name, serverType, instances)} Fix the name, or add the config that defines '${name}' to config_paths.`,
    'GYM_CONFIG_SERVER_REF',
  );
}
