/**
 * D20 through the real CLI: an agent that refuses connections is waited for (no failure row, no attempt spent) and
 * the undelivered rollouts are re-sent when it comes back; an agent that stays away ends the run non-zero with the
 * counts and the resume command, the rows never sent left unattempted for that resume.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { findFreePort } from '../config/index.js';
import { fakeReply, startFakeAgent, startFakeHead, type FakeRunHandler } from '../testing/fake-agent.js';
import type { Row } from '../runfiles/row.js';
import { keysOf, readJsonl, runGym, spawnGym, tempDir, writeJsonl } from '../../test/support/cli.js';
import { eventually } from '../../test/support/wait.js';

const open: Array<{ close(): Promise<void> }> = [];
after(async () => {
  for (const server of open.reverse()) await server.close();
});

const row = (x: number, agent: string): Row => ({
  responses_create_params: { input: `row ${x}` },
  x,
  agent_ref: { name: agent },
});
const ok: FakeRunHandler = (r) => fakeReply.success(r, 1);

async function rigWithAbsentAgent(): Promise<{ dir: string; port: number; args: (extra: string[]) => string[] }> {
  const live = await startFakeAgent('live_agent', ok);
  open.push(live);
  const port = await findFreePort();
  const head = await startFakeHead([live, { name: 'absent_agent', host: '127.0.0.1', port }]);
  open.push(head);
  const dir = tempDir();
  return {
    dir,
    port,
    args: (extra) => [
      'eval',
      'run',
      '--no-serve',
      '-i',
      'in.jsonl',
      '-o',
      'r.jsonl',
      `++head_server.port=${head.port}`,
      ...extra,
    ],
  };
}

describe('agent reachability (D20)', () => {
  test('an agent refusing connections is waited for and the undelivered rollouts are re-sent: no failure row', async (t) => {
    const rig = await rigWithAbsentAgent();
    writeJsonl(path.join(rig.dir, 'in.jsonl'), [
      row(0, 'live_agent'),
      row(1, 'absent_agent'),
      row(2, 'absent_agent'),
      row(3, 'live_agent'),
    ]);
    // The wait is far longer than the moment the test takes to bring the agent back, even on a busy machine.
    const gym = spawnGym(rig.args(['+num_samples_in_parallel=2', '++agent_unreachable_wait_secs=300']), {
      cwd: rig.dir,
    });
    t.after(() => void gym.child.kill('SIGKILL'));
    await eventually(
      () => /waiting for agent 'absent_agent' up to 300s \(agent_unreachable_wait_secs\)/.test(gym.stderr()),
      { what: () => `the waiting line (stderr so far: ${gym.stderr()})`, timeoutMs: 120_000 },
    );
    const back = await startFakeAgent('absent_agent', ok, { port: rig.port });
    open.push(back);
    const res = await gym.result;
    assert.equal(res.code, 0, res.stderr);
    assert.match(res.stderr, /Agent 'absent_agent' is reachable again after \d+\.\ds; re-sending/);
    assert.deepEqual(keysOf(readJsonl(path.join(rig.dir, 'r.jsonl'))), ['0:0', '1:0', '2:0', '3:0']);
    assert.deepEqual(readJsonl(path.join(rig.dir, 'r_failures.jsonl')), []);
    assert.equal(back.runs.length, 2, 'each undelivered rollout is delivered exactly once');
    assert.ok(
      back.runs.every((run) => run._ng_attempt_index === undefined),
      'a re-send is not a new attempt',
    );
  });

  test('an agent that does not come back stops dispatch, exits 1 with the counts and the resume command; resume finishes', async () => {
    const rig = await rigWithAbsentAgent();
    const rows = [
      row(0, 'live_agent'),
      row(1, 'absent_agent'),
      row(2, 'live_agent'),
      row(3, 'live_agent'),
      row(4, 'live_agent'),
    ];
    writeJsonl(path.join(rig.dir, 'in.jsonl'), rows);
    const res = await runGym(rig.args(['+num_samples_in_parallel=1', '++agent_unreachable_wait_secs=0.5']), {
      cwd: rig.dir,
    });
    assert.equal(res.code, 1, res.stdout + res.stderr);
    assert.match(res.stderr, /waiting for agent 'absent_agent' up to 0\.5s/);
    // It gave up after the configured 0.5 s, not the default 60 s: the outage it reports, measured by the collector
    // itself (never this process's clock, which also counts the CLI's start on a busy machine), is far below 60 s.
    const gaveUp =
      /Giving up on agent 'absent_agent' at http:\/\/127\.0\.0\.1:\d+ could not be reached for (\d+\.\d)s \(agent_unreachable_wait_secs=0\.5\)/.exec(
        res.stderr,
      );
    assert.ok(gaveUp, res.stderr);
    const outageSecs = Number(gaveUp[1]);
    assert.ok(outageSecs >= 0.5 && outageSecs < 30, `gave up after ${outageSecs}s`);
    assert.match(
      res.stderr,
      /1 rollout\(s\) completed, 0 failed, 4 not run \(never delivered, so they spend no attempt\) of 5/,
    );
    assert.match(
      res.stderr,
      /resume with: gym eval run --no-serve -i in\.jsonl -o r\.jsonl .*\+resume_from_cache=true/,
    );
    // Row 0 finished before the outage; nothing else was sent, and nothing became a failure row.
    assert.deepEqual(keysOf(readJsonl(path.join(rig.dir, 'r.jsonl'))), ['0:0']);
    assert.deepEqual(readJsonl(path.join(rig.dir, 'r_failures.jsonl')), []);

    const back = await startFakeAgent('absent_agent', ok, { port: rig.port });
    open.push(back);
    const resumed = await runGym(rig.args(['+resume_from_cache=true']), { cwd: rig.dir });
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.deepEqual(keysOf(readJsonl(path.join(rig.dir, 'r.jsonl'))), ['0:0', '1:0', '2:0', '3:0', '4:0']);
    assert.deepEqual(readJsonl(path.join(rig.dir, 'r_failures.jsonl')), []);
    assert.equal(back.runs[0]!._ng_attempt_index, undefined, 'the undelivered row was still at its first attempt');
  });

  test('agent_unreachable_wait_secs must be a positive number', async () => {
    const rig = await rigWithAbsentAgent();
    writeJsonl(path.join(rig.dir, 'in.jsonl'), [row(0, 'live_agent')]);
    const res = await runGym(rig.args(['++agent_unreachable_wait_secs=0']), { cwd: rig.dir });
    assert.equal(res.code, 1);
    assert.match(res.stderr, /'agent_unreachable_wait_secs' must be a number of seconds > 0, got 0/);
  });
});
