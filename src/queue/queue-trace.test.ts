/**
 * The queue path's trace through real processes: a `redis-server`, `gym env start` (the counter environment and the
 * remote agent of counter_remote.yaml), `gym worker` and `gym eval run --no-serve --queue`, every one exporting over
 * OTLP/HTTP to a receiver here. Each rollout must be one connected trace: the collector's `rollout` span, under it
 * the worker's `queue wait` and `worker` spans, under the worker span the agent's `rollout`, and under that its
 * seed, service calls, tools and verify, with the attributes a user filters on.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import { findFreePort } from '../config/index.js';
import { traceIdOf } from '../runfiles/trace-context.js';
import { startScriptedService } from '../testing/index.js';
import { readJsonl, runGym, spawnGym, tempDir, type RunningGym } from '../../test/support/cli.js';
import { solveCounterTask } from '../../test/support/live-run.js';
import { eventually } from '../../test/support/wait.js';
import { startOtlpReceiver, type ReceivedSpan } from '../../test/support/otlp-receiver.js';
import { startRedis } from '../../test/support/redis-server.js';

/** Upper bound of every wait for something that takes a second or so on a quiet machine. */
const WAIT_MS = 60_000;

const closers: Array<() => Promise<unknown>> = [];
after(async () => {
  for (const close of closers.reverse()) await close().catch(() => undefined);
});

async function stop(gym: RunningGym): Promise<void> {
  if (gym.child.exitCode !== null || gym.child.signalCode !== null) return;
  gym.child.kill('SIGINT');
  await gym.result;
}

test(
  'the queue path: one connected trace per rollout, collector → queue wait, worker → agent → seed/tools/verify',
  { timeout: 300_000 },
  async () => {
    const receiver = await startOtlpReceiver();
    closers.push(() => receiver.close());
    const spans = receiver.spans;
    const otel = {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      OTEL_BSP_SCHEDULE_DELAY: '50',
      OTEL_SERVICE_NAME: undefined,
    };
    const redis = await startRedis();
    closers.push(() => redis.kill());
    const service = await startScriptedService((call) => solveCounterTask(call));
    closers.push(() => service.close());

    const dir = tempDir('tsgym-queue-trace-');
    const headPort = await findFreePort();
    const env = spawnGym(
      [
        'env',
        'start',
        '+config_paths=[counter_remote.yaml]',
        `++remote_agent.responses_api_agents.remote_agent.agent_base_url=${service.url}`,
        `++head_server.port=${headPort}`,
      ],
      { cwd: dir, env: otel },
    );
    closers.push(() => stop(env));
    let envOut = '';
    env.child.stdout!.on('data', (chunk: Buffer) => (envOut += chunk.toString()));
    await eventually(() => /All \d+ \/ \d+ servers ready/.test(envOut), {
      what: () => `the environment: ${envOut}${env.stderr()}`,
      timeoutMs: WAIT_MS,
      intervalMs: 50,
    });
    const worker = spawnGym(['worker', '--queue', redis.url, `++head_server.port=${headPort}`, '+worker_id=w1'], {
      cwd: dir,
      env: otel,
    });
    closers.push(() => stop(worker));
    await eventually(() => /connected to/.test(worker.stderr()), {
      what: () => `the worker: ${worker.stderr()}`,
      timeoutMs: WAIT_MS,
    });
    const run = await runGym(
      [
        'eval',
        'run',
        '--no-serve',
        '--queue',
        redis.url,
        '-a',
        'remote_agent',
        '-i',
        'resources_servers/example_session_state_mgmt/data/example.jsonl',
        '-o',
        'out/r.jsonl',
      ],
      { cwd: dir, env: otel },
    );
    assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
    await stop(worker); // flushes the worker's spans

    const rows = readJsonl(path.join(dir, 'out/r.jsonl'));
    assert.equal(rows.length, 5);
    const salt = (JSON.parse(readFileSync(path.join(dir, 'out/r_status.json'), 'utf8')) as { trace_salt: string })
      .trace_salt;
    const ENV = 'tsgym-env-example_session_state_mgmt_resources_server';
    await eventually(
      () =>
        spans.filter((s) => s.service === ENV && s.name === 'POST /verify').length >= 5 &&
        spans.filter((s) => s.service === 'tsgym-collector' && s.name === 'rollout').length >= 5,
      { what: () => `the spans of every process (${spans.length} so far)`, timeoutMs: WAIT_MS, intervalMs: 50 },
    );

    for (const row of rows) {
      const traceId = traceIdOf(salt, row._ng_task_index, row._ng_rollout_index, 0);
      const mine = spans.filter((s) => s.traceId === traceId);
      const one = (service: string, name: string): ReceivedSpan => {
        const found = mine.filter((s) => s.service === service && s.name === name);
        assert.equal(
          found.length,
          1,
          `${service} ${name} in ${traceId}: ${JSON.stringify(mine.map((s) => [s.service, s.name]))}`,
        );
        return found[0]!;
      };
      const root = one('tsgym-collector', 'rollout');
      assert.equal(root.parentSpanId, '');
      const wait = one('tsgym-worker', 'queue wait');
      const work = one('tsgym-worker', 'worker');
      for (const span of [wait, work]) {
        assert.equal(span.parentSpanId, root.spanId, `${span.name} under the collector's rollout span`);
        assert.equal(span.attributes['gym.task_index'], row._ng_task_index);
        assert.equal(span.attributes['gym.rollout_index'], row._ng_rollout_index);
        assert.equal(span.attributes['gym.attempt'], 0);
        assert.equal(span.attributes['gym.agent'], 'remote_agent');
        assert.equal(span.attributes['gym.worker_id'], 'w1');
        assert.equal(typeof span.attributes['gym.worker_host'], 'string');
      }
      assert.ok(
        wait.start >= root.start - 1 && wait.end <= work.start + 1,
        'the wait ends when the worker takes the job',
      );
      assert.equal(work.attributes['gym.outcome_class'], 'completed');
      assert.equal(work.attributes['gym.reward'], 1);
      const agent = one('tsgym-remote-agent', 'rollout');
      assert.equal(agent.parentSpanId, work.spanId, "the agent's rollout hangs below the worker span");
      const seed = one('tsgym-remote-agent', 'seed');
      assert.equal(seed.parentSpanId, agent.spanId);
      assert.equal(one(ENV, 'POST /seed_session').parentSpanId, seed.spanId);
      assert.equal(one('tsgym-remote-agent', 'service call 1').parentSpanId, agent.spanId);
      const tools = mine.filter((s) => s.service === 'tsgym-remote-agent' && s.name === 'tool increment_counter');
      assert.ok(tools.length > 0);
      for (const tool of tools) assert.equal(tool.parentSpanId, agent.spanId);
      const verify = one('tsgym-remote-agent', 'verify');
      assert.equal(verify.parentSpanId, agent.spanId);
      assert.equal(one(ENV, 'POST /verify').parentSpanId, verify.spanId);
      for (const span of mine)
        assert.ok(
          span.parentSpanId === '' || mine.some((s) => s.spanId === span.parentSpanId),
          `${span.service} ${span.name}: its parent is in the trace`,
        );
    }
  },
);
