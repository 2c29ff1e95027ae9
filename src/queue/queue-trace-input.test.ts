/**
 * A job's trace context comes from Redis, so the worker treats it as outside data: a real `redis-server`, a
 * `gym worker` exporting spans to a receiver here, and a `gym eval run --queue` kept under way while the test adds
 * jobs by hand with a malformed `traceparent`, a `tracestate` that cannot be a header, an enqueue time in the far
 * future, and one well-formed set. The malformed parts are dropped (no span, no header), the jobs still run, the
 * worker stays up; the well-formed ones reach the agent's `/run` with the worker span as parent.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, test } from 'node:test';
import { Redis } from 'ioredis';
import { parseTraceparent, traceparent } from '../runfiles/trace-context.js';
import { readJsonl, tempDir } from '../../test/support/cli.js';
import { runStreamKey, startQueuedRun, writeAgentRows } from '../../test/support/queue-run.js';
import { startOtlpReceiver, type ReceivedSpan } from '../../test/support/otlp-receiver.js';
import { fakeResponse, startFakeHead } from '../testing/fake-agent.js';
import { eventually, gate } from '../../test/support/wait.js';
import { startRedis } from '../../test/support/redis-server.js';

/** Upper bound of every wait for something that takes milliseconds on a quiet machine. */
const WAIT_MS = 60_000;

const closers: Array<() => unknown> = [];
after(async () => {
  for (const close of closers.reverse()) await close();
});

async function listen(server: http.Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => new Promise((resolve) => server.close(resolve)));
  return (server.address() as AddressInfo).port;
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    let body = '';
    req.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
    req.on('end', () => resolve(body));
  });
}

test(
  'a job with a malformed trace context still runs: the bad parts are dropped, the worker stays up',
  { timeout: 240_000 },
  async () => {
    const receiver = await startOtlpReceiver();
    closers.push(() => receiver.close());
    const { endpoint } = receiver;
    const taskOf = (span: ReceivedSpan): unknown => span.attributes['gym.task_index'];
    const spans = receiver.spans;

    // The agent: records each /run's trace headers by the row's `probe` (the run's own rows wait for the gate).
    const released = gate();
    const seen = new Map<string, http.IncomingHttpHeaders>();
    const agentServer = http.createServer((req, res) => {
      void readBody(req).then(async (text) => {
        // A probe of the agent (a GET, no body) is answered, not parsed: only a /run carries a row.
        if (req.method !== 'POST' || text === '') return void res.writeHead(200).end('{}');
        const row = JSON.parse(text) as Record<string, unknown>;
        if (typeof row.probe === 'string') seen.set(row.probe, req.headers);
        else if (Number(row.i) >= 2) await released.opened;
        res
          .writeHead(200, { 'content-type': 'application/json' })
          .end(JSON.stringify({ ...row, response: fakeResponse(), reward: 1 }));
      });
    });
    const agentPort = await listen(agentServer);
    closers.push(() => released.open()); // before the agent closes: a failed test leaves no request held
    const head = await startFakeHead([{ name: 'alpha', host: '127.0.0.1', port: agentPort }]);
    closers.push(() => head.close());
    const server = await startRedis();
    closers.push(() => server.kill());

    const dir = tempDir('tsgym-queue-trace-input-');
    const n = 6;
    writeAgentRows(dir, n);
    const { worker, run } = startQueuedRun({
      queueUrl: server.url,
      headPort: head.port,
      dir,
      closers,
      workerEnv: { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_BSP_SCHEDULE_DELAY: '50', OTEL_SERVICE_NAME: undefined },
    });
    const admin = new Redis({ host: '127.0.0.1', port: server.port });
    closers.push(() => admin.disconnect());
    const jobsKey = await runStreamKey(admin, 'jobs');

    const valid = (trace: string): string => traceparent(trace.repeat(32), '1'.repeat(16));
    const probes: Record<string, string[]> = {
      // Nothing of it is usable: no header, no span.
      garbage: ['tp', '00-nothex-xyz-01', 'ts', 'a=1', 'at', 'soon'],
      // A good parent, a tracestate with a line break, an enqueue time a century ahead: only the parent is kept.
      mixed: ['tp', valid('a'), 'ts', 'a=1\r\nx-injected: 1', 'at', '9999999999999'],
      // All well-formed: the worker span goes on with the tracestate; the wait is recorded.
      good: ['tp', valid('b'), 'ts', 'vendor=abc', 'at', String(Date.now() - 1000)],
    };
    let task = 100;
    for (const [probe, fields] of Object.entries(probes)) {
      const body = JSON.stringify({ responses_create_params: { input: 'probe' }, agent_ref: { name: 'alpha' }, probe });
      await admin.xadd(jobsKey, '*', 'job', `t${task++}r0a0`, 'agent', 'alpha', 'body', body, ...fields);
    }
    await eventually(() => seen.size === 3, {
      what: () => `the probes to run: ${worker.stderr()}`,
      timeoutMs: WAIT_MS,
    });
    released.open();
    const result = await run.result;
    assert.equal(result.code, 0, `${result.stdout}\n${result.stderr}`);
    assert.equal(readJsonl(path.join(dir, 'out/r.jsonl')).length, n, "the run's own rows, once each");
    assert.equal(worker.child.exitCode, null, 'the worker is still up');
    worker.child.kill('SIGINT');
    assert.equal((await worker.result).code, 0);

    const garbage = seen.get('garbage')!;
    assert.equal(garbage.traceparent, undefined);
    assert.equal(garbage.tracestate, undefined);
    assert.ok(!spans.some((s) => taskOf(s) === 100), 'no span for a job without a usable parent');

    const mixed = seen.get('mixed')!;
    const mixedParent = parseTraceparent(mixed.traceparent);
    assert.equal(mixedParent?.traceId, 'a'.repeat(32));
    assert.equal(mixed.tracestate, undefined);
    assert.equal(mixed['x-injected'], undefined);
    await eventually(() => spans.some((s) => taskOf(s) === 101 && s.name === 'worker'), {
      what: 'the mixed job span',
      timeoutMs: WAIT_MS,
    });
    const mixedWorker = spans.find((s) => taskOf(s) === 101 && s.name === 'worker')!;
    assert.equal(mixedWorker.parentSpanId, '1'.repeat(16));
    assert.equal(mixedParent?.spanId, mixedWorker.spanId, "the /run's parent is the worker span");
    assert.ok(!spans.some((s) => taskOf(s) === 101 && s.name === 'queue wait'), 'no wait from an unbelievable time');

    const good = seen.get('good')!;
    assert.equal(good.tracestate, 'vendor=abc');
    await eventually(() => spans.some((s) => taskOf(s) === 102 && s.name === 'queue wait'), {
      what: 'the good wait span',
      timeoutMs: WAIT_MS,
    });
    assert.equal(parseTraceparent(good.traceparent)?.traceId, 'b'.repeat(32));
  },
);
