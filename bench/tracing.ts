import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { CollectorTraces } from '../src/collect/trace.js';
import { parseTraceparent } from '../src/runfiles/trace-context.js';
import { exportRequested, rolloutTracer } from '../src/tracing/spans.js';
import { RolloutTrace } from '../src/rollout/trace.js';
import { collect, startGym, type CollectResult, type RunningGym } from './gym.js';
import { round, type Figure, type ScenarioReport } from './report.js';
import { COUNTER, dataset, outputDir, RUN_TIMEOUT_MS, tsgymCpuMs, type BenchContext } from './scenario-kit.js';

/**
 * Scenario 9: what tracing costs. Two `gym env start` environments of the counter workload side by side, one whose
 * processes (and collector) export spans over OTLP/HTTP to a receiver this bench runs on loopback, one with no
 * OTEL_* variable (the default: the SDK is never loaded, a span is only an id, D25). Rounds alternate off, on;
 * each side's CPU per rollout is every tsgym process's (collector, agent with its co-located environment,
 * supervisor), read from /proc once every exported span has arrived (the same settling wait on both sides).
 *
 *   (a) tracing exported ÷ off, CPU per rollout — context, what turning export on costs;
 *   (b) the off path's own work ÷ the off side's CPU per rollout: the trace hooks a counter rollout runs with
 *       tracing off (the collector's derived trace id, root span and `/run` traceparent; the agent's parse of it,
 *       its rollout span and one span id + traceparent per hop), made with the real tracer and classes in this
 *       process, 20,000 rollouts per batch, CPU time (not wall: the machine is shared). The same run through the
 *       agent's RolloutTrace, which also updates the Prometheus metrics on those points (always on), is given for
 *       context. Not in (b): the ≈ 70 bytes of each request's `traceparent` header on the wire and in the parsers,
 *       which cannot be timed apart from the request in a real process.
 * The hop sequence of (b) is checked against the spans the receiver counts per rollout on the exported side (the
 * collector's root, the agent's rollout span and each of its hop spans by name), so (b) times what a rollout does.
 */

const ROLLOUTS = 3_000;
const WARM_UP = 1_000;
const CONCURRENCY = 64;
const ROUNDS = 3;
const HOOK_ROLLOUTS = 20_000;
const HOOK_BATCHES = 7;

interface Receiver {
  endpoint: string;
  /** Spans received so far, by `service.name` and span name. */
  spans: Map<string, number>;
  total(): number;
  close(): Promise<void>;
}

