import type { ServiceAuth } from '../http/service-auth.js';

/**
 * What a rollout is run with: the remote agent's config block once validated (the parsing, with its error texts, is
 * the agent's: responses_api_agents/remote_agent/config.ts), its defaults, and how its seconds are printed.
 */

export interface ResourcesServerRef {
  type: 'resources_servers';
  name: string;
}

/** `model_server`: the model server through which each rollout's model calls go (docs/models.md). */
export interface ModelServerRef {
  type: 'responses_api_models';
  name: string;
}

export interface RemoteAgentConfig {
  /** `agent_base_url`, normalised: no surrounding whitespace, no trailing slash; any path prefix kept. */
  serviceBaseUrl: string;
  resourcesServer: ResourcesServerRef;
  /** Unset: the service calls its model on its own and rows carry no `ng_model_call_capture`. */
  modelServer?: ModelServerRef;
  /**
   * `token_id_capture` (needs `model_server`): each rollout's model URL is its training-token-capture path, and after
   * verify the calls' token ids are rebuilt onto the row's output (src/training/), or the row is masked.
   */
  tokenIdCapture: boolean;
  concurrency: number;
  remoteResponsesTimeoutSecs: number;
  runTimeoutSecs: number;
  /** `null` = no step bound. */
  maxSteps: number | null;
  maxResponseBytes: number;
  /** Credential headers and CA for the service hop (`agent_api_key_env`, `agent_headers`, `agent_ca_file`). */
  auth: ServiceAuth;
  /**
   * `fill_echo_fields`: accept a response that lacks only the fields echoing the request or usage detail objects,
   * completed from the request (D24). Off by default: strict validation.
   */
  fillEchoFields: boolean;
  /** Start-up warnings (legal but probably unintended settings), for the server to print once. */
  warnings: string[];
}

export const DEFAULTS = {
  concurrency: 32,
  remoteResponsesTimeoutSecs: 1800,
  runTimeoutSecs: 2100,
  maxResponseBytes: 64 * 1024 * 1024,
} as const;

/** Seconds as Python prints a float (`1800` → `1800.0`, `0.25` → `0.25`), so error texts match the reference. */
export function pyFloat(value: number): string {
  if (Number.isInteger(value) && Math.abs(value) < 1e16) return `${value}.0`;
  return String(value);
}
