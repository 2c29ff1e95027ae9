/**
 * The end-of-collection metrics (docs/design.md, "End-of-run aggregation"): persisted successes grouped by agent, heavy
 * fields stripped, sent in (task, rollout) order to each agent's `/aggregate_metrics`, and written as
 * `<stem>_aggregate_metrics.json` — one entry per agent, with the run's outcome counts (D1) beside the metrics.
 */
import { isPlainObject } from '../config/types.js';
import { MAX_ENVELOPED_JSON_DEPTH } from '../bounded-json/index.js';
import { objectMembers, OPEN_BRACE, type Member } from '../bounded-json/member.js';
import { parseLine, writeFileAtomic, type ParsedLine } from '../runfiles/jsonl.js';
import { callInternal } from '../http/client.js';
import { compareKeys, computeAggregateMetrics, type AggregateMetrics } from '../metrics/metrics.js';
import type { AgentDirectory } from './agents.js';
import type { Row } from '../runfiles/row.js';
import { NG } from '../runfiles/ng-keys.js';
import { countsJson, type OutcomeLedger } from '../runfiles/outcomes.js';

const HEAVY_FIELDS = [
  'response',
  'responses_create_params',
  'ng_agent_observations',
  'ng_model_call_capture',
  'ng_trajectory',
];
const HEAVY = new Set(HEAVY_FIELDS);
const AGGREGATE_TIMEOUT_MS = 600_000;

export const DISABLED_MESSAGE =
  'Skipping aggregate-metrics computation because disable_aggregation=True. Run `gym eval aggregate` after all shards finish to compute the global metrics.';

/** A result without its heavy payloads; `response.usage` is kept when present. */
export function stripForAggregation(result: Row): Row {
  const out: Row = { ...result };
  for (const key of HEAVY_FIELDS) delete out[key];
  const usage = isPlainObject(result.response) ? result.response.usage : undefined;
  if (usage) out.response = { usage };
  return out;
}

/**
 * A rollouts-file line as the aggregation takes it: `stripForAggregation` of its parse, or the parse's failure.
 * When the scan is sure of the line's members (`objectMembers`: valid, an object, no name written with escapes),
 * only the light members and `response.usage` are parsed, so a trajectory of megabytes is never built to be
 * dropped; any other line goes through `parseLine` as before.
 */
export function strippedRowOf(line: Buffer): ParsedLine {
  const members = objectMembers(line, MAX_ENVELOPED_JSON_DEPTH);
  const light = members && lightMembers(line, members);
  if (light) return { ok: true, value: light };
  const parsed = parseLine(line);
  return parsed.ok && isPlainObject(parsed.value) ? { ok: true, value: stripForAggregation(parsed.value) } : parsed;
}

function lightMembers(line: Buffer, members: Member[]): Row | undefined {
  let response: Member | undefined;
  let text = '{';
  for (const member of members) {
    if (member.name === undefined) return undefined;
    if (member.name === 'response') response = member;
    if (HEAVY.has(member.name)) continue;
    text += `${text === '{' ? '' : ','}${line.toString('utf8', member.start, member.end)}`;
  }
  // Valid by construction: members of a valid object, in their order (repeated names resolve as in the whole).
  const row = JSON.parse(`${text}}`) as Row;
  if (response && line[response.valueStart] === OPEN_BRACE) {
    const inner = objectMembers(line, MAX_ENVELOPED_JSON_DEPTH - 1, response.valueStart, response.end);
    if (!inner) return undefined;
    let usage: Member | undefined;
    for (const member of inner) {
      if (member.name === undefined) return undefined;
      if (member.name === 'usage') usage = member;
    }
    const value: unknown = usage && JSON.parse(line.toString('utf8', usage.valueStart, usage.end));
    if (value) row.response = { usage: value };
  }
  return row;
}

interface Keyed {
  task: number;
  rollout: number;
  row: Row;
}

/** Stripped successes per agent, kept sorted by rollout key when read out. */
export class AggregationInput {
  private readonly byAgent = new Map<string, Keyed[]>();

  /** A row already stripped (`strippedRowOf`, `stripForAggregation`). */
  add(agent: string, row: Row): void {
    const task = row[NG.taskIndex];
    const rollout = row[NG.rolloutIndex];
    const entry = {
      task: typeof task === 'number' ? task : 0,
      rollout: typeof rollout === 'number' ? rollout : 0,
      row,
    };
    let list = this.byAgent.get(agent);
    if (!list) this.byAgent.set(agent, (list = []));
    list.push(entry);
  }

