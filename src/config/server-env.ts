/**
 * The two-env-var contract between `gym env start` and each server process it spawns:
 * `NEMO_GYM_CONFIG_DICT` holds the whole resolved config as YAML, `NEMO_GYM_CONFIG_PATH` the instance name.
 */
import { ConfigError } from '../errors.js';
import { withForeignHeadersMasked } from './secrets.js';
import { getServerInstance } from './servers.js';
import type { GlobalConfig, ServerInstance } from './types.js';
import { parseConfigYaml, serializeConfig } from './yaml-io.js';

export const CONFIG_DICT_ENV = 'NEMO_GYM_CONFIG_DICT';
export const CONFIG_PATH_ENV = 'NEMO_GYM_CONFIG_PATH';

/** The env vars a spawned server needs (added to the parent's environment by the launcher). */
export function serverEnv(config: GlobalConfig, instanceName: string): Record<string, string> {
  return {
    [CONFIG_DICT_ENV]: serializeConfig(withForeignHeadersMasked(config, instanceName)),
    [CONFIG_PATH_ENV]: instanceName,
  };
}

/** What a spawned server reads at start-up. */
export function readServerEnv(env: NodeJS.ProcessEnv = process.env): {
  global: GlobalConfig;
  instance: ServerInstance;
} {
  const yaml = env[CONFIG_DICT_ENV];
  const name = env[CONFIG_PATH_ENV];
  if (yaml === undefined || yaml === '' || name === undefined || name === '') {
    const unset = [yaml ? undefined : CONFIG_DICT_ENV, name ? undefined : CONFIG_PATH_ENV]
      .filter(Boolean)
      .join(' and ');
    throw new ConfigError(
      `${unset} ${unset.includes(' and ') ? 'are' : 'is'} not set. A server reads its config from ${CONFIG_DICT_ENV} (the resolved config as YAML) and its instance name from ${CONFIG_PATH_ENV}; start servers with gym env start, which sets both.`,
      'GYM_CONFIG_SERVER_ENV',
    );
  }
  const global = parseConfigYaml(yaml, CONFIG_DICT_ENV);
  return { global, instance: getServerInstance(global, name) };
}
