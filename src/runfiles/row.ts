/**
 * One row of a run: a dataset line, a `/run` result, a line of `<stem>.jsonl` or its failures sidecar. Rows are
 * JSON objects whose fields belong to the dataset, the environment and the agent, so the type says no more than
 * that; readers check the fields they use. It lives at the bottom of the layers (it imports nothing) so that
 * metrics, the collector, the viewer, the test doubles and the remote agent all name the same type.
 */
export type Row = Record<string, unknown>;
