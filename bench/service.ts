import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { assistantMessage, functionCall, reasoningItem, responseObject } from '../src/testing/index.js';
import { isMainModule } from '../src/server/serve.js';
import { start, waitForLine } from './procs.js';

/**
 * The benchmark's agent service, run as its own process so its CPU is not counted and it does not compete with
 * the collector's event loop. It solves counter tasks ("add A then add B then get the count") in `steps` calls:
 * increment A, increment B, read the count (repeated to fill the steps), then a final answer. Every answer may
 * carry a reasoning item of `itemBytes` and may be delayed by `delayMs`.
 *
 * It never parses a request body: A, B and the step number live in its own cookie (the agent echoes a service's
 * cookies within a rollout), and A and B are read once from the first call's text. `GET /stats` reports calls,
 * the most calls ever in flight at once, and bytes received; `POST /configure` changes the script between runs.
 */

export interface ServiceOptions {
  steps: number;
  itemBytes: number;
  delayMs: number;
}

const COOKIE = 'bench_service';
const TASK = /add (\d+) then add (\d+)/;
const OUTPUT_SLOT = '__BENCH_OUTPUT__';

/** The answer to each step of a rollout, encoded ahead of time except for the rollout's own numbers. */
function planAnswers(options: ServiceOptions): (a: number, b: number, step: number) => string {
  // The envelope is encoded once; each answer only encodes its own output items.
  const [head, tail] = JSON.stringify(responseObject([OUTPUT_SLOT])).split(JSON.stringify(OUTPUT_SLOT)) as [
    string,
    string,
  ];
  const reasoning =
    options.itemBytes > 0 ? `${JSON.stringify(reasoningItem('r'.repeat(options.itemBytes), 'rs_bench'))},` : '';
  const answer = (items: unknown): string => `${head}${reasoning}${JSON.stringify(items).slice(1, -1)}${tail}`;
  const final = answer([assistantMessage('done', 'msg_bench')]);
  const reads = Array.from({ length: options.steps }, (_, step) =>
    answer([functionCall('get_counter_value', {}, `call_${step}`)]),
  );
  return (a, b, step) => {
    if (step >= options.steps - 1) return final;
    if (step === 0) return answer([functionCall('increment_counter', { count: a }, 'call_0')]);
    if (step === 1) return answer([functionCall('increment_counter', { count: b }, 'call_1')]);
    return reads[step]!;
  };
}

function serve(initial: ServiceOptions): http.Server {
  let options = initial;
  let stepAnswer = planAnswers(options);
  let stats = freshStats();
  return http.createServer({ keepAliveTimeout: 30_000, requestTimeout: 0 }, (req, res) => {
    if (req.method === 'GET' && req.url === '/stats') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(stats));
      return;
    }
    if (req.method === 'POST' && req.url === '/configure') {
      let text = '';
      req.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
      req.once('end', () => {
        options = JSON.parse(text) as ServiceOptions;
        stepAnswer = planAnswers(options);
        stats = freshStats();
        res.writeHead(204).end();
      });
      return;
    }
    stats.calls++;
    stats.firstCallAt ||= Date.now();
    stats.maxInFlight = Math.max(stats.maxInFlight, ++stats.inFlight);
    const state = /bench_service=(\d+)\.(\d+)\.(\d+)/.exec(req.headers.cookie ?? '');
    let firstBytes = '';
    req.on('data', (chunk: Buffer) => {
      stats.bytesIn += chunk.length;
      if (!state && firstBytes.length < 4096) firstBytes += chunk.toString('latin1', 0, 4096);
    });
    req.once('end', () => {
      const task = state ? [state[1], state[2]] : TASK.exec(firstBytes)?.slice(1);
      if (!task) {
        stats.inFlight--;
        res.writeHead(400).end('bench service: no "add A then add B" task in the first call');
        return;
      }
      const [a, b] = task.map(Number) as [number, number];
      const step = state ? Number(state[3]) + 1 : 0;
      const body = stepAnswer(a, b, step);
      const reply = (): void => {
        res.writeHead(200, {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          'set-cookie': `${COOKIE}=${a}.${b}.${step}; Path=/`,
        });
        res.end(body, () => {
          stats.inFlight--;
          stats.lastReplyAt = Date.now();
        });
      };
      if (options.delayMs > 0) setTimeout(reply, options.delayMs);
      else reply();
    });
  });
}

function freshStats() {
  return { calls: 0, inFlight: 0, maxInFlight: 0, bytesIn: 0, firstCallAt: 0, lastReplyAt: 0 };
}

export interface ServiceStats {
  calls: number;
  maxInFlight: number;
  bytesIn: number;
  firstCallAt: number;
  lastReplyAt: number;
}

export interface RunningService {
  url: string;
  pid: number;
  stats(): Promise<ServiceStats>;
  /** Change the script and reset the counters (between runs against the same environment). */
  configure(options: ServiceOptions): Promise<void>;
}

/** Start the service process and wait for its address. */
export async function startService(options: ServiceOptions): Promise<RunningService> {
  const args = [
    '--steps',
    String(options.steps),
    '--item-bytes',
    String(options.itemBytes),
    '--delay-ms',
    String(options.delayMs),
  ];
  const child = start(process.execPath, [fileURLToPath(import.meta.url), ...args]);
  const [, url] = await waitForLine(child, /^listening on (\S+)/, 10_000);
  return {
    url: url!,
    pid: child.pid!,
    async stats() {
      const res = await fetch(`${url}/stats`, { signal: AbortSignal.timeout(10_000) });
      return (await res.json()) as ServiceStats;
    },
    async configure(next) {
      const res = await fetch(`${url}/configure`, {
        method: 'POST',
        body: JSON.stringify(next),
        signal: AbortSignal.timeout(10_000),
      });
      if (res.status !== 204) throw new Error(`the bench service refused its configuration (HTTP ${res.status})`);
    },
  };
}

if (isMainModule(import.meta.url)) {
  const { values } = parseArgs({
    options: { steps: { type: 'string' }, 'item-bytes': { type: 'string' }, 'delay-ms': { type: 'string' } },
  });
  const server = serve({
    steps: Number(values.steps ?? 4),
    itemBytes: Number(values['item-bytes'] ?? 0),
    delayMs: Number(values['delay-ms'] ?? 0),
  });
  // A large accept queue: 2,000 rollouts connect at once (Node's default of 511 overflows; see src/http/server.ts).
  server.listen({ port: 0, host: '127.0.0.1', backlog: 4096 }, () => {
    process.stdout.write(`listening on http://127.0.0.1:${(server.address() as AddressInfo).port}\n`);
  });
  process.once('SIGINT', () => process.exit(0));
  process.once('SIGTERM', () => process.exit(0));
}
