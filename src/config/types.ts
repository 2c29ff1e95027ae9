import { isRecord as isPlainObject } from '../contract/records.js';

/** The fully resolved global config: plain YAML/JSON data, no interpolations left. */
export type GlobalConfig = Record<string, unknown>;

export const SERVER_TYPES = ['responses_api_models', 'resources_servers', 'responses_api_agents'] as const;
export type ServerType = (typeof SERVER_TYPES)[number];

export function isServerType(value: unknown): value is ServerType {
  return typeof value === 'string' && (SERVER_TYPES as readonly string[]).includes(value);
}

/** Values of `domain` a resources server may declare (reference `config_types.py::Domain`). */
export const DOMAINS = [
  'math',
  'coding',
  'agent',
  'knowledge',
  'instruction_following',
  'long_context',
  'safety',
  'games',
  'translation',
  'e2e',
  'rlhf',
  'other',
] as const;

/** Top-level keys that are settings, never server instances (reference `NEMO_GYM_RESERVED_TOP_LEVEL_KEYS`). */
export const RESERVED_TOP_LEVEL_KEYS: ReadonlySet<string> = new Set([
  'config_paths',
  'entrypoint',
  'default_host',
  'head_server',
  'disallowed_ports',
  'head_server_deps',
  'python_version',
  'pip_install_verbose',
  'use_absolute_ip',
  'uv_pip_set_python',
  'skip_venv_if_present',
  'hf_token',
  'ray_head_node_address',
  'port_range_low',
  'port_range_high',
  'dry_run',
  'model_endpoint_readiness_timeout_seconds',
  'allow_openai_version_skew',
  'uv_cache_dir',
  'uv_venv_dir',
  'results_dir',
  'cache_dir',
  '_inherit_from',
  '_copy',
  'nemo_gym_log_dir',
  'verbose',
  'json',
  'query',
  'observability_enabled',
  'model_call_capture_dir',
  'token_id_capture',
  'component_name',
  'skip_verification',
  'skip_verification_reward',
]);

/** The `???` marker: a value that must be supplied by a later source. */
export const MISSING_VALUE = '???';

export const DEFAULT_HOST = '127.0.0.1';
export const DEFAULT_HEAD_PORT = 11000;
export const DEFAULT_PORT_RANGE_LOW = 10001;
export const DEFAULT_PORT_RANGE_HIGH = 20000;

/** One runnable server, as read from `<name>: {<serverType>: {<impl>: {...}}}`. */
export interface ServerInstance {
  name: string;
  serverType: ServerType;
  impl: string;
  /** The inner block (`entrypoint`, `host`, `port`, impl-specific keys). */
  config: Record<string, unknown>;
  host: string;
  port: number;
  /** `http://host:port` */
  url: string;
}

export type PlainObject = Record<string, unknown>;

// The contract's one object test, under the name the config code has always read it by.
export { isPlainObject };

/** Dotted display form of a config path: `a.b[0].c`. */
export function formatPath(path: ReadonlyArray<string | number>): string {
  let out = '';
  for (const segment of path) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else out += out === '' ? segment : `.${segment}`;
  }
  return out;
}

/** Deep copy of plain config data. */
export function cloneData<T>(value: T): T {
  if (Array.isArray(value)) return value.map((item: unknown) => cloneData(item)) as T;
  if (isPlainObject(value)) {
    const out: PlainObject = {};
    for (const [key, item] of Object.entries(value)) out[key] = cloneData(item);
    return out as T;
  }
  return value;
}
