/**
 * `gym agent check` against a local model server's answers (issue #24: no request echoes, usage cut short). Without
 * the opt-in the FAIL lines name the key that would accept the service; with it (`fillEchoFields`, the flag
 * `--fill-echo-fields`) the check judges the answers as the remote agent with `fill_echo_fields: true` would.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { localCounterService, localServerShape } from '../../test/support/local-model-server.js';
import { counterTaskReply } from '../testing/counter-brain.js';
import { startScriptedService, type ServiceHandler } from '../testing/index.js';
import { runAgentCheck, type AgentCheckReport } from './agent-check.js';
import { formatReport } from './format.js';
import { assertCheck, statusOf } from '../../test/support/report-assertions.js';

async function check(handler: ServiceHandler, fillEchoFields?: boolean): Promise<AgentCheckReport> {
  const service = await startScriptedService(handler);
  try {
    return await runAgentCheck(service.url, {
      timeoutMs: 60_000, // the bound on each call: generous, so a busy machine is not a failing service
      ...(fillEchoFields === undefined ? {} : { fillEchoFields }),
    });
  } finally {
    await service.close();
  }
}

describe('gym agent check and fill_echo_fields', () => {
  test('without the opt-in: responses-object and usage FAIL, each naming the key and the flag that accept it', async () => {
    const report = await check(localCounterService);
    assert.equal(report.ok, false);
    assertCheck(
      report,
      'responses-object',
      'fail',
      /^conversation call 1: invalid Responses API object: parallel_tool_calls: required; tool_choice: required; tools: required \(only fields echoing the request are missing: fill_echo_fields: true in the remote_agent config accepts this\)( \(\+\d+ more\))?$/,
    );
    assertCheck(
      report,
      'usage',
      'fail',
      /usage\.output_tokens_details: required \(only detail objects are missing: fill_echo_fields: true in the remote_agent config fills them with zeros\)( \(\+\d+ more\))?$/,
    );
    for (const name of ['responses-object', 'usage']) {
      const fix = report.checks.find((c) => c.name === name)!.fix!;
      assert.match(fix, /set fill_echo_fields: true in the remote_agent config/);
      assert.match(fix, /gym agent check --fill-echo-fields/);
    }
    const failLine = formatReport(report)
      .split('\n')
      .find((line) => line.startsWith('FAIL  responses-object'))!;
    assert.match(failLine, /fill_echo_fields: true in the remote_agent config/);
    assert.match(failLine, /--fill-echo-fields/);
  });

  test('with the opt-in: the conversations pass; usage warns that its details are zeros and rows are marked', async () => {
    const report = await check(localCounterService, true);
    assert.equal(report.ok, true, JSON.stringify(report.checks.filter((c) => c.status === 'fail')));
    assertCheck(
      report,
      'responses-object',
      'pass',
      /^\d+ responses are valid Responses API objects, \d+ of them once completed from the request \(--fill-echo-fields/,
    );
    assertCheck(
      report,
      'usage',
      'warn',
      /usage\.output_tokens_details missing, filled with zeros .*_ng_usage_filled: true/,
    );
    for (const name of ['conversation', 'string-input', 'tool-subset'])
      assert.equal(statusOf(report, name).status, 'pass', name);
  });

  test('a fault besides the missing echoes gets no hint without the opt-in, and still FAILs with it', async () => {
    const noId: ServiceHandler = (call) => {
      const { id: _id, ...rest } = localServerShape(counterTaskReply(call));
      return rest;
    };
    const strict = await check(noId);
    const detail = statusOf(strict, 'responses-object').detail;
    assert.match(detail, /id: required/);
    assert.doesNotMatch(detail, /fill_echo_fields/);
    const filled = await check(noId, true);
    assertCheck(
      filled,
      'responses-object',
      'fail',
      /^conversation call 1: invalid Responses API object: id: required( \(\+\d+ more\))?$/,
    );
    assert.equal(filled.ok, false);
  });

  test('a correct service is judged the same with the opt-in: nothing is filled, nothing is said about it', async () => {
    const report = await check(counterTaskReply, true);
    assert.deepEqual(
      report.checks.filter((c) => c.status !== 'pass'),
      [],
    );
    assert.doesNotMatch(statusOf(report, 'responses-object').detail, /completed/);
  });
});
