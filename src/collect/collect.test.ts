/**
 * `gym eval run --no-serve` through the real CLI against a fake head server and scripted `/run` agents:
 * routing, stamps, repeats, input errors, failure containment, overwrite protection.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import {
  fakeReply,
  startFakeAgent,
  startFakeHead,
  type FakeAgent,
  type FakeHead,
  type FakeRunHandler,
} from '../testing/fake-agent.js';
import type { Row } from '../runfiles/row.js';
import type { AggregateEntry } from './aggregate.js';
import {
  keysOf,
  lineCount,
  readJsonl,
  runGym,
  spawnGym,
  tempDir,
  writeJsonl,
  type GymResult,
} from '../../test/support/cli.js';
import { eventually } from '../../test/support/wait.js';

interface Rig {
  dir: string;
  agents: Record<string, FakeAgent>;
  head: FakeHead;
  gym(args: string[], env?: Record<string, string | undefined>): Promise<GymResult>;
  file(name: string): string;
}

const open: Array<{ close(): Promise<void> }> = [];
after(async () => {
  for (const server of open) await server.close();
});

async function rig(
  handlers: Record<string, FakeRunHandler>,
  deadAgents: Array<{ name: string; port: number }> = [],
): Promise<Rig> {
  const agents: Record<string, FakeAgent> = {};
  for (const [name, handler] of Object.entries(handlers)) {
    agents[name] = await startFakeAgent(name, handler);
    open.push(agents[name]);
  }
  const head = await startFakeHead([
    ...Object.values(agents),
    ...deadAgents.map((dead) => ({ ...dead, host: '127.0.0.1' })),
  ]);
  open.push(head);
  const dir = tempDir();
  return {
    dir,
    agents,
    head,
    file: (name) => path.join(dir, name),
    gym: (args, env) =>
      runGym(['eval', 'run', '--no-serve', ...args, `++head_server.port=${head.port}`], { cwd: dir, env }),
  };
}

const row = (x: number, extra: Row = {}): Row => ({ responses_create_params: { input: `row ${x}` }, x, ...extra });
const ok: FakeRunHandler = (r) => fakeReply.success(r, 1);

describe('routing', () => {
  test('successes go to <stem>.jsonl, failure rows to the sidecar, no-persist rows nowhere; each row is stamped', async () => {
    const r = await rig({
      my_agent: (input) => {
        if (input.kind === 'fail') return fakeReply.failure(input, 'HTTP 500: service down');
        if (input.kind === 'kill') return fakeReply.noPersist(input);
        return fakeReply.success(input, input.kind === 'ok' ? 1 : 0);
      },
    });
    writeJsonl(r.file('in.jsonl'), [
      row(0, { kind: 'ok' }),
      row(1, { kind: 'fail' }),
      row(2, { kind: 'kill' }),
      row(3, { kind: 'zero' }),
    ]);
    const res = await r.gym(['-a', 'my_agent', '-i', 'in.jsonl', '-o', 'out/rollouts.jsonl']);
    assert.equal(res.code, 0, res.stderr);

    const successes = readJsonl(r.file('out/rollouts.jsonl'));
    assert.deepEqual(successes.map((s) => s.x).sort(), [0, 3]);
    for (const s of successes) {
      assert.deepEqual(s.agent_ref, { name: 'my_agent' });
      assert.equal(typeof s._ng_task_index, 'number');
      assert.equal(s._ng_rollout_index, 0);
      // The stamps come after the agent's own keys.
      assert.deepEqual(Object.keys(s).slice(-3), ['_ng_task_index', '_ng_rollout_index', 'agent_ref']);
    }
    const failures = readJsonl(r.file('out/rollouts_failures.jsonl'));
    assert.equal(failures.length, 1);
    assert.equal(failures[0]!._ng_failure_class, 'remote_agent_error');
    assert.match(String(failures[0]!.error), /HTTP 500/);
    assert.equal(failures[0]!._ng_task_index, 1);
    assert.deepEqual(failures[0]!.agent_ref, { name: 'my_agent' });

    // Aggregation saw only the persisted successes, stripped of heavy fields.
    const calls = r.agents.my_agent!.aggregateCalls;
    assert.equal(calls.length, 1);
    assert.deepEqual(
      calls[0]!.map((vr) => vr.x),
      [0, 3],
    );
    assert.equal(calls[0]![0]!.responses_create_params, undefined);
    assert.deepEqual(Object.keys(calls[0]![0]!.response as Row), ['usage']);

    const metrics = JSON.parse(readFileSync(r.file('out/rollouts_aggregate_metrics.json'), 'utf8')) as AggregateEntry[];
    assert.equal(metrics[0]!.agent_metrics['mean/reward'], 0.5);
    assert.deepEqual(metrics[0]!.rollout_counts, {
      tasks: 4,
      expected_rollouts: 4,
      completed_rollouts: 2,
      failed_retryable_rollouts: 1,
      failed_terminal_rollouts: 0,
      missing_rollouts: 1,
      mean_reward_completed: 0.5,
      mean_reward_failures_as_zero: 1 / 3,
    });
    assert.match(
      res.stdout,
      /4 tasks, 4 rollouts expected: 2 completed, 1 failed \(1 retryable, 0 terminal\), 1 missing/,
    );
    assert.match(
      res.stdout,
      /Mean reward 0\.5000 over 2 completed; 0\.3333 over 3 attempted with failures counted as 0/,
    );
    // The run's health, checked on the files just written: the failed and the never-persisted rollout.
    assert.match(
      res.stdout,
      /\nRollout health: 4 checked, 2 healthy, 2 unhealthy \(rollout_missing 1, rollout_failed 1\)\n/,
    );
    const health = JSON.parse(readFileSync(r.file('out/rollouts_quality_summary.json'), 'utf8')) as Row;
    assert.deepEqual([health.checked, health.healthy, health.unhealthy], [4, 2, 2]);
    for (const name of [
      'rollouts_materialized_inputs.jsonl',
      'rollouts.jsonl',
      'rollouts_failures.jsonl',
      'rollouts_aggregate_metrics.json',
      'rollouts_quality_summary.json',
    ]) {
      assert.ok(res.stdout.includes(path.join('out', name)), `summary names ${name}`);
    }
  });

  test('the sidecar exists (empty) after a run without failures; --disable-aggregation skips the metrics file', async () => {
    const r = await rig({ my_agent: ok });
    writeJsonl(r.file('in.jsonl'), [row(0), row(1)]);
    const res = await r.gym(['-a', 'my_agent', '-i', 'in.jsonl', '-o', 'r.jsonl', '--disable-aggregation']);
    assert.equal(res.code, 0, res.stderr);
    assert.equal(readFileSync(r.file('r_failures.jsonl'), 'utf8'), '');
    assert.equal(existsSync(r.file('r_aggregate_metrics.json')), false);
    assert.match(res.stdout, /Skipping aggregate-metrics computation because disable_aggregation=True/);
    assert.equal(r.agents.my_agent!.aggregateCalls.length, 0);
  });
});

describe('materialized inputs', () => {
  test('identical lines share a task, repeats number rollouts per task, a pre-stamped task index is kept, limit counts lines', async () => {
    const r = await rig({ my_agent: ok });
    const a = { responses_create_params: { input: 'A', reasoning: { effort: 'low' } }, q: 'a' };
    const b = { responses_create_params: { input: 'B' }, q: 'b' };
    const c = { responses_create_params: { input: 'C' }, q: 'c', _ng_task_index: 7, _ng_rollout_index: 99 };
    writeJsonl(r.file('in.jsonl'), [a, b, a, c, { responses_create_params: { input: 'D' } }]);
    const res = await r.gym([
      '-a',
      'my_agent',
      '-i',
      'in.jsonl',
      '-o',
      'r.jsonl',
      '--num-repeats',
      '2',
      '--limit',
      '4',
      '--temperature',
      '0.3',
    ]);
    assert.equal(res.code, 0, res.stderr);
    const rows = readJsonl(r.file('r_materialized_inputs.jsonl'));
    assert.deepEqual(
      rows.map((m) => [m.q, m._ng_task_index, m._ng_rollout_index]),
      [
        ['a', 0, 0],
        ['a', 0, 1],
        ['b', 1, 0],
        ['b', 1, 1],
        ['a', 0, 2],
        ['a', 0, 3],
        ['c', 7, 0],
        ['c', 7, 1],
      ],
    );
    // Shallow merge of the collection-level create-params; agent_ref added after the row's own keys.
    assert.deepEqual(rows[0], {
      responses_create_params: { input: 'A', reasoning: { effort: 'low' }, temperature: 0.3 },
      q: 'a',
      agent_ref: { name: 'my_agent' },
      _ng_task_index: 0,
      _ng_rollout_index: 0,
    });
    assert.equal(r.agents.my_agent!.runs.length, 8);
    assert.deepEqual(keysOf(readJsonl(r.file('r.jsonl'))), ['0:0', '0:1', '0:2', '0:3', '1:0', '1:1', '7:0', '7:1']);
  });

  test('per-agent num_repeats with _default; an agent_ref in the row wins over --agent', async () => {
    const r = await rig({ alpha: ok, beta: ok });
    writeJsonl(r.file('in.jsonl'), [row(0), row(1, { agent_ref: { name: 'beta' } })]);
    const res = await r.gym(['-a', 'alpha', '-i', 'in.jsonl', '-o', 'r.jsonl', '+num_repeats={beta: 3, _default: 1}']);
    assert.equal(res.code, 0, res.stderr);
    assert.equal(r.agents.alpha!.runs.length, 1);
    assert.deepEqual(r.agents.beta!.runs.map((run) => run._ng_rollout_index as number).sort(), [0, 1, 2]);
    const metrics = JSON.parse(readFileSync(r.file('r_aggregate_metrics.json'), 'utf8')) as AggregateEntry[];
    assert.deepEqual(
      metrics.map((m) => m.agent_ref.name),
      ['alpha', 'beta'],
    );
  });
});

describe('input errors stop the run before anything is sent', () => {
  test('a malformed line names file:line and the parser reason', async () => {
    const r = await rig({ my_agent: ok });
    writeFileSync(
      r.file('in.jsonl'),
      `${JSON.stringify(row(0))}\n${JSON.stringify(row(1))}\n{"responses_create_params": \n`,
    );
    const res = await r.gym(['-a', 'my_agent', '-i', 'in.jsonl', '-o', 'r.jsonl']);
    assert.equal(res.code, 1);
    assert.match(res.stderr, /^Error: .*in\.jsonl:3: malformed JSONL line: .*JSON/m);
    assert.equal(r.agents.my_agent!.runs.length, 0);
    assert.equal(existsSync(r.file('r.jsonl')), false);
    assert.equal(existsSync(r.file('r_materialized_inputs.jsonl')), false);
  });

  test('a line nested 200,000 levels deep is a malformed line naming file:line, not a stack overflow (D19)', async () => {
    const r = await rig({ my_agent: ok });
    const deep = `{"responses_create_params": {"input": "x"}, "deep": ${'['.repeat(200_000)}${']'.repeat(200_000)}}`;
    writeFileSync(r.file('in.jsonl'), `${JSON.stringify(row(0))}\n${deep}\n`);
    const res = await r.gym(['-a', 'my_agent', '-i', 'in.jsonl', '-o', 'r.jsonl']);
    assert.equal(res.code, 1, res.stderr);
    assert.match(res.stderr, /^Error: .*in\.jsonl:2: malformed JSONL line: nested deeper than 520 levels/m);
    assert.doesNotMatch(res.stderr, /RangeError|unexpected/);
    assert.equal(r.agents.my_agent!.runs.length, 0);
  });

  test('a blank line in the middle of the input is malformed (Q15)', async () => {
    const r = await rig({ my_agent: ok });
    writeFileSync(r.file('in.jsonl'), `${JSON.stringify(row(0))}\n\n${JSON.stringify(row(1))}\n`);
    const res = await r.gym(['-a', 'my_agent', '-i', 'in.jsonl', '-o', 'r.jsonl']);
    assert.equal(res.code, 1);
    assert.match(res.stderr, /in\.jsonl:2: malformed JSONL line: blank line/);
    assert.equal(r.agents.my_agent!.runs.length, 0);
  });

  test('an unknown agent lists the offending rows and the configured agents', async () => {
    const r = await rig({ my_agent: ok });
    writeJsonl(r.file('in.jsonl'), [
      row(0),
      row(1, { agent_ref: { name: 'ghost' } }),
      row(2),
      row(3, { agent_ref: { name: 'ghost' } }),
    ]);
    const res = await r.gym(['-a', 'my_agent', '-i', 'in.jsonl', '-o', 'r.jsonl']);
    assert.equal(res.code, 1);
    assert.match(res.stderr, /Unknown agent 'ghost' \(rows at lines 2, 4\)/);
    assert.match(res.stderr, /knows these agents: 'my_agent'/);
    assert.equal(r.agents.my_agent!.runs.length, 0);
    assert.equal(existsSync(r.file('r_materialized_inputs.jsonl')), false);
  });

  test('rows without any agent are listed', async () => {
    const r = await rig({ my_agent: ok });
    writeJsonl(r.file('in.jsonl'), [row(0)]);
    const res = await r.gym(['-i', 'in.jsonl', '-o', 'r.jsonl']);
    assert.equal(res.code, 1);
    assert.match(res.stderr, /No agent specified for rows at lines 1 of .*in\.jsonl/);
  });

  test('an unreachable head server is a config error with the reference text', async () => {
    const head = await startFakeHead([]);
    const port = head.port;
    await head.close();
    const dir = tempDir();
    writeJsonl(path.join(dir, 'in.jsonl'), [row(0)]);
    const res = await runGym(
      ['eval', 'run', '--no-serve', '-a', 'x', '-i', 'in.jsonl', '-o', 'r.jsonl', `++head_server.port=${port}`],
      { cwd: dir },
    );
    assert.equal(res.code, 1);
    assert.match(
      res.stderr,
      new RegExp(
        `Could not connect to the head server at http://127\\.0\\.0\\.1:${port}\\. Perhaps you are not running a server`,
      ),
    );
  });

  test('a directory as --input or --output, or an output under a file, is one Error paragraph, nothing sent', async () => {
    const r = await rig({ my_agent: ok });
    writeJsonl(r.file('in.jsonl'), [row(0)]);
    mkdirSync(r.file('adir'));
    writeFileSync(r.file('afile'), 'x');
    const cases: Array<[string[], RegExp]> = [
      [
        ['-i', 'adir', '-o', 'r.jsonl'],
        /^Error: Input 'adir' \(--input\) is a directory; name the JSONL file inside it\.$/m,
      ],
      [
        ['-i', 'in.jsonl', '-o', 'adir'],
        /^Error: Output 'adir' \(--output\) is a directory; name a file in it, e\.g\. adir\/rollouts\.jsonl\.$/m,
      ],
      [
        ['-i', 'in.jsonl', '-o', 'afile/r.jsonl'],
        /^Error: Cannot create the directory of the output 'afile\/r\.jsonl' \(--output\): EEXIST .*Choose another --output path\.$/m,
      ],
    ];
    for (const [args, expected] of cases) {
      const res = await r.gym(['-a', 'my_agent', ...args]);
      assert.equal(res.code, 1, res.stderr);
      assert.match(res.stderr, expected);
      assert.doesNotMatch(res.stderr, /unexpected|\n\s+at /);
    }
    assert.equal(r.agents.my_agent!.runs.length, 0);
  });

  test('missing required keys are a usage error naming the flags', async () => {
    const r = await rig({ my_agent: ok });
    const res = await r.gym(['-a', 'my_agent']);
    assert.equal(res.code, 2);
    assert.match(res.stderr, /missing required configuration: input_jsonl_fpath, output_jsonl_fpath/);
  });
});

describe('failure containment (D11, D12)', () => {
  test('schema-invalid rows become terminal failure rows and the run continues', async () => {
    const r = await rig({ my_agent: ok });
    writeJsonl(r.file('in.jsonl'), [
      { x: 0 },
      { responses_create_params: { input: 'hi', bogus: 1 }, x: 1 },
      { responses_create_params: { input: 'hi', stream: true }, x: 2 },
      row(3),
      // Valid, but not a shape the contract's fast path settles: the full (zod) check accepts it.
      { responses_create_params: { input: [{ role: 'user', content: [{ type: 'input_text', text: 'hi' }] }] }, x: 4 },
    ]);
    const res = await r.gym(['-a', 'my_agent', '-i', 'in.jsonl', '-o', 'r.jsonl']);
    assert.equal(res.code, 0, res.stderr);
    assert.deepEqual(r.agents.my_agent!.runs.map((run) => run.x).sort(), [3, 4]);
    const failures = readJsonl(r.file('r_failures.jsonl'));
    assert.deepEqual(failures.map((f) => f.x).sort(), [0, 1, 2]);
    for (const f of failures) {
      assert.equal(f._ng_failure_terminal, true);
      assert.equal(f._ng_failure_class, 'invalid_row');
      assert.equal(f.reward, 0);
    }
    assert.match(String(failures.find((f) => f.x === 0)!.error), /no responses_create_params/);
    assert.match(String(failures.find((f) => f.x === 1)!.error), /bogus/);
    assert.deepEqual(
      readJsonl(r.file('r.jsonl'))
        .map((s) => s.x)
        .sort(),
      [3, 4],
    );
  });

  test('a non-2xx /run and a /run timeout each become a retryable failure row', async () => {
    const r = await rig({
      my_agent: (input) => {
        if (input.x === 1) return fakeReply.status(500, 'Internal Server Error: boom');
        if (input.x === 2) return fakeReply.hang();
        return fakeReply.success(input);
      },
    });
    writeJsonl(r.file('in.jsonl'), [row(0), row(1), row(2)]);
    // The hanging row always times out; the two others answer in milliseconds, so a timeout far above that (not 0.4 s,
    // which a busy machine can spend on an answer) never cuts one of them short.
    const res = await r.gym(['-a', 'my_agent', '-i', 'in.jsonl', '-o', 'r.jsonl', '++run_request_timeout_secs=10']);
    assert.equal(res.code, 0, res.stderr);
    assert.deepEqual(
      readJsonl(r.file('r.jsonl')).map((s) => s.x),
      [0],
    );
    const failures = readJsonl(r.file('r_failures.jsonl'));
    const errorOf = (x: number): string => String(failures.find((f) => f.x === x)?.error);
    assert.equal(failures.length, 2);
    for (const f of failures) {
      assert.equal(f._ng_failure_class, 'collector_error');
      assert.equal(f._ng_failure_terminal, undefined);
      assert.equal(typeof f._ng_task_index, 'number');
    }
    assert.match(errorOf(1), /answered HTTP 500: Internal Server Error: boom/);
    assert.match(errorOf(2), /timed out after 10s \(run_request_timeout_secs\)/);
    assert.match(res.stdout, /2 failed \(2 retryable, 0 terminal\)/);
  });
});

describe('overwrite protection (D8)', () => {
  test('a second run refuses before touching anything; ++overwrite=true truncates both files (U27)', async () => {
    let failTask0 = true;
    const r = await rig({
      my_agent: (input) => (input.x === 0 && failTask0 ? fakeReply.failure(input, 'flaky') : fakeReply.success(input)),
    });
    writeJsonl(r.file('in.jsonl'), [row(0), row(1)]);
    const args = ['-a', 'my_agent', '-i', 'in.jsonl', '-o', 'r.jsonl'];
    assert.equal((await r.gym(args)).code, 0);
    // A stale sidecar holding three attempts of task 0 (as an old run of the reference would leave).
    const stale = readJsonl(r.file('r_failures.jsonl'))[0]!;
    writeJsonl(r.file('r_failures.jsonl'), [stale, stale, stale]);
    const before = {
      rollouts: readFileSync(r.file('r.jsonl'), 'utf8'),
      failures: readFileSync(r.file('r_failures.jsonl'), 'utf8'),
    };

    const refused = await r.gym(args);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /already hold rollouts from an earlier run; refusing to overwrite them/);
    assert.match(refused.stderr, /--resume \(\+resume_from_cache=true\)/);
    assert.match(refused.stderr, /\+\+overwrite=true/);
    assert.equal(readFileSync(r.file('r.jsonl'), 'utf8'), before.rollouts);
    assert.equal(readFileSync(r.file('r_failures.jsonl'), 'utf8'), before.failures);
    assert.equal(r.agents.my_agent!.runs.length, 2);

    const fresh = await r.gym([...args, '++overwrite=true']);
    assert.equal(fresh.code, 0, fresh.stderr);
    assert.equal(readJsonl(r.file('r_failures.jsonl')).length, 1, 'the stale attempts are gone');

    // The stale attempts no longer count: task 0 failed once in this run, so resume retries it.
    failTask0 = false;
    const resumed = await r.gym([...args, '--resume']);
    assert.equal(resumed.code, 0, resumed.stderr);
    const lastRun = r.agents.my_agent!.runs.at(-1)!;
    assert.equal(lastRun.x, 0);
    assert.equal(lastRun._ng_attempt_index, 1);
    assert.equal(readJsonl(r.file('r.jsonl')).length, 2);
  });
});

describe('Ctrl-C', () => {
  test('SIGINT during a --no-serve run keeps the finished rows, marks the status file interrupted, exits 130 naming the resume command, and resume finishes', async (t) => {
    let hang = true;
    const r = await rig({
      my_agent: (input) => (input.x === 0 || !hang ? fakeReply.success(input, 1) : fakeReply.hang()),
    });
    writeJsonl(r.file('in.jsonl'), [row(0), row(1), row(2)]);
    const args = [
      'eval',
      'run',
      '--no-serve',
      '-a',
      'my_agent',
      '-i',
      'in.jsonl',
      '-o',
      'r.jsonl',
      `++head_server.port=${r.head.port}`,
    ];
    const running = spawnGym(args, { cwd: r.dir });
    t.after(() => void running.child.kill('SIGKILL'));
    await eventually(() => lineCount(r.file('r.jsonl')) === 1 && r.agents.my_agent!.runs.length === 3, {
      what: 'row 0 on disk, rows 1 and 2 in flight',
      timeoutMs: 120_000,
    });
    running.child.kill('SIGINT');
    const result = await running.result;
    assert.equal(result.code, 130, result.stderr);
    assert.match(
      result.stderr,
      /Interrupted: the finished rollouts are on disk; to finish the run: gym eval run .*\+resume_from_cache=true/,
    );
    assert.doesNotMatch(result.stderr, /\n\s+at /, 'no stack trace');
    const status = JSON.parse(readFileSync(r.file('r_status.json'), 'utf8')) as {
      state: string;
      totals: { done: number };
    };
    assert.equal(status.state, 'interrupted');
    assert.equal(status.totals.done, 1);
    assert.equal(lineCount(r.file('r_failures.jsonl')), 0, 'rollouts cut short by Ctrl-C are not failures');

    hang = false;
    const resumed = await runGym([...args, '--resume'], { cwd: r.dir });
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.deepEqual(
      readJsonl(r.file('r.jsonl'))
        .map((s) => s.x)
        .sort(),
      [0, 1, 2],
    );
  });
});
