/** Test assertions over an `AgentCheckReport`, shared by the agent-check tests. */
import assert from 'node:assert/strict';
import type { AgentCheckReport } from '../../src/check/agent-check.js';
import type { CheckStatus } from '../../src/check/checks.js';

export function statusOf(report: AgentCheckReport, name: string): { status: CheckStatus; detail: string } {
  const found = report.checks.find((c) => c.name === name);
  assert.ok(found, `no check named ${name}`);
  return found;
}

export function assertCheck(report: AgentCheckReport, name: string, status: CheckStatus, detail?: RegExp): void {
  const found = statusOf(report, name);
  assert.equal(found.status, status, `${name}: ${found.detail}`);
  if (detail) assert.match(found.detail, detail);
}
