/**
 * The agent-reachability gate of a collection (decision D20). A `/run` whose connection is refused never reached the
 * agent, so it must not cost the row an attempt: the executor reports the agent unreachable here and waits. While an
 * agent is down, every job for it waits at this gate instead of being sent (the queue's slots fill, so dispatch
 * pauses), one probe loop per outage polls the agent (`GET /`, any HTTP answer counts) and the waiting jobs are
 * re-sent the moment it answers. An agent that stays away longer than `agent_unreachable_wait_secs` (default 60 s)
 * is given up: its waiting jobs come back *undelivered* — recorded nowhere, so the rows stay unattempted for a
 * resume — and the collector stops dispatching, finishes what is in flight and exits non-zero. A connection lost
 * mid-call also closes the gate until a probe answers (the call itself was delivered and is a failure row), so the
 * next job is not sent down a pooled socket to a process that just died.
 */
import { answers } from '../http/readiness.js';
import { delay } from '../http/client.js';
import type { Row } from '../runfiles/row.js';

export interface ReachabilityOptions {
  /** How long an agent may stay unreachable before the collection gives up on it. */
  waitMs: number;
  urlOf(agent: string): string | undefined;
  /** Where the "waiting for agent X" and "reachable again" lines go. */
  warn(line: string): void;
  /** Stops every wait (the collection was interrupted). */
  signal?: AbortSignal;
  probeIntervalMs?: number;
}

interface Outage {
  since: number;
  /** Resolves true when the agent answers again, false when the wait is over. */
  back: Promise<boolean>;
}

export class AgentReachability {
  private readonly outages = new Map<string, Outage>();
  private readonly givenUp = new Map<string, string>();

  constructor(private readonly options: ReachabilityOptions) {}

  /** Resolves true when a job for `agent` may be sent now, false when the agent was given up. */
  async ready(agent: string): Promise<boolean> {
    if (this.givenUp.has(agent) || this.options.signal?.aborted) return false;
    const outage = this.outages.get(agent);
    return outage ? outage.back : true;
  }

  /** A request to `agent` was refused before delivery: start (or join) its outage. */
  reportUnreachable(agent: string, reason: string): void {
    if (this.givenUp.has(agent) || this.outages.has(agent)) return;
    const url = this.options.urlOf(agent) ?? '(unknown url)';
    const waitSecs = this.options.waitMs / 1000;
    this.options.warn(
      `Agent '${agent}' at ${url} cannot be reached (${reason}); waiting for agent '${agent}' up to ${waitSecs}s ` +
        '(agent_unreachable_wait_secs). Undelivered rollouts are re-sent when it is back; they spend no attempt.',
    );
    const since = Date.now();
    const outage: Outage = { since, back: this.probe(agent, url, since) };
    this.outages.set(agent, outage);
  }

  /** Agents given up on, with why (for the final message). */
  abandoned(): ReadonlyMap<string, string> {
    return this.givenUp;
  }

  private async probe(agent: string, url: string, since: number): Promise<boolean> {
    const { waitMs, probeIntervalMs = 200, signal } = this.options;
    const deadline = since + waitMs;
    let back = false;
    while (!signal?.aborted && Date.now() < deadline) {
      if (await answers(url, Math.max(1, Math.min(1_000, deadline - Date.now())))) {
        back = true;
        break;
      }
      await delay(Math.min(probeIntervalMs, Math.max(0, deadline - Date.now())), signal);
    }
    this.outages.delete(agent);
    const seconds = ((Date.now() - since) / 1000).toFixed(1);
    if (back) {
      this.options.warn(
        `Agent '${agent}' is reachable again after ${seconds}s; re-sending the rollouts that waited for it.`,
      );
    } else if (!signal?.aborted) {
      const why = `agent '${agent}' at ${url} could not be reached for ${seconds}s (agent_unreachable_wait_secs=${waitMs / 1000})`;
      this.givenUp.set(agent, why);
      this.options.warn(`Giving up on ${why}: no more rollouts are sent; the ones in flight are finished and written.`);
    }
    return back;
  }
}

/** Results of jobs that were never delivered (their agent was given up): recorded nowhere. */
const undelivered = new WeakSet<Row>();

export function undeliveredResult(): Row {
  const row: Row = {};
  undelivered.add(row);
  return row;
}

export function isUndelivered(result: Row): boolean {
  return undelivered.has(result);
}
