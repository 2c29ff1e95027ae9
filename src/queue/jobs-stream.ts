/**
 * The jobs of one run as a Redis stream read by one consumer group (`workers`), shared by the collector (who adds
 * entries) and the workers (who read, finish, hand back and reclaim them). Every state change of a job is one
 * atomic step, so a process dying anywhere leaves each job either in the stream or answered in the results stream:
 *   - add:      XADD (pipelined, one write per batch of the collector's submits);
 *   - take:     XREADGROUP COUNT n (the entry is pending under the worker's consumer name);
 *   - finish:   MULTI XADD results (one entry of the run's results stream: a JSON array), XACK, XDEL, for a batch
 *               of jobs (a result is never written without its job leaving the stream in the same step, nor the job
 *               dropped without its result);
 *   - hand back (refused, agent unreachable): MULTI XADD copy, XACK, XDEL;
 *   - heartbeat: a live worker re-claims its own pending entries (XCLAIM min-idle 0 JUSTID, only those still
 *               its own) every third of the stall time, however long they run, so their idle time stays low;
 *   - reclaim:  entries idle longer than the stall time belong to a worker that stopped (killed, its host gone):
 *               any worker moves them back to the stream's tail with their `deaths` count raised, or, past
 *               MAX_DEATHS, answers them with a `lost` result (the collector's worker_lost failure row).
 * A job's fields: job (the fixed attempt id), agent, body, and, when set, tp (traceparent), ts (tracestate), at
 * (enqueue time) and deaths.
 */
import type { Redis } from 'ioredis';
import { QUEUE_NAME, type JobData } from './protocol.js';

export const GROUP = 'workers';
/** A job whose worker died this many times is given up (a retryable failure row) instead of run again. */
export const MAX_DEATHS = 2;

export function jobsKey(prefix: string): string {
  return `${prefix}:${QUEUE_NAME}:jobs`;
}

export interface StreamJob {
  /** The stream entry id (changes when the job is handed back or reclaimed). */
  entryId: string;
  /** The fixed attempt id, `t<task>r<rollout>a<attempt>`. */
  jobId: string;
  data: JobData;
  /** The entry's fields as stored (a hand-back adds them again unchanged). */
  fields: string[];
}

export function jobFields(jobId: string, data: JobData): string[] {
  const fields = ['job', jobId, 'agent', data.agent, 'body', data.body];
  if (data.traceparent) fields.push('tp', data.traceparent);
  if (data.tracestate) fields.push('ts', data.tracestate);
  if (data.enqueuedAt) fields.push('at', data.enqueuedAt);
  return fields;
}

export interface StreamEntry {
  id: string;
  fields: string[];
}

/** The entries of an XRANGE, XCLAIM or XREAD(GROUP) reply on one stream (deleted entries, nil, are skipped). */
export function streamEntries(reply: unknown): StreamEntry[] {
  if (!Array.isArray(reply)) return [];
  // XREAD(GROUP) on one stream: `[key, entries]` as ioredis hands over RESP3's map, `[[key, entries]]` in RESP2
  // (where an entry's second element holds strings, an XREAD's holds entries).
  if (typeof reply[0] === 'string') return streamEntries(reply[1]);
  const first = reply[0] as unknown[] | undefined;
  if (reply.length === 1 && Array.isArray(first) && Array.isArray(first[1]) && Array.isArray(first[1][0]))
    return streamEntries(first[1]);
  const entries: StreamEntry[] = [];
  for (const raw of reply) {
    if (!Array.isArray(raw) || typeof raw[0] !== 'string' || !Array.isArray(raw[1])) continue;
    entries.push({ id: raw[0], fields: (raw[1] as unknown[]).map((value) => String(value)) });
  }
  return entries;
}

export function fieldOf(entry: StreamEntry, name: string): string | undefined {
  for (let i = 0; i + 1 < entry.fields.length; i += 2) if (entry.fields[i] === name) return entry.fields[i + 1];
  return undefined;
}

/** The jobs among a reply's entries. */
export function parseJobs(reply: unknown): StreamJob[] {
  return streamEntries(reply).map((entry) => {
    const traceparent = fieldOf(entry, 'tp');
    const tracestate = fieldOf(entry, 'ts');
    const enqueuedAt = fieldOf(entry, 'at');
    return {
      entryId: entry.id,
      jobId: fieldOf(entry, 'job') ?? '',
      // A malformed entry (not added by gym eval run) keeps empty fields: the worker answers it as unusable.
      data: {
        agent: fieldOf(entry, 'agent') ?? '',
        body: fieldOf(entry, 'body') ?? '',
        ...(traceparent ? { traceparent } : {}),
        ...(tracestate ? { tracestate } : {}),
        ...(enqueuedAt ? { enqueuedAt } : {}),
      },
      fields: entry.fields,
    };
  });
}

