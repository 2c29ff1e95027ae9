/**
 * `gym agent check`: drive a user's service through short conversations modelled on the counter tasks, running
 * the tools it asks for on a local counter simulation exactly as the remote agent would, and judge every answer
 * against the contract. The result is one verdict per named check, so a user learns what to fix before a big run.
 * With `rows` (an environment's dataset rows, `--rows FILE`), those rows are the probes instead.
 *
 * This module is the entry: it settles the options and assembles the report; `conversation-mode.ts` and
 * `rows-mode.ts` do the probing.
 */
import type { ServiceAuth } from '../http/service-auth.js';
import type { CheckResult, CheckStatus } from './checks.js';
import { checkWithConversations } from './conversation-mode.js';
import { latencySummary } from './latency.js';
import type { RowProbe } from './row-probes.js';
import { checkWithRows } from './rows-mode.js';
import { openSession } from './session.js';

export interface AgentCheckOptions {
  /** Bound on each call. Default 60 s. */
  timeoutMs?: number;
  /** Calls per conversation before it counts as never finishing. Default 8. */
  maxSteps?: number;
  /** A call slower than this is a warning. Default 30 s. */
  slowCallMs?: number;
  /** The credential headers and CA the remote agent would use (`--api-key-env`, `--ca-file`). */
  auth?: ServiceAuth;
  /** Probe with these dataset rows instead of the counter conversations (adds the `row-probes` check). */
  rows?: RowProbe[];
  /** Judge answers as the remote agent with `fill_echo_fields: true` would (`--fill-echo-fields`). Default false. */
  fillEchoFields?: boolean;
}

export interface AgentCheckReport {
  url: string;
  endpoint: string;
  ok: boolean;
  checks: CheckResult[];
  summary: Record<CheckStatus, number>;
  latency: { calls: number; p50_ms: number | null; max_ms: number | null };
}

const SUMMARY_KEYS: CheckStatus[] = ['pass', 'warn', 'fail', 'skip'];

export async function runAgentCheck(baseUrl: string, options: AgentCheckOptions = {}): Promise<AgentCheckReport> {
  const limits = {
    timeoutMs: options.timeoutMs ?? 60_000,
    maxSteps: options.maxSteps ?? 8,
    slowCallMs: options.slowCallMs ?? 30_000,
    fillEchoFields: options.fillEchoFields ?? false,
  };
  const session = openSession(baseUrl, limits, options.auth ?? { headers: {}, secrets: [] });
  const checks = options.rows ? await checkWithRows(session, options.rows) : await checkWithConversations(session);
  const summary = Object.fromEntries(SUMMARY_KEYS.map((key) => [key, 0])) as Record<CheckStatus, number>;
  for (const check of checks) summary[check.status] += 1;
  return {
    url: baseUrl,
    endpoint: session.client.endpoint,
    ok: summary.fail === 0,
    checks,
    summary,
    latency: latencySummary(session.client.latencies),
  };
}
