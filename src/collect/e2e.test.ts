/**
 * End to end: `gym eval run` without `--no-serve` starts the real counter environment and the
 * real remote agent from `counter_remote.yaml`, drives a scripted agent service through the dataset, and stops
 * everything. One task's service call answers HTTP 500: that rollout lands in the sidecar, the rest score 1.0.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { after, test } from 'node:test';
import { findFreePort } from '../config/index.js';
import type { AggregateEntry } from './aggregate.js';
import { reply, startScriptedService, type ScriptedService } from '../testing/index.js';
import { lineCount, readJsonl, runGym, spawnGym, tempDir } from '../../test/support/cli.js';
import { addendsOf, counterEvalArgs, solveCounterTask } from '../../test/support/live-run.js';
import { eventually } from '../../test/support/wait.js';

const services: ScriptedService[] = [];
after(async () => {
  for (const service of services) await service.close();
});

function refusesConnections(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(true));
  });
}

test('the counter environment and the remote agent, started by gym eval run, end to end', async () => {
  const service = await startScriptedService((call) =>
    addendsOf(call)[0] === 13 ? reply.status(500, 'service exploded') : solveCounterTask(call),
  );
  services.push(service);
  const dir = tempDir('tsgym-e2e-');
  const res = await runGym(counterEvalArgs(service.url, await findFreePort(), 'out/rollouts.jsonl'), { cwd: dir });
  assert.equal(res.code, 0, `${res.stdout}\n${res.stderr}`);
  const rollouts = readJsonl(path.join(dir, 'out/rollouts.jsonl'));
  assert.equal(rollouts.length, 4);
  for (const r of rollouts) {
    assert.equal(r.reward, 1);
    assert.deepEqual(r.agent_ref, { name: 'remote_agent' });
    const types = (r.response as { output: Array<{ type: string }> }).output.map((item) => item.type);
    assert.deepEqual(types.slice(-1), ['message']);
    assert.ok(types.includes('function_call') && types.includes('function_call_output'), types.join(','));
  }
  const failures = readJsonl(path.join(dir, 'out/rollouts_failures.jsonl'));
  assert.equal(failures.length, 1);
  assert.equal(failures[0]!._ng_failure_class, 'remote_agent_error');
  assert.equal(
    failures[0]!._ng_failure_code,
    'REMOTE_HTTP_STATUS',
    'the stable code, for tools that must not read the text',
  );
  assert.match(String(failures[0]!.error), /HTTP 500/);
  assert.equal(failures[0]!._ng_task_index, 4);
  assert.equal(failures[0]!._ng_rollout_index, 0);

  const metrics = JSON.parse(
    readFileSync(path.join(dir, 'out/rollouts_aggregate_metrics.json'), 'utf8'),
  ) as AggregateEntry[];
  assert.equal(metrics[0]!.agent_ref.name, 'remote_agent');
  assert.equal(metrics[0]!.key_metrics['mean/reward'], 1);
  assert.match(
    res.stdout,
    /5 tasks, 5 rollouts expected: 4 completed, 1 failed \(1 retryable, 0 terminal\), 0 missing/,
  );
  assert.match(res.stdout, /Mean reward 1\.0000 over 4 completed; 0\.8000 over 5 attempted with failures counted as 0/);
});

test('Ctrl-C during collection stops every server, records no spurious failures, and exits 130', async (t) => {
  const service = await startScriptedService(() => reply.hang());
  services.push(service);
  const dir = tempDir('tsgym-e2e-int-');
  const running = spawnGym(counterEvalArgs(service.url, await findFreePort(), 'r.jsonl'), { cwd: dir });
  t.after(() => void running.child.kill('SIGKILL'));
  // The first call reaching the service, or the run ending without one (then the test fails with its output).
  await Promise.race([
    service.waitForCalls(1),
    running.result.then((early) => {
      throw new Error(`gym eval run ended (${early.code}) before calling the service:\n${early.stderr}`);
    }),
  ]);
  // The servers' listening lines reach gym's stderr through the supervisor's pipes at their own pace, which a busy
  // machine can make later than the servers' readiness: waited for, not assumed.
  const listening = (): number[] =>
    [...running.stderr().matchAll(/listening on http:\/\/127\.0\.0\.1:(\d+)/g)].map((m) => Number(m[1]));
  await eventually(() => listening().length === 2, {
    what: () => `both servers' listening lines (stderr so far: ${running.stderr()})`,
    timeoutMs: 120_000,
  });
  const ports = listening();
  running.child.kill('SIGINT');
  const result = await running.result;
  assert.equal(result.code, 130, result.stderr);
  assert.match(result.stderr, /Interrupted: stopping the environment/);
  assert.equal(lineCount(path.join(dir, 'r.jsonl')), 0);
  assert.equal(lineCount(path.join(dir, 'r_failures.jsonl')), 0, 'rollouts cut short by Ctrl-C are not failures');
  const status = JSON.parse(readFileSync(path.join(dir, 'r_status.json'), 'utf8')) as {
    state: string;
    totals: { done: number };
  };
  assert.equal(status.state, 'interrupted');
  assert.equal(status.totals.done, 0);
  for (const port of ports) assert.ok(await refusesConnections(port), `server on port ${port} is gone`);
});
