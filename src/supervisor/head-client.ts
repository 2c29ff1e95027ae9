import { GymError } from '../errors.js';
import { delay, HttpTransportError, request } from '../http/client.js';
import type { InstanceRecord, InstanceStatus } from '../server/head-server.js';
import { answers } from '../http/readiness.js';

/**
 * Talking to a running environment through its head server: what runs there, how healthy it is, and asking it to
 * stop. Every call is one bounded attempt: these commands report on the present, they never wait for a server to
 * come up.
 */

const INSTANCES_TIMEOUT_MS = 5_000;
const HEALTH_TIMEOUT_MS = 2_000;

export type HeadLookup = { kind: 'found'; instances: InstanceRecord[] } | { kind: 'unreachable'; reason: string };

/** `GET <head>/server_instances`. Nothing answering is a normal outcome (nothing runs), not an error. */
export async function fetchServerInstances(headUrl: string): Promise<HeadLookup> {
  let body: unknown;
  try {
    const res = await request(`${headUrl}/server_instances`, {
      timeoutMs: INSTANCES_TIMEOUT_MS,
      maxBodyBytes: 16 * 1024 * 1024,
    });
    if (res.status !== 200) throw notAHeadServer(headUrl, `HTTP ${res.status} for /server_instances`);
    body = res.json();
  } catch (err) {
    if (err instanceof HttpTransportError) return { kind: 'unreachable', reason: err.message };
    if (err instanceof SyntaxError) throw notAHeadServer(headUrl, 'a body that is not JSON for /server_instances');
    throw err;
  }
  if (!Array.isArray(body) || !body.every(isInstanceRecord)) {
    throw notAHeadServer(headUrl, 'a /server_instances body that is not a list of server instances');
  }
  return { kind: 'found', instances: body };
}

function isInstanceRecord(value: unknown): value is InstanceRecord {
  if (typeof value !== 'object' || value === null) return false;
  const record = value as Record<string, unknown>;
  return (
    typeof record.process_name === 'string' && typeof record.server_type === 'string' && typeof record.name === 'string'
  );
}

function notAHeadServer(headUrl: string, what: string): GymError {
  return new GymError(
    'GYM_NOT_A_HEAD_SERVER',
    'config',
    `The server at ${headUrl} answered with ${what}, so it is not a tsgym/NeMo Gym head server. ` +
      'Point at the right one with ++head_server.host=<host> ++head_server.port=<port>.',
  );
}

/** Health of one server, in the reference's four words: any HTTP answer to `GET <url>/` is `success`. */
export async function probeHealth(
  url: string | null | undefined,
  timeoutMs = HEALTH_TIMEOUT_MS,
): Promise<InstanceStatus> {
  if (!url) return 'unknown_error';
  try {
    await request(`${url}/`, { timeoutMs, maxBodyBytes: 1024 * 1024 });
    return 'success';
  } catch (err) {
    if (err instanceof HttpTransportError && err.kind === 'connect') return 'connection_error';
    if (err instanceof HttpTransportError && err.kind === 'timeout') return 'timeout';
    return 'unknown_error';
  }
}

/** Every instance with `status` probed and `uptime_seconds` computed from its `start_time`. */
export async function withHealth(
  instances: readonly InstanceRecord[],
  now = Date.now() / 1000,
): Promise<InstanceRecord[]> {
  return Promise.all(
    instances.map(async (record) => ({
      ...record,
      status: await probeHealth(record.url),
      uptime_seconds: typeof record.start_time === 'number' ? Math.max(0, now - record.start_time) : null,
    })),
  );
}

export type ShutdownOutcome =
  { kind: 'accepted' } | { kind: 'unreachable'; reason: string } | { kind: 'unsupported'; status: number };

/** `POST <head>/shutdown`: the environment stops its servers, then its head server. */
export async function requestShutdown(headUrl: string): Promise<ShutdownOutcome> {
  try {
    const res = await request(`${headUrl}/shutdown`, { method: 'POST', json: {}, timeoutMs: INSTANCES_TIMEOUT_MS });
    return res.status === 200 ? { kind: 'accepted' } : { kind: 'unsupported', status: res.status };
  } catch (err) {
    if (err instanceof HttpTransportError) return { kind: 'unreachable', reason: err.message };
    throw err;
  }
}

/**
 * Poll `GET <head>/` until nothing answers; false when it still answers after `timeoutMs`. Two misses in a row
 * are required, so a pooled connection the server happened to drop is not mistaken for the server being gone.
 */
export async function waitUntilGone(headUrl: string, timeoutMs: number, intervalMs = 100): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  let misses = 0;
  while (Date.now() < deadline) {
    misses = (await answers(headUrl, 1_000)) ? 0 : misses + 1;
    if (misses >= 2) return true;
    await delay(intervalMs);
  }
  return false;
}

/** `Xd Yh Zm S.Ss`, as the reference prints uptimes. */
export function formatUptime(seconds: number): string {
  const days = Math.floor(seconds / 86_400);
  const hours = Math.floor((seconds % 86_400) / 3_600);
  const minutes = Math.floor((seconds % 3_600) / 60);
  return `${days}d ${hours}h ${minutes}m ${(seconds % 60).toFixed(1)}s`;
}
