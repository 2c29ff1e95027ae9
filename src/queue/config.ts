/**
 * The configuration keys of distributed collection, checked up front: `queue_url` (--queue) for both sides,
 * `queue_stall_secs`, `queue_outage_secs` and `queue_worker_wait_secs` for the collector, `worker_concurrency` (--concurrency),
 * `worker_drain_secs`, `worker_id` and `agent_unreachable_wait_secs` for `gym worker`.
 */
import type { GlobalConfig } from '../config/types.js';
import { ConfigError } from '../errors.js';
import {
  DEFAULT_OUTAGE_SECS,
  DEFAULT_STALL_SECS,
  defaultWorkerId,
  parseQueueUrl,
  type QueueAddress,
} from './protocol.js';

export const DEFAULT_WORKER_CONCURRENCY = 16;
export const DEFAULT_DRAIN_SECS = 30;
/** A producer without an environment waits this long for a worker serving its rows' agents. */
export const DEFAULT_WORKER_WAIT_SECS = 60;
/** A worker hands a job back sooner than a lone collector gives up: another worker may have a live agent. */
export const DEFAULT_WORKER_AGENT_WAIT_SECS = 10;

function seconds(config: GlobalConfig, key: string, fallback: number): number {
  const value = config[key] ?? fallback;
  if (typeof value !== 'number' || !(value > 0)) {
    throw new ConfigError(
      `Config value '${key}' must be a number of seconds > 0, got ${JSON.stringify(value)}.`,
      'GYM_CONFIG_VALUE',
    );
  }
  return value;
}

/** The queue address, or undefined when the run is not distributed. */
export function queueAddressOf(config: GlobalConfig): QueueAddress | undefined {
  const raw = config.queue_url;
  if (raw === undefined || raw === null || raw === '') return undefined;
  return parseQueueUrl(raw);
}

export interface CollectorQueueSettings {
  address: QueueAddress;
  stallMs: number;
  outageMs: number;
  /** How long a producer without an environment waits for a worker serving the rows' agents. */
  workerWaitMs: number;
}

export function collectorQueueSettings(config: GlobalConfig, address: QueueAddress): CollectorQueueSettings {
  return {
    address,
    stallMs: seconds(config, 'queue_stall_secs', DEFAULT_STALL_SECS) * 1000,
    outageMs: seconds(config, 'queue_outage_secs', DEFAULT_OUTAGE_SECS) * 1000,
    workerWaitMs: seconds(config, 'queue_worker_wait_secs', DEFAULT_WORKER_WAIT_SECS) * 1000,
  };
}

export interface WorkerSettings {
  address: QueueAddress;
  concurrency: number;
  drainMs: number;
  agentWaitMs: number;
  id: string;
}

export function workerSettings(config: GlobalConfig): WorkerSettings {
  const address = queueAddressOf(config);
  if (!address) {
    throw new ConfigError(
      'gym worker needs the Redis to take jobs from: add --queue redis://HOST:PORT[/DB] (+queue_url=…), the same URL gym eval run --queue uses.',
      'GYM_CONFIG_VALUE',
    );
  }
  const concurrency = config.worker_concurrency ?? DEFAULT_WORKER_CONCURRENCY;
  if (typeof concurrency !== 'number' || !Number.isInteger(concurrency) || concurrency < 1) {
    throw new ConfigError(
      `Config value 'worker_concurrency' (--concurrency) must be an integer >= 1, got ${JSON.stringify(concurrency)}.`,
      'GYM_CONFIG_VALUE',
    );
  }
  const id = config.worker_id ?? defaultWorkerId();
  if (typeof id !== 'string' || id === '' || id.length > 200) {
    throw new ConfigError(
      `Config value 'worker_id' must be a non-empty string of at most 200 characters, got ${JSON.stringify(id)}.`,
      'GYM_CONFIG_VALUE',
    );
  }
  return {
    address,
    concurrency,
    drainMs: seconds(config, 'worker_drain_secs', DEFAULT_DRAIN_SECS) * 1000,
    agentWaitMs: seconds(config, 'agent_unreachable_wait_secs', DEFAULT_WORKER_AGENT_WAIT_SECS) * 1000,
    id,
  };
}
