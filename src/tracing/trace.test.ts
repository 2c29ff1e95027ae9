import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { ROOT_CONTEXT, SpanKind, TraceFlags, trace } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { findFreePort } from '../config/index.js';
import { parseTraceparent, traceIdOf } from '../runfiles/trace-context.js';
import { reply, startScriptedService, toolOutputsIn, type ScriptedService } from '../testing/index.js';
import { readJsonl, runGym, tempDir } from '../../test/support/cli.js';
import { addendsOf, counterEvalArgs, solveCounterTask } from '../../test/support/live-run.js';
import { eventually } from '../../test/support/wait.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../../test/support/otlp-receiver.js';

/**
 * One real collection with span export on: the collector, the remote agent and the counter environment (processes
 * started by gym eval run) export through the OpenTelemetry SDK over OTLP/HTTP to a receiver here, and the scripted
 * service continues each call's traceparent with the SDK as an instrumented service would. The receiver decodes the
 * OTLP JSON and the test checks every span's parent.
 */
let spans: ReceivedSpan[] = [];
/** The counter environment's instance in counter_remote.yaml, and its spans' service name. */
const ENV_NAME = 'example_session_state_mgmt_resources_server';
const ENV = `tsgym-env-${ENV_NAME}`;
let receiver: OtlpReceiver;
let service: ScriptedService;
let serviceProvider: BasicTracerProvider;
let dir: string;
let endpoint: string;

before(async () => {
  receiver = await startOtlpReceiver();
  spans = receiver.spans;
  endpoint = receiver.endpoint;

  // The user's service, instrumented with the SDK: each call's span continues the traceparent it received.
  serviceProvider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'user-service' }),
    spanProcessors: [new SimpleSpanProcessor(new OTLPTraceExporter({ url: `${endpoint}/v1/traces` }))],
  });
  const tracer = serviceProvider.getTracer('user-service');
  service = await startScriptedService((call) => {
    const parent = parseTraceparent(call.headers.traceparent);
    assert.ok(parent, 'every service call carries a traceparent');
    const context = trace.setSpanContext(ROOT_CONTEXT, { ...parent, traceFlags: TraceFlags.SAMPLED, isRemote: true });
    tracer.startSpan('user-service step', { kind: SpanKind.SERVER }, context).end();
    return addendsOf(call)[0] === 13 && toolOutputsIn(call.body.input).length > 0
      ? reply.status(500, 'service exploded')
      : solveCounterTask(call);
  });

  dir = tempDir('tsgym-trace-');
  const res = await runGym(counterEvalArgs(service.url, await findFreePort(), 'out/rollouts.jsonl'), {
    cwd: dir,
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_BSP_SCHEDULE_DELAY: '50', OTEL_SERVICE_NAME: undefined },
  });
  assert.equal(res.code, 0, `${res.stdout}\n${res.stderr}`);
});

after(async () => {
  await service.close();
  await serviceProvider.shutdown();
  await receiver.close();
});

test('one connected trace per rollout: collector → agent → seed, service calls (continued by the service), tools, verify → environment', async () => {
  const status = JSON.parse(readFileSync(path.join(dir, 'out/rollouts_status.json'), 'utf8')) as { trace_salt: string };
  const rows = [
    ...readJsonl(path.join(dir, 'out/rollouts.jsonl')),
    ...readJsonl(path.join(dir, 'out/rollouts_failures.jsonl')),
  ];
  assert.equal(rows.length, 5);
  const count = (service: string, name: string): number =>
    spans.filter((s) => s.service === service && s.name === name).length;
  // 4 successes reach /verify; the failed one stops at its second service call.
  await eventually(() => count(ENV, 'POST /verify') >= 4 && count('tsgym-collector', 'rollout') >= 5, {
    what: () => `the spans of every process (${spans.length} so far)`,
    timeoutMs: 60_000,
    intervalMs: 50,
  });
  assert.ok(
    receiver.contentTypes.every((type) => /application\/json/.test(type)),
    `OTLP/HTTP with JSON bodies: ${receiver.contentTypes.join(', ')}`,
  );

  for (const row of rows) {
    const traceId = traceIdOf(status.trace_salt, row._ng_task_index, row._ng_rollout_index, 0);
    const mine = spans.filter((s) => s.traceId === traceId);
    const one = (service: string, name: string): ReceivedSpan => {
      const found = mine.filter((s) => s.service === service && s.name === name);
      assert.equal(
        found.length,
        1,
        `${service} ${name} in trace ${traceId}: ${JSON.stringify(mine.map((s) => [s.service, s.name]))}`,
      );
      return found[0]!;
    };
    const root = one('tsgym-collector', 'rollout');
    assert.equal(root.parentSpanId, '', 'the collector span is the root');
    assert.equal(root.attributes['gym.task_index'], row._ng_task_index);
    const agent = one('tsgym-remote-agent', 'rollout');
    assert.equal(agent.parentSpanId, root.spanId);
    assert.equal(agent.attributes['gym.environment'], ENV_NAME);
    const seed = one('tsgym-remote-agent', 'seed');
    assert.equal(seed.parentSpanId, agent.spanId);
    assert.equal(one(ENV, 'POST /seed_session').parentSpanId, seed.spanId);
    const call1 = one('tsgym-remote-agent', 'service call 1');
    assert.equal(call1.parentSpanId, agent.spanId);
    const serviceSpans = mine.filter((s) => s.service === 'user-service');
    const calls = mine.filter((s) => s.service === 'tsgym-remote-agent' && s.name.startsWith('service call '));
    assert.equal(serviceSpans.length, calls.length);
    for (const span of serviceSpans)
      assert.ok(
        calls.some((c) => c.spanId === span.parentSpanId),
        'service under a call',
      );
    const tools = mine.filter((s) => s.service === 'tsgym-remote-agent' && s.name === 'tool increment_counter');
    const routes = mine.filter((s) => s.service === ENV && s.name === 'POST /increment_counter');
    assert.ok(tools.length > 0);
    assert.equal(routes.length, tools.length);
    for (const tool of tools) assert.equal(tool.parentSpanId, agent.spanId);
    for (const route of routes)
      assert.ok(
        tools.some((tool) => tool.spanId === route.parentSpanId),
        'tool route under its hop',
      );
    for (const span of mine) {
      for (const key of Object.keys(span.attributes))
        assert.match(key, /^(gym|gen_ai|http|url)\./, `${span.name}: attribute ${key} is not one of ours`);
    }

    if (row._ng_failure_class === undefined) {
      assert.equal(row._ng_trace_id, undefined, 'a success row stays the verify response plus stamps (C4)');
      const verify = one('tsgym-remote-agent', 'verify');
      assert.equal(one(ENV, 'POST /verify').parentSpanId, verify.spanId);
      assert.equal(agent.attributes['gym.outcome_class'], 'completed');
      assert.equal(agent.attributes['gym.reward'], 1);
      assert.equal(typeof call1.attributes['gen_ai.usage.input_tokens'], 'number');
      // gym eval explain finds the same trace id for a success, from the status file's salt.
      const explained = await runGym(['eval', 'explain', 'out/rollouts.jsonl', `${String(row._ng_task_index)}:0`], {
        cwd: dir,
      });
      assert.match(explained.stdout, new RegExp(`trace id: ${traceId}\n`));
    } else {
      assert.equal(row._ng_trace_id, traceId);
      assert.equal(agent.attributes['gym.outcome_class'], 'remote_agent_error');
      assert.equal(root.attributes['gym.outcome_class'], 'remote_agent_error');
    }
  }
});