  agents(): string[] {
    return [...this.byAgent.keys()].sort();
  }

  rows(agent: string): Row[] {
    return (this.byAgent.get(agent) ?? []).sort(compareKeys).map((entry) => entry.row);
  }
}

/** Computes one agent's metrics: its `/aggregate_metrics` endpoint, or locally. */
export type MetricsSource = (agent: string, verifyResponses: Row[]) => Promise<AggregateMetrics>;

export function agentMetricsSource(agents: AgentDirectory): MetricsSource {
  return async (agent, verifyResponses) => {
    const url = `${agents.urlOf(agent)}/aggregate_metrics`;
    const res = await callInternal(url, {
      json: { verify_responses: verifyResponses },
      timeoutMs: AGGREGATE_TIMEOUT_MS,
      attempts: 3,
    });
    if (res.status < 200 || res.status >= 300) {
      throw new Error(
        `/aggregate_metrics on agent '${agent}' answered HTTP ${res.status}: ${res.text().slice(0, 500)}`,
      );
    }
    const body = res.json();
    if (!isPlainObject(body)) throw new Error(`/aggregate_metrics on agent '${agent}' did not answer a JSON object`);
    return {
      group_level_metrics: Array.isArray(body.group_level_metrics) ? (body.group_level_metrics as Row[]) : [],
      agent_metrics: isPlainObject(body.agent_metrics) ? body.agent_metrics : {},
      key_metrics: isPlainObject(body.key_metrics) ? body.key_metrics : {},
    };
  };
}

export const localMetricsSource: MetricsSource = (_agent, verifyResponses) =>
  Promise.resolve(computeAggregateMetrics(verifyResponses));

export interface AggregateEntry {
  agent_ref: { name: string };
  agent_metrics: Record<string, unknown>;
  key_metrics: Record<string, unknown>;
  group_level_metrics: Row[];
  rollout_counts?: Record<string, number | null>;
}

export interface AggregateOutcome {
  entries: AggregateEntry[];
  /** One line per agent whose metrics could not be computed. */
  errors: string[];
}

/**
 * Metrics for every agent of the ledger (an agent without successes gets empty metrics, no call), computed
 * concurrently; key metrics are printed as each agent answers. Entries are in agent-name order.
 */
export async function aggregateAgents(
  input: AggregationInput,
  ledger: OutcomeLedger | undefined,
  source: (agent: string) => MetricsSource,
  print: (text: string) => void,
): Promise<AggregateOutcome> {
  const agents = [...new Set([...input.agents(), ...(ledger?.agents() ?? [])])].sort();
  const errors: string[] = [];
  const entries = await Promise.all(
    agents.map(async (agent): Promise<AggregateEntry | undefined> => {
      const rows = input.rows(agent);
      let metrics: AggregateMetrics = { group_level_metrics: [], agent_metrics: {}, key_metrics: {} };
      if (rows.length > 0) {
        try {
          metrics = await source(agent)(agent, rows);
        } catch (err) {
          errors.push(err instanceof Error ? err.message : String(err));
          return undefined;
        }
        print(`\nKey metrics for ${agent}:\n${floatJson(metrics.key_metrics)}`);
      }
      return {
        agent_ref: { name: agent },
        agent_metrics: metrics.agent_metrics,
        key_metrics: metrics.key_metrics,
        group_level_metrics: metrics.group_level_metrics,
        ...(ledger ? { rollout_counts: countsJson(ledger.counts(agent)) } : {}),
      };
    }),
  );
  return { entries: entries.filter((entry): entry is AggregateEntry => entry !== undefined), errors };
}

export function writeAggregateFile(path: string, entries: readonly AggregateEntry[]): void {
  writeFileAtomic(path, `${JSON.stringify(entries, null, 2)}\n`);
}

/**
 * Key metrics are means, printed as Python prints floats (`"mean/reward": 1.0`, not `1`) so console output reads the
 * same as the reference's; the files keep plain JSON numbers.
 */
export function floatJson(metrics: unknown): string {
  return JSON.stringify(metrics, null, 4).replace(/^(\s*"[^"]*": -?\d+)(,?)$/gm, '$1.0$2');
}
