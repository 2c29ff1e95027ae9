/**
 * What the collector and the workers agree on in Redis: the queue URL, the per-run key prefix, the run registry
 * workers discover runs through, the worker roster the progress line counts, and the shape of a job and its
 * result. Nothing here talks to Redis by itself except the small registry helpers.
 *
 *   tsgym:runs            hash  runId → RunAnnouncement (JSON); the collector writes and refreshes its entry,
 *                               deletes it when the run ends; workers poll it to know which queues to serve.
 *   tsgym:workers         hash  workerId → WorkerPresence (JSON); each worker refreshes its entry every second.
 *   tsgym:run:<runId>:rollouts:jobs     stream of the jobs waiting or in flight, read by the group `workers`
 *                                       (jobs-stream.ts: how jobs are taken, answered, handed back, reclaimed);
 *   tsgym:run:<runId>:rollouts:results  stream of answers (each entry a JSON array of JobResult) workers add and the
 *                                       collector trims once the results are in its files;
 *   tsgym:run:<runId>:rollouts:owner    marker the collector sets: missing after a reconnect = Redis lost its data.
 * All of a run's keys are deleted when the run ends.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Redis, RedisOptions } from 'ioredis';
import { ConfigError } from '../errors.js';
import type { Row } from '../runfiles/row.js';

export const RUNS_KEY = 'tsgym:runs';
export const WORKERS_KEY = 'tsgym:workers';
export const QUEUE_NAME = 'rollouts';
/** A worker whose roster entry is older than this is not counted as connected. */
export const PRESENCE_FRESH_MS = 5_000;
/** A run whose collector has not refreshed its announcement for this long is no longer served (it was abandoned). */
export const RUN_ABANDONED_MS = 60 * 60 * 1000;
/**
 * Default stall time of a job (queue_stall_secs): a worker re-claims the jobs it runs every third of it however
 * long the rollout runs, so only a worker that stopped (killed, its host gone) lets one go idle this long; its jobs
 * are moved back to the stream within 1.5 × this (idle past it, then the others' stalled check, every half of it).
 */
export const DEFAULT_STALL_SECS = 5;
/** Default time the collector waits for an unreachable Redis before failing the run. */
export const DEFAULT_OUTAGE_SECS = 60;

export interface QueueAddress {
  url: string;
  host: string;
  port: number;
  db: number;
  password?: string;
  username?: string;
}

/** `redis://[user:password@]HOST:PORT[/DB]` → its parts; anything else is a config error naming the fix. */
export function parseQueueUrl(raw: unknown, key = 'queue_url'): QueueAddress {
  const bad = (why: string): ConfigError =>
    new ConfigError(
      `Config value '${key}' (--queue) must be a Redis URL such as redis://127.0.0.1:6379/0, got ${JSON.stringify(raw)}: ${why}.`,
      'GYM_CONFIG_VALUE',
    );
  if (typeof raw !== 'string' || raw.trim() === '') throw bad('it is empty');
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw bad('it is not a URL');
  }
  if (url.protocol !== 'redis:') throw bad(`the scheme must be redis:, not ${url.protocol}`);
  if (url.hostname === '') throw bad('it names no host');
  const port = url.port === '' ? 6379 : Number(url.port);
  const dbText = url.pathname.replace(/^\//, '');
  if (dbText !== '' && !/^\d+$/.test(dbText)) throw bad(`the database '${dbText}' is not a number`);
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  return {
    url: `redis://${url.host}${dbText === '' ? '' : `/${dbText}`}`,
    host,
    port,
    db: dbText === '' ? 0 : Number(dbText),
    ...(url.password ? { password: decodeURIComponent(url.password) } : {}),
    ...(url.username ? { username: decodeURIComponent(url.username) } : {}),
  };
}

/**
 * ioredis settings shared by every connection: commands wait through an outage instead of failing after a few
 * retries (the collector's own outage deadline decides when to give up), and reconnects are attempted quickly so a
 * Redis that comes back is used within a second.
 */
export function connectionOptions(address: QueueAddress, name: string): RedisOptions {
  return {
    host: address.host,
    port: address.port,
    db: address.db,
    ...(address.password ? { password: address.password } : {}),
    ...(address.username ? { username: address.username } : {}),
    connectionName: name,
    maxRetriesPerRequest: null,
    enableOfflineQueue: true,
    retryStrategy: (times: number) => Math.min(100 * times, 1000),
  };
}

/** The key prefix of one run. */
export function runPrefix(runId: string): string {
  return `tsgym:run:${runId}`;
}

