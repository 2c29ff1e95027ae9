/**
 * `gym agent check --fill-echo-fields` from the command line (issue #24): the flag becomes `+fill_echo_fields=true`
 * and turns a local model server's FAILs into a pass; the setting takes only true or false.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { localCounterService } from '../../../test/support/local-model-server.js';
import { runGym, tempDir } from '../../../test/support/cli.js';
import { UsageError } from '../../errors.js';
import { startScriptedService, type ScriptedService } from '../../testing/index.js';
import { agentCheck } from './agent-check.js';

describe('gym agent check --fill-echo-fields', () => {
  let service: ScriptedService;
  before(async () => {
    service = await startScriptedService(localCounterService);
  });
  after(() => service.close());

  test('without the flag: exit 1, the FAIL line names fill_echo_fields and --fill-echo-fields', async () => {
    const result = await runGym(['agent', 'check', service.url], { cwd: tempDir() });
    assert.equal(result.code, 1, result.stderr);
    const line = result.stdout.split('\n').find((text) => text.startsWith('FAIL  responses-object'));
    assert.ok(line, result.stdout);
    assert.match(line, /fill_echo_fields: true in the remote_agent config/);
    assert.match(line, /--fill-echo-fields/);
  });

  test('with the flag: exit 0, usage a warning', async () => {
    const result = await runGym(['agent', 'check', service.url, '--fill-echo-fields'], { cwd: tempDir() });
    assert.equal(result.code, 0, result.stdout + result.stderr);
    assert.match(
      result.stdout,
      /^WARN {2}usage +conversation call 1: usage\.output_tokens_details missing, filled with zeros/m,
    );
    assert.match(result.stdout, /^Ready for a run; the warnings are worth a look\.$/m);
  });

  test('+fill_echo_fields takes true or false only', async () => {
    const cmd = {
      command: 'agent check',
      noServe: false,
      positionals: [service.url],
      overrides: ['+fill_echo_fields=maybe'],
      help: false,
    };
    await assert.rejects(
      agentCheck(cmd, { stdout: { write: () => true } }),
      (err: unknown) =>
        err instanceof UsageError && /\+fill_echo_fields must be true or false, got 'maybe'/.test(err.message),
    );
  });
});
