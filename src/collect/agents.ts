/**
 * Where the agents are: read from the head server's config (`--no-serve`, `eval aggregate`) or from the config
 * the command just started (`eval run` without `--no-serve`). The collector calls agents directly by URL.
 */
import { listServerInstances, parseConfigYaml } from '../config/index.js';
import type { GlobalConfig } from '../config/types.js';
import { ConfigError } from '../errors.js';
import { callInternal } from '../http/client.js';
import type { HeadServerAddress } from './config.js';

export interface AgentDirectory {
  /** Configured agent names, in config order. */
  readonly names: readonly string[];
  urlOf(name: string): string | undefined;
  /** Where the names came from, for messages ("the head server at http://…"). */
  readonly source: string;
}

export function agentDirectoryFromConfig(config: GlobalConfig, source: string): AgentDirectory {
  const agents = new Map<string, string>();
  for (const instance of listServerInstances(config)) {
    if (instance.serverType === 'responses_api_agents') agents.set(instance.name, instance.url);
  }
  return { names: [...agents.keys()], urlOf: (name) => agents.get(name), source };
}

export function headUrl(head: HeadServerAddress): string {
  const host = head.host.includes(':') ? `[${head.host}]` : head.host;
  return `http://${host}:${head.port}`;
}

export function unreachableHead(url: string): ConfigError {
  return new ConfigError(
    `Could not connect to the head server at ${url}. Perhaps you are not running a server or your head server is on a different port? Start the servers with gym env start, or point at them with ++head_server.host=<host> ++head_server.port=<port>.`,
    'GYM_HEAD_UNREACHABLE',
  );
}

/**
 * The running servers' config, from `GET /global_config_dict_yaml`: a JSON string whose content is YAML, so it
 * is decoded twice.
 */
export async function fetchHeadConfig(head: HeadServerAddress, timeoutMs = 10_000): Promise<GlobalConfig> {
  const url = headUrl(head);
  let text: string;
  try {
    const res = await callInternal(`${url}/global_config_dict_yaml`, { timeoutMs, attempts: 3 });
    if (res.status < 200 || res.status >= 300) {
      throw new ConfigError(
        `The head server at ${url} answered HTTP ${res.status} to GET /global_config_dict_yaml: ${res.text().slice(0, 300)}. Is another program listening on that port?`,
        'GYM_HEAD_BAD_REPLY',
      );
    }
    text = res.text();
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    throw unreachableHead(url);
  }
  let yamlText: unknown;
  try {
    yamlText = JSON.parse(text);
  } catch {
    yamlText = undefined;
  }
  if (typeof yamlText !== 'string') {
    throw new ConfigError(
      `The head server at ${url} sent a config that is not a JSON-encoded YAML string (GET /global_config_dict_yaml). Is another program listening on that port?`,
      'GYM_HEAD_BAD_REPLY',
    );
  }
  return parseConfigYaml(yamlText, `the head server at ${url}`);
}

export async function agentDirectoryFromHead(head: HeadServerAddress): Promise<AgentDirectory> {
  const config = await fetchHeadConfig(head);
  return agentDirectoryFromConfig(config, `the head server at ${headUrl(head)}`);
}