async function startReceiver(): Promise<Receiver> {
  const spans = new Map<string, number>();
  let total = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      try {
        const doc = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          resourceSpans: Array<{
            resource: { attributes: Array<{ key: string; value: { stringValue?: string } }> };
            scopeSpans: Array<{ spans: Array<{ name: string }> }>;
          }>;
        };
        for (const rs of doc.resourceSpans) {
          const service = rs.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue ?? '?';
          for (const scope of rs.scopeSpans)
            for (const span of scope.spans) {
              const key = `${service} ${span.name.replace(/ \d+$/, ' k')}`;
              spans.set(key, (spans.get(key) ?? 0) + 1);
              total++;
            }
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      } catch (err) {
        res.writeHead(400, { 'content-type': 'text/plain' }).end(String(err));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    total: () => total,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** Waits until no span has arrived for `quietMs` (bounded): the batch processors have sent what they hold. */
async function settle(receiver: Receiver, quietMs: number): Promise<void> {
  const deadline = Date.now() + 60_000;
  let last = -1;
  let since = Date.now();
  while (Date.now() < deadline) {
    const now = receiver.total();
    if (now !== last) [last, since] = [now, Date.now()];
    else if (Date.now() - since >= quietMs) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('the OTLP receiver kept receiving spans for 60 s after the collection');
}

const HOPS = ['seed', 'tool increment_counter', 'tool get_counter_value', 'verify'];

/** CPU µs (user + system, this process) per call of `one`, the median of HOOK_BATCHES batches after a warm-up batch. */
function cpuMicrosPerCall(one: (i: number) => void): { median: number; batches: number[] } {
  const batches: number[] = [];
  for (let batch = 0; batch <= HOOK_BATCHES; batch++) {
    const before = process.cpuUsage();
    for (let i = 0; i < HOOK_ROLLOUTS; i++) one(i);
    const used = process.cpuUsage(before);
    if (batch > 0) batches.push((used.user + used.system) / HOOK_ROLLOUTS);
  }
  const sorted = [...batches].sort((a, b) => a - b);
  return { median: sorted[Math.floor(sorted.length / 2)]!, batches };
}

/**
 * The off path's trace hooks of one counter rollout (4 service calls, 3 tools), run HOOK_ROLLOUTS times in this
 * process with the real tracer: `tracing` makes exactly the tracer calls of src/collect/trace.ts and
 * src/rollout/trace.ts; `withMetrics` drives the agent's real RolloutTrace, which also updates
 * the Prometheus metrics that ride on the same points.
 */
async function offHooks(
  workDir: string,
): Promise<Record<'tracing' | 'withMetrics', { median: number; batches: number[] }>> {
  if (exportRequested()) throw new Error('scenario 9 measures the off path: unset OTEL_* for the bench process');
  const collector = await CollectorTraces.open(path.join(workDir, 'no-status.json'), false);
  const tracer = await rolloutTracer('tsgym-remote-agent');
  const row = { responses_create_params: { input: 'x' }, _ng_task_index: 0, _ng_rollout_index: 0 };
  const names = { agent: 'remote_agent', environment: 'bench_counter' };
  const usage = { input_tokens: 10, output_tokens: 5 };
  const result = { reward: 1 };
  const toolOf = (call: number): string => (call < 2 ? HOPS[1]! : HOPS[2]!);
  const tracing = (task: number): void => {
    const root = collector.begin({ task, rollout: 0, attempt: 0, agent: 'remote_agent' });
    const parent = parseTraceparent(root.headers().traceparent);
    const rollout = tracer.start('rollout', parent!, 'server', {
      'gym.agent': names.agent,
      'gym.environment': names.environment,
      'gym.task_index': task,
      'gym.rollout_index': 0,
      'gym.attempt': 0,
    });
    const step = (name: string, attributes: Record<string, string | number>): void => {
      const span = tracer.start(name, rollout, 'client', attributes);
      span.headers(undefined);
      span.setAttributes({ 'http.response.status_code': 200 });
      span.end();
    };
    step(HOPS[0]!, { 'gym.environment': names.environment });
    for (let call = 0; call < COUNTER.steps; call++) {
      step(`service call ${call + 1}`, { 'gym.step': call + 1 });
      if (call < COUNTER.steps - 1) step(toolOf(call), { 'gym.environment': names.environment });
    }
    step(HOPS[3]!, { 'gym.environment': names.environment });
    rollout.setAttributes({ 'gym.outcome_class': 'completed', 'gym.reward': 1, 'gym.service_calls': COUNTER.steps });
    rollout.end();
    collector.settle(root, result, 'rollouts');
  };
  const withMetrics = (task: number): void => {
    const root = collector.begin({ task, rollout: 0, attempt: 0, agent: 'remote_agent' });
    const trace = new RolloutTrace(tracer, { traceparent: root.headers().traceparent }, row, names);
    const step = (name: string): void => {
      const hop = trace.hop(name, { 'gym.environment': names.environment });
      hop.span.setAttributes({ 'http.response.status_code': 200 });
      hop.span.end();
    };
    step(HOPS[0]!);
    for (let call = 0; call < COUNTER.steps; call++) {
      const hop = trace.serviceCall();
      trace.serviceStatus(200);
      trace.usage(hop.span, usage);
      hop.span.end();
      if (call < COUNTER.steps - 1) step(toolOf(call));
    }
    step(HOPS[3]!);
    trace.finish({ reward: 1 });
    collector.settle(root, result, 'rollouts');
  };
  return { tracing: cpuMicrosPerCall(tracing), withMetrics: cpuMicrosPerCall(withMetrics) };
}

export async function tracingCost(ctx: BenchContext): Promise<ScenarioReport> {
  const name = '9. tracing cost';
  await ctx.service.configure(COUNTER);
  const receiver = await startReceiver();
  const exportEnv = {
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
    // Sent often and never dropped: every span of the side's rollouts is paid for inside the measured window.
    OTEL_BSP_SCHEDULE_DELAY: '200',
    OTEL_BSP_MAX_QUEUE_SIZE: '1000000',
  };
  const gyms: Record<'off' | 'on', RunningGym | undefined> = { off: undefined, on: undefined };
  try {
    gyms.off = await startGym({
      serviceUrl: ctx.service.url,
      concurrency: CONCURRENCY,
      workDir: path.join(ctx.workDir, 'env-trace-off'),
    });
    gyms.on = await startGym({
      serviceUrl: ctx.service.url,
      concurrency: CONCURRENCY,
      workDir: path.join(ctx.workDir, 'env-trace-on'),
      env: exportEnv,
    });
    const [warmInput, input] = [await dataset(ctx, WARM_UP), await dataset(ctx, ROLLOUTS)];
    const run = async (side: 'off' | 'on', file: string, rollouts: number): Promise<number> => {
      const gym = gyms[side]!;
      const before = gym.sample();
      const spansBefore = receiver.total();
      const result: CollectResult = await collect({
        headPort: gym.headPort,
        inputPath: file,
        outputDir: outputDir(ctx, `trace-${side}`),
        concurrency: CONCURRENCY,
        timeoutMs: RUN_TIMEOUT_MS,
        ...(side === 'on' ? { env: exportEnv } : {}),
      });
      if (result.completed !== rollouts || result.firstReward !== 1)
        throw new Error(`tracing ${side}: ${result.completed} of ${rollouts} rollouts completed with reward 1`);
      await settle(receiver, 1_500);
      const spans = receiver.total() - spansBefore;
      if (side === 'off' && spans !== 0) throw new Error(`tracing off sent ${spans} spans`);
      return tsgymCpuMs(before, gym.sample(), result) / rollouts;
    };
    await run('off', warmInput, WARM_UP);
    receiver.spans.clear();
    const warmSpans = receiver.total();
    await run('on', warmInput, WARM_UP);
    const perRollout = Object.fromEntries([...receiver.spans].map(([key, n]) => [key, n / WARM_UP]));
    const spansPerRollout = (receiver.total() - warmSpans) / WARM_UP;
    // The hooks timed below, per rollout: the collector's root; the agent's rollout, seed, 4 service calls, 3 tools
    // and verify.
    const expected: Record<string, number> = {
      'tsgym-collector rollout': 1,
      'tsgym-remote-agent rollout': 1,
      'tsgym-remote-agent seed': 1,
      'tsgym-remote-agent service call k': COUNTER.steps,
      'tsgym-remote-agent tool increment_counter': 2,
      'tsgym-remote-agent tool get_counter_value': 1,
      'tsgym-remote-agent verify': 1,
    };
    const agentSide = Object.fromEntries(Object.entries(perRollout).filter(([key]) => !key.startsWith('tsgym-env-')));
    if (JSON.stringify(Object.entries(agentSide).sort()) !== JSON.stringify(Object.entries(expected).sort()))
      throw new Error(
        `the exported spans per rollout are not the hooks scenario 9 times: ${JSON.stringify(perRollout)}`,
      );

    const rounds: Array<{ off: number; on: number }> = [];
    for (let i = 0; i < ROUNDS; i++) {
      const off = await run('off', input, ROLLOUTS);
      const on = await run('on', input, ROLLOUTS);
      rounds.push({ off, on });
      ctx.log(
        `  round ${i + 1}: CPU ms/rollout off ${off.toFixed(3)}, exported ${on.toFixed(3)} (÷ ${(on / off).toFixed(3)})`,
      );
    }
    // (a): the round with the median ratio; (b)'s denominator: the median off round.
    const median = [...rounds].sort((a, b) => a.on / a.off - b.on / b.off)[Math.floor(ROUNDS / 2)]!;
    const offCpus = rounds.map((r) => r.off).sort((a, b) => a - b);
    const offCpuMs = offCpus[Math.floor(ROUNDS / 2)]!;
    const hooks = await offHooks(ctx.workDir);
    const offUs = offCpuMs * 1000;
    const share = hooks.tracing.median / offUs;
    const shareWithMetrics = hooks.withMetrics.median / offUs;
    const batchesOf = (h: { batches: number[] }): string => h.batches.map((b) => b.toFixed(1)).join(' ');
    ctx.log(
      `  off-path trace hooks: ${hooks.tracing.median.toFixed(2)} µs of CPU per rollout (batches ${batchesOf(hooks.tracing)}), ${hooks.withMetrics.median.toFixed(2)} µs with the Prometheus updates (${batchesOf(hooks.withMetrics)}) ÷ ${offUs.toFixed(0)} µs of tsgym CPU per rollout = ${(share * 100).toFixed(2)} % (${(shareWithMetrics * 100).toFixed(2)} %)`,
    );
    const exported: Figure = {
      name,
      figure: 'tracing exported ÷ off, CPU per rollout (context)',
      value: round(median.on / median.off),
      target: '— (context)',
      met: true,
      context: {
        off_ms: round(median.off),
        exported_ms: round(median.on),
        round_ratios: rounds.map((r) => round(r.on / r.off)).join(' '),
        spans_per_rollout: spansPerRollout,
        rollouts: ROLLOUTS,
        concurrency: CONCURRENCY,
      },
    };
    return {
      figures: [
        exported,
        {
          name,
          figure: 'off-path trace hooks ÷ CPU per rollout (tracing off)',
          value: round(share, 5),
          target: '<= 0.01',
          met: share <= 0.01,
          context: {
            hooks_cpu_us_per_rollout: round(hooks.tracing.median),
            hook_batches_us: batchesOf(hooks.tracing),
            with_metrics_cpu_us_per_rollout: round(hooks.withMetrics.median),
            with_metrics_share: round(shareWithMetrics, 5),
            off_cpu_us_per_rollout: round(offUs, 0),
          },
        },
      ],
      notes: [
        `9: CPU per rollout, tracing off ${median.off.toFixed(3)} ms vs exported ${median.on.toFixed(3)} ms (median round of ${ROUNDS}; rounds ${rounds.map((r) => (r.on / r.off).toFixed(3)).join(', ')}), ${spansPerRollout} spans per rollout sent to a loopback OTLP/HTTP receiver (its CPU not counted)`,
        `9: the off path's trace hooks ${hooks.tracing.median.toFixed(2)} µs of CPU per rollout (${hooks.withMetrics.median.toFixed(2)} µs with the Prometheus updates on the same points), median of ${HOOK_BATCHES} in-process batches of ${HOOK_ROLLOUTS} rollouts, = ${(share * 100).toFixed(2)} % (${(shareWithMetrics * 100).toFixed(2)} %) of the ${offUs.toFixed(0)} µs tsgym spends per rollout with tracing off (median off round)`,
      ],
    };
  } finally {
    await gyms.off?.stop();
    await gyms.on?.stop();
    await receiver.close();
  }
}
