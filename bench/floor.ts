import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import { isMainModule } from '../src/server/serve.js';
import { captureTail, sampleProc, start, waitForExit } from './procs.js';

/**
 * The floor: the least work that produces the same rollouts. It makes exactly the HTTP exchanges a remote-agent
 * rollout makes against the same environment and service processes — seed, each service call, each tool call,
 * verify — with no validation, no agent hop, no files, no timeouts and no retries.
 */

export interface FloorOptions {
  envUrl: string;
  serviceUrl: string;
  inputPath: string;
  rollouts: number;
  concurrency: number;
}

export interface FloorResult {
  rollouts: number;
  rewardSum: number;
  wallMs: number;
  cpuMs: number;
}

const pool = new Agent({ keepAliveTimeout: 15_000, headersTimeout: 0, bodyTimeout: 0 });

async function post(
  url: string,
  body: string,
  cookie: string | undefined,
): Promise<{ text: string; cookie: string | undefined }> {
  const res = await request(url, {
    method: 'POST',
    body,
    headers: cookie ? { 'content-type': 'application/json', cookie } : { 'content-type': 'application/json' },
    dispatcher: pool,
  });
  const setCookie = res.headers['set-cookie'];
  const first = Array.isArray(setCookie) ? setCookie[0] : setCookie;
  return { text: await res.body.text(), cookie: first ? first.slice(0, first.indexOf(';')) : cookie };
}

/** The few wire fields the floor reads; it parses without validating, as the comment above says. */
interface FloorItem {
  type: string;
}
interface FloorCall extends FloorItem {
  type: 'function_call';
  name: string;
  arguments: string;
  call_id: string;
}
interface FloorResponse {
  output: FloorItem[];
}
interface FloorRow {
  responses_create_params: { input: unknown[] };
}

async function rollout(line: string, options: FloorOptions): Promise<number> {
  const row = JSON.parse(line) as FloorRow;
  const params = row.responses_create_params;
  let envCookie = (await post(`${options.envUrl}/seed_session`, line, undefined)).cookie;
  let serviceCookie: string | undefined;
  const items: unknown[] = [];
  let last: FloorResponse | undefined;
  for (let step = 0; step < 1000; step++) {
    const reply = await post(
      `${options.serviceUrl}/v1/responses`,
      JSON.stringify({ ...params, input: [...params.input, ...items] }),
      serviceCookie,
    );
    serviceCookie = reply.cookie;
    last = JSON.parse(reply.text) as FloorResponse;
    items.push(...last.output);
    const calls = last.output.filter((item): item is FloorCall => item.type === 'function_call');
    if (calls.length === 0) break;
    for (const call of calls) {
      const tool = await post(`${options.envUrl}/${call.name}`, call.arguments, envCookie);
      envCookie = tool.cookie;
      items.push({ type: 'function_call_output', call_id: call.call_id, output: tool.text });
    }
  }
  const verified = await post(
    `${options.envUrl}/verify`,
    JSON.stringify({ ...row, response: { ...last, output: items } }),
    envCookie,
  );
  return (JSON.parse(verified.text) as { reward: number }).reward;
}

async function runFloorHere(options: FloorOptions): Promise<FloorResult> {
  const started = performance.now();
  const lines = readFileSync(options.inputPath, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .slice(0, options.rollouts);
  let next = 0;
  let rewardSum = 0;
  const worker = async (): Promise<void> => {
    while (next < lines.length) {
      const reward = await rollout(lines[next++]!, options);
      rewardSum += reward; // not `rewardSum += await …`, which would add to a stale total
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, worker));
  return { rollouts: lines.length, rewardSum, wallMs: performance.now() - started, cpuMs: sampleProc('self').cpuMs };
}

/** Run the floor in its own process (so it does not share the bench's event loop) and return what it measured. */
export async function runFloor(options: FloorOptions, timeoutMs: number): Promise<FloorResult> {
  const args = Object.entries(options).flatMap(([key, value]) => [`--${key}`, String(value)]);
  const spawnedAt = performance.now();
  const child = start(process.execPath, [fileURLToPath(import.meta.url), ...args]);
  let out = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
  const tail = captureTail(child);
  const code = await waitForExit(child, timeoutMs, 'the floor loop');
  if (code !== 0) throw new Error(`the floor loop failed (exit ${code}):\n${tail()}`);
  const result = JSON.parse(out) as FloorResult;
  // Like the collector's, the floor's wall time includes its process start.
  return { ...result, wallMs: performance.now() - spawnedAt };
}

if (isMainModule(import.meta.url)) {
  const { values } = parseArgs({
    options: Object.fromEntries(
      ['envUrl', 'serviceUrl', 'inputPath', 'rollouts', 'concurrency'].map((key) => [key, { type: 'string' }]),
    ),
  }) as { values: Record<string, string> };
  const result = await runFloorHere({
    envUrl: values.envUrl!,
    serviceUrl: values.serviceUrl!,
    inputPath: values.inputPath!,
    rollouts: Number(values.rollouts),
    concurrency: Number(values.concurrency),
  });
  process.stdout.write(`${JSON.stringify(result)}\n`);
  await pool.close();
}
