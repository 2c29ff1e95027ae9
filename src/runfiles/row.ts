/**
 * One row of a run: a dataset line, a `/run` result, a line of `<stem>.jsonl` or its failures sidecar. Rows are
 * JSON objects whose fields belong to the dataset, the environment and the agent, so the type says no more than
 * that; readers check the fields they use. It lives at the bottom of the layers (it imports nothing) so that
 * metrics, the collector, the viewer, the test doubles and the remote agent all name the same type.
 */
export type Row = Record<string, unknown>;

/** The row's `_ng_failure_class` (a failure row's class: config, retryable, terminal kinds), if it has one. */
export function failureClassOf(row: Row): string | undefined {
  return typeof row._ng_failure_class === 'string' ? row._ng_failure_class : undefined;
}

/**
 * What spans, json log events and metrics call a finished rollout: its failure class, else `completed` when it went
 * to the rollouts file and `not_persisted` when it went anywhere else (`route` as src/collect/routing.ts names it).
 */
export function outcomeClassOf(row: Row, route: string): string {
  return failureClassOf(row) ?? (route === 'rollouts' ? 'completed' : 'not_persisted');
}
