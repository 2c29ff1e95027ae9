/** tsgym configuration: Hydra-style overrides, composition, server instances, entrypoints. */
export { loadGlobalConfig, type LoadOptions } from './load.js';
export { parseOverrides, parseOverrideToken, type ParsedOverride } from './overrides.js';
export { parseOverrideValue, formatOverrideString } from './override-grammar.js';
export { searchRoots, installRoot, findUnderRoots } from './roots.js';
export {
  listServerInstances,
  getServerInstance,
  resolveRef,
  classifyServers,
  type InstanceShape,
  type AlmostServer,
} from './servers.js';
export { maskSecrets, isSecretKey, describeConfig } from './secrets.js';
export { serializeConfig, parseConfigYaml } from './yaml-io.js';
export { readServerEnv, serverEnv, CONFIG_DICT_ENV, CONFIG_PATH_ENV } from './server-env.js';
export { findFreePort, isPortFree } from './ports.js';
export { resolveServerDir, resolveLaunch, type LaunchSpec } from './entrypoint.js';
export { closeMatches, similarityRatio } from './did-you-mean.js';
export {
  SERVER_TYPES,
  DOMAINS,
  RESERVED_TOP_LEVEL_KEYS,
  DEFAULT_HOST,
  DEFAULT_HEAD_PORT,
  type GlobalConfig,
  type ServerInstance,
  type ServerType,
} from './types.js';