/** The id just after `id`: XTRIM MINID with it drops `id` and everything before. */
export function nextEntryId(id: string): string {
  const [ms, seq] = id.split('-');
  return `${ms}-${Number(seq ?? 0) + 1}`;
}

/** Creates the stream and its group if missing (idempotent: an existing group is kept with its pending entries). */
export async function ensureGroup(client: Redis, key: string): Promise<void> {
  try {
    await client.call('XGROUP', 'CREATE', key, GROUP, '0', 'MKSTREAM');
  } catch (error) {
    if (!/BUSYGROUP/.test(String((error as Error).message))) throw error;
  }
}

/** KEYS[1] stream; ARGV[1] consumer, ARGV[2..] entry ids: refreshes the idle time of those still pending as ours. */
const HEARTBEAT = `
local n = 0
for i = 2, #ARGV do
  local p = redis.call('XPENDING', KEYS[1], '${GROUP}', ARGV[i], ARGV[i], 1)
  if p[1] and p[1][2] == ARGV[1] then
    redis.call('XCLAIM', KEYS[1], '${GROUP}', ARGV[1], 0, ARGV[i], 'JUSTID')
    n = n + 1
  end
end
return n`;

export async function heartbeat(client: Redis, key: string, consumer: string, entryIds: string[]): Promise<void> {
  if (entryIds.length > 0) await client.eval(HEARTBEAT, 1, key, consumer, ...entryIds);
}

/**
 * KEYS[1] stream, KEYS[2] results; ARGV[1] consumer, ARGV[2] min idle ms, ARGV[3] max deaths, ARGV[4] the lost
 * result's reason, ARGV[5..] entry ids. Entries still idle that long are taken over and either added again (deaths
 * + 1) or answered lost. Returns {requeued job ids, lost job ids}.
 */
const RECLAIM = `
local requeued, lost = {}, {}
for i = 5, #ARGV do
  local claimed = redis.call('XCLAIM', KEYS[1], '${GROUP}', ARGV[1], ARGV[2], ARGV[i])
  local entry = claimed[1]
  if entry then
    local fields, kept, deaths, job = entry[2], {}, 1, ''
    for j = 1, #fields, 2 do
      if fields[j] == 'deaths' then
        deaths = (tonumber(fields[j + 1]) or 0) + 1
      else
        if fields[j] == 'job' then job = fields[j + 1] end
        table.insert(kept, fields[j])
        table.insert(kept, fields[j + 1])
      end
    end
    redis.call('XACK', KEYS[1], '${GROUP}', ARGV[i])
    redis.call('XDEL', KEYS[1], ARGV[i])
    if deaths > tonumber(ARGV[3]) then
      redis.call('XADD', KEYS[2], '*', 'r', cjson.encode({ { jobId = job, worker = ARGV[1], lost = ARGV[4] } }))
      table.insert(lost, job)
    else
      table.insert(kept, 'deaths')
      table.insert(kept, tostring(deaths))
      redis.call('XADD', KEYS[1], '*', unpack(kept))
      table.insert(requeued, job)
    end
  end
end
return { requeued, lost }`;

export interface Reclaimed {
  requeued: string[];
  lost: string[];
}

/** Entries of other consumers idle for `idleMs` or more: moved back to the stream, or answered lost. */
export async function reclaimStalled(
  client: Redis,
  keys: { jobs: string; results: string },
  consumer: string,
  idleMs: number,
  mine: ReadonlySet<string>,
): Promise<Reclaimed> {
  const pending = await client.call('XPENDING', keys.jobs, GROUP, 'IDLE', idleMs, '-', '+', 100);
  const stale: string[] = [];
  if (Array.isArray(pending))
    for (const item of pending as unknown[]) {
      if (!Array.isArray(item) || typeof item[0] !== 'string') continue;
      if (!mine.has(item[0])) stale.push(item[0]);
    }
  if (stale.length === 0) return { requeued: [], lost: [] };
  const reason = `its worker stopped ${MAX_DEATHS + 1} times while running it (killed, or its host lost)`;
  const reply = await client.eval(RECLAIM, 2, keys.jobs, keys.results, consumer, idleMs, MAX_DEATHS, reason, ...stale);
  const [requeued, lost] = Array.isArray(reply) ? (reply as unknown[]) : [];
  const ids = (list: unknown): string[] => (Array.isArray(list) ? list.map((value) => String(value)) : []);
  return { requeued: ids(requeued), lost: ids(lost) };
}