export function resultsKey(prefix: string): string {
  return `${prefix}:${QUEUE_NAME}:results`;
}

export function ownerKey(prefix: string): string {
  return `${prefix}:${QUEUE_NAME}:owner`;
}

/** Sha-256 of a file's bytes, streamed. */
export async function fileDigest(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/**
 * A run is its output path and the exact rows it materialized: rerunning (or resuming) the same collection finds
 * the same queue, and any other collection — another output, or changed inputs — gets its own.
 */
export function runIdOf(outputPath: string, materializedDigest: string): string {
  return createHash('sha256')
    .update(path.resolve(outputPath))
    .update('\0')
    .update(materializedDigest)
    .digest('hex')
    .slice(0, 20);
}

export interface RunAnnouncement {
  runId: string;
  prefix: string;
  /** The collector's output file, for worker logs. */
  output: string;
  /** Stall time of this run's jobs: a job idle this long without a heartbeat is moved back (checked every half). */
  stallMs: number;
  /** Deadline of one `/run` exchange (run_request_timeout_secs). */
  runTimeoutMs: number;
  /** Last refresh by the collector (ms since the epoch). */
  refreshedAt: number;
}

export interface WorkerPresence {
  id: string;
  agents: string[];
  /** Runs this worker currently serves. */
  runs: string[];
  concurrency: number;
  seenAt: number;
}

/** A job's payload: the agent the row names and the row exactly as it is POSTed to `/run`. */
export interface JobData {
  agent: string;
  body: string;
  /** The collector's `traceparent` for the attempt (D25): the parent of the worker's spans. */
  traceparent?: string;
  /** Its `tracestate`, when it has one (sent on by the worker's `/run`). */
  tracestate?: string;
  /**
   * When the collector enqueued the job (ms since the epoch, decimal text): the start of the worker's `queue wait`
   * span. Set only when the collector records spans itself; a worker reads it as untrusted text (worker-trace.ts).
   */
  enqueuedAt?: string;
}

/**
 * A job's result: the row `/run` produced (or the failure row) and the worker that produced it; or, for a job the
 * queue gave up on (its workers kept dying, or its entry could not be run), the reason, from which the collector
 * makes a retryable worker_lost failure row.
 */
export type JobResult =
  | { jobId: string; worker: string; row: Row; lost?: undefined }
  | { jobId: string; worker: string; lost: string; row?: undefined };

/** `t<task>r<rollout>a<attempt>`: the same rollout attempt always has the same id, so adding it twice is a no-op. */
export function jobIdOf(task: number, rollout: number, attempt: number): string {
  return `t${task}r${rollout}a${attempt}`;
}

export function defaultWorkerId(): string {
  return `${os.hostname()}/${process.pid}`;
}

function parseJsonObject<T>(text: string | undefined): T | undefined {
  if (text === undefined || text.length > 64 * 1024) return undefined;
  try {
    const value = JSON.parse(text) as unknown;
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as T) : undefined;
  } catch {
    return undefined;
  }
}

/** The entries of a registry hash that parse and pass `keep` (at most `limit` of them are looked at). */
async function readHash<T>(client: Redis, key: string, limit: number, keep: (entry: T) => boolean): Promise<T[]> {
  const entries = await client.hgetall(key);
  const kept: T[] = [];
  for (const text of Object.values(entries).slice(0, limit)) {
    const entry = parseJsonObject<T>(text);
    if (entry && keep(entry)) kept.push(entry);
  }
  return kept;
}

/** The announced runs, skipping entries that are not well-formed or whose collector is long gone. */
export function readRuns(client: Redis, now = Date.now()): Promise<RunAnnouncement[]> {
  return readHash<RunAnnouncement>(
    client,
    RUNS_KEY,
    1000,
    (run) =>
      typeof run.runId === 'string' &&
      typeof run.prefix === 'string' &&
      typeof run.stallMs === 'number' &&
      typeof run.runTimeoutMs === 'number' &&
      typeof run.refreshedAt === 'number' &&
      now - run.refreshedAt <= RUN_ABANDONED_MS,
  );
}

/** Workers whose roster entry is fresh. */
export function readWorkers(client: Redis, now = Date.now()): Promise<WorkerPresence[]> {
  return readHash<WorkerPresence>(
    client,
    WORKERS_KEY,
    10_000,
    (worker) =>
      typeof worker.id === 'string' &&
      typeof worker.seenAt === 'number' &&
      Array.isArray(worker.runs) &&
      Array.isArray(worker.agents) &&
      now - worker.seenAt <= PRESENCE_FRESH_MS,
  );
}
