import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { tempDir } from '../../test/support/cli.js';
import { startCounterPlannerService, type StartedService } from '../../examples/counter-planner/index.js';
import { defineEnvironment, z } from '../environment/index.js';
import { isGymError } from '../errors.js';
import {
  finalAnswer,
  functionCall,
  reply,
  startScriptedService,
  toolAsk,
  type ServiceHandler,
} from '../testing/index.js';
import { runAgentCheck, type AgentCheckReport } from './agent-check.js';
import { CHECKS, ROW_PROBES_CHECK } from './checks.js';
import { assertCheck } from '../../test/support/report-assertions.js';
import { loadRowProbes } from './row-probes.js';

/** The bound on each call of a check: generous, so a busy machine is not a failing service. */
const CALL_TIMEOUT_MS = 60_000;

/**
 * `gym agent check --rows`: an environment's rows as probes. A service that fits the rows passes; one that asks
 * for an undeclared tool, sends arguments its tool's schema refuses, or does not answer fails under the check
 * that names the mistake, with the row's file:line. A broken rows file stops with its file:line.
 */

const COUNTER_ROWS = fileURLToPath(
  new URL('../../../resources_servers/example_session_state_mgmt/data/example.jsonl', import.meta.url),
);

/** A rows file of one environment's tools (from the kit's JSON schemas) and the given prompts. */
function writeRows(rows: unknown[]): string {
  const dir = tempDir('gym-rows-');
  const file = path.join(dir, 'example.jsonl');
  writeFileSync(file, rows.map((row) => JSON.stringify(row)).join('\n') + '\n');
  return file;
}

async function checkWith(handler: ServiceHandler, rowsFile: string): Promise<AgentCheckReport> {
  const service = await startScriptedService(handler);
  try {
    return await runAgentCheck(service.url, { timeoutMs: CALL_TIMEOUT_MS, rows: await loadRowProbes(rowsFile) });
  } finally {
    await service.close();
  }
}

const notebook = defineEnvironment({
  name: 'notebook',
  createState: () => ({ notes: [] as string[] }),
  tools: (tool) => ({
    add_note: tool({
      description: 'Append a note.',
      input: z.object({ text: z.string().min(1) }),
      run: ({ text }, { state }) => state.notes.push(text),
    }),
  }),
  verify: () => ({ reward: 0 }),
});
const notebookRows = () =>
  writeRows([
    {
      responses_create_params: { input: [{ role: 'user', content: 'note "milk"' }], tools: notebook.toolSchemas },
      expected: ['milk'],
    },
    {
      responses_create_params: { input: [{ role: 'user', content: 'note "eggs"' }], tools: notebook.toolSchemas },
      expected: ['eggs'],
    },
  ]);

describe('gym agent check --rows', () => {
  let planner: StartedService;
  before(async () => {
    planner = await startCounterPlannerService({ port: 0 });
  });
  after(() => planner.close());

  test("the counter planner passes on the counter's example rows: the 15 checks plus row-probes", async () => {
    const report = await runAgentCheck(planner.url, {
      timeoutMs: CALL_TIMEOUT_MS,
      rows: await loadRowProbes(COUNTER_ROWS),
    });
    assert.deepEqual(
      report.checks.map((c) => c.name),
      [...CHECKS.map((c) => c.name), ROW_PROBES_CHECK.name],
    );
    assert.equal(report.ok, true, JSON.stringify(report.checks, null, 1));
    assertCheck(
      report,
      'row-probes',
      'pass',
      /^5 rows: 5 asked for declared tools with matching arguments, 0 answered$/,
    );
    assertCheck(report, 'string-input', 'pass', /example\.jsonl:1 with its prompt as a plain string/);
    assertCheck(report, 'conversation', 'skip', /not run with --rows/);
    assertCheck(report, 'tool-subset', 'skip', /not run with --rows/);
    assertCheck(report, 'cookies', 'pass');
    assert.equal(report.latency.calls, 7, 'five rows, one string-input variant, one cookie-less repeat');
  });

  test('arguments that the tool schema refuses fail `arguments` and `row-probes`, naming the row and the field', async () => {
    const rows = notebookRows();
    const report = await checkWith(() => toolAsk(functionCall('add_note', { text: '' })), rows);
    assert.equal(report.ok, false);
    assertCheck(
      report,
      'arguments',
      'fail',
      new RegExp(
        `^${rows.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:1: add_note arguments do not match its parameters: text: `,
      ),
    );
    assertCheck(
      report,
      'row-probes',
      'fail',
      /^2 of 2 rows: .*example\.jsonl:1: add_note arguments do not match its parameters \(\+1 more\)$/,
    );
  });

  test('a service that answers every row passes row-probes as "answered"', async () => {
    const report = await checkWith(() => finalAnswer('done'), notebookRows());
    assertCheck(
      report,
      'row-probes',
      'pass',
      /^2 rows: 0 asked for declared tools with matching arguments, 2 answered$/,
    );
    assert.equal(report.ok, true);
  });

  test('an ask for a tool the row does not declare fails declared-tools', async () => {
    const report = await checkWith(() => toolAsk(functionCall('erase_notes', {})), notebookRows());
    assertCheck(report, 'declared-tools', 'fail', /example\.jsonl:1: .*erase_notes/);
  });

  test('an HTTP 500 on a row fails http-reply and row-probes', async () => {
    const report = await checkWith(() => reply.status(500, 'kaboom'), notebookRows());
    assertCheck(report, 'http-reply', 'fail', /example\.jsonl:1: HTTP 500: kaboom/);
    assertCheck(report, 'row-probes', 'fail', /no usable answer \(see http-reply\)/);
  });
});

describe('loading --rows', () => {
  async function loadError(text: string): Promise<string> {
    const dir = tempDir('gym-rows-');
    const file = path.join(dir, 'rows.jsonl');
    writeFileSync(file, text);
    try {
      await loadRowProbes(file);
    } catch (err) {
      assert.ok(isGymError(err) && err.errorClass === 'config', `expected a config error, got ${String(err)}`);
      return err.message.replace(file, 'FILE');
    }
    assert.fail('the rows loaded');
  }

  test('a malformed line stops with file:line', async () => {
    assert.match(
      await loadError('{"responses_create_params": {"input": "x"}}\n{oops\n'),
      /^FILE:2: malformed JSONL line: /,
    );
  });

  test('an invalid responses_create_params names the row and the field', async () => {
    assert.match(
      await loadError('{"responses_create_params": {"input": 3}}\n'),
      /^FILE:1: the row has an invalid responses_create_params: .*input/,
    );
    assert.match(await loadError('{"prompt": "x"}\n'), /^FILE:1: the row has no responses_create_params/);
  });

  test('a directory is a config error, not a crash', async () => {
    const dir = tempDir('gym-rows-');
    await assert.rejects(
      loadRowProbes(dir),
      (err) => isGymError(err) && err.errorClass === 'config' && /a directory, not a file/.test(err.message),
    );
  });

  test('takes at most max rows, the first ones', async () => {
    const rows = writeRows([1, 2, 3].map((n) => ({ responses_create_params: { input: `task ${n}` } })));
    const probes = await loadRowProbes(rows, 2);
    assert.deepEqual(
      probes.map((p) => p.params.input),
      ['task 1', 'task 2'],
    );
  });
});
