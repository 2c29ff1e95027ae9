/**
 * tsgym configuration: Hydra-style overrides, composition, server instances, entrypoints. This entry holds what the
 * other layers use; the modules behind it (override grammar, secrets, did-you-mean, …) are imported directly by the
 * few places that need their finer parts.
 */
export { loadGlobalConfig } from './load.js';
export { searchRoots, installRoot, findUnderRoots } from './roots.js';
export { listServerInstances, resolveRef } from './servers.js';
export { describeConfig } from './secrets.js';
export { parseConfigYaml } from './yaml-io.js';
export { CONFIG_DICT_ENV, CONFIG_PATH_ENV, readServerEnv, serverEnv } from './server-env.js';
export { findFreePort, isPortFree } from './ports.js';
export { resolveServerDir, resolveLaunch, type LaunchSpec } from './entrypoint.js';
export { type GlobalConfig, type ServerInstance } from './types.js';
