import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createDispatcher, request, type HttpResponse } from '../src/http/client.js';
import type { ModelCallCapture } from '../src/model-server/records.js';
import { fetchServerInstances } from '../src/supervisor/head-client.js';
import { answerText, ids, promptIds, startVllmUpstream, type VllmUpstream } from '../test/support/vllm-upstream.js';
import { freePort, GYM, REPO } from './gym.js';
import { captureTail, sampleProc, start, stop, waitForLine } from './procs.js';
import { atLeast, atMost, round, type Figure, type ScenarioReport } from './report.js';
import { MIB, type BenchContext } from './scenario-kit.js';

/**
 * Scenario 10: what the model server costs (issue 31, item 7). `gym env start` runs two `vllm_model` model servers
 * (`return_token_id_information: true`), each a process of its own as in any environment, in front of the scripted
 * vLLM of test/support/vllm-upstream.ts, which this process serves on loopback. Both measurements read the model
 * server's process from /proc (CPU, VmHWM) and, through bench/probe.ts (SIGUSR2: a full GC, then RSS and heap in use),
 * what it still holds.
 *
 * 1. Added latency per call: sequential non-streamed chat calls, (a) straight to the upstream, (a′) the same with the
 *    token-id fields the model server adds for capture, (b) through `/v1/chat/completions`, (c) through an open
 *    rollout's `/ng-rollout/<id>/v1/…`, (d) through `/ng-rollout/<id>/training-token-capture/v1/…`. Blocks of each
 *    variant alternate in rounds (their order rotated), so load hits all alike; a fresh rollout per round keeps each
 *    rollout at a realistic 100 records. Figures: median latency minus (a)'s median, and the model server's CPU per
 *    call (its /proc CPU over each variant's blocks ÷ calls).
 * 2. 2,000 rollouts in flight with capture on: the second server has `max_open_rollouts: 2000` and a
 *    `max_captured_tokens_per_rollout` its rollouts reach (each makes 4 append-only captured calls; the 4th goes past
 *    the cap). All 2,000 are opened, 50 more opens must be refused (503), all 2,000 rollouts then make their calls at
 *    once, and stay open while the server's memory is read; then all are closed, each capture checked (4 records, the
 *    over-cap gap, exactly the first 3 calls' tokens held), and the memory read again; then a second wave the same.
 *    Each reading follows a full GC, with the connections to and from the server closed first (idle keep-alive
 *    sockets are not what a rollout holds). Figures: peak RSS ÷ (baseline RSS + 2 × 2,000 × the cap × 8 bytes per
 *    held id or log-prob + 4 × 2,000 × the largest answer in flight + 64 MiB); heap in use after close − before, and
 *    after the 2nd wave − after the 1st; RSS after close for context (V8 and the allocator keep pages they grew to).
 */

const NAME = '10. model server';
const WARM_UP_CALLS = 2500;
const ROUNDS = 20;
const BLOCK = 100;
const ROLLOUTS = 2_000;
const CALLS_PER_ROLLOUT = 4;
const OVER_CAP_OPENS = 50;
const TASK_CHARS = 400;
/** A V8 array element (an id as a small integer, a log-prob as a double): 8 bytes on 64-bit Node. */
const BYTES_PER_HELD_TOKEN = 8;
const SLACK_MIB = 64;
/**
 * What one call in flight holds of its answer at once: the bytes received, the parsed object graph (about twice its
 * text for the log-prob entries) and the bytes relayed to the caller.
 */
const IN_FLIGHT_COPIES = 4;
const TIMEOUT_MS = 60_000;

interface ModelServerProcess {
  url: string;
  pid: number;
}

interface Memory {
  rssMiB: number;
  heapMiB: number;
  /** Open file descriptors: mostly sockets, the pooled upstream connections among them. */
  fds: number;
}

interface Servers {
  /** Relays only (no token ids): the plain and rollout routes. */
  relay: ModelServerProcess;
  /** With return_token_id_information: the token-capture route. */
  latency: ModelServerProcess;
  bounded: ModelServerProcess;
  memoryDir: string;
  stop(): Promise<void>;
}

interface Message {
  role: string;
  content: string;
}

/** The conversation before call k of a rollout (the caller appends, never rewrites: one chain per rollout). */
function historyBefore(task: string, k: number): Message[] {
  const history: Message[] = [{ role: 'user', content: task }];
  for (let i = 0; i < k; i++) {
    history.push({ role: 'assistant', content: answerText(history) }, { role: 'user', content: `continue ${i}` });
  }
  return history;
}

/** What one captured call holds against the cap: its prompt ids plus its generated ids and their log-probs. */
function heldTokens(messages: readonly Message[]): number {
  return promptIds(messages).length + 2 * (ids(answerText(messages)).length + 1);
}

function taskOf(index: number): string {
  const head = `rollout ${index}: `;
  return head + 'x'.repeat(TASK_CHARS - head.length);
}

/** The cap: every rollout's first 3 calls fit (their tasks are the same length), its 4th would not. */
function capFor(): { cap: number; firstCalls: number } {
  const sizes = Array.from({ length: CALLS_PER_ROLLOUT }, (_, k) => heldTokens(historyBefore(taskOf(0), k)));
  const firstCalls = sizes.slice(0, -1).reduce((a, b) => a + b, 0);
  return { cap: firstCalls + Math.floor(sizes.at(-1)! / 2), firstCalls };
}

function configYaml(upstreamUrl: string, cap: number): string {
  const block = (name: string, extra: string[], tokenIds = true): string[] => [
    `${name}:`,
    '  responses_api_models:',
    '    vllm_model:',
    '      entrypoint: app.py',
    `      base_url: ${upstreamUrl}`,
    "      api_key: ''",
    '      model: bench-model',
    `      return_token_id_information: ${String(tokenIds)}`,
    ...extra.map((line) => `      ${line}`),
  ];
  return [
    // The relay alone: with return_token_id_information every whole answer would also carry its ids (the reference's
    // behaviour), which is token work, measured separately on the capturing server.
    ...block('bench_model_relay', [], false),
    ...block('bench_model', []),
    ...block('bench_model_bounded', [`max_open_rollouts: ${ROLLOUTS}`, `max_captured_tokens_per_rollout: ${cap}`]),
    '',
  ].join('\n');
}

/** `gym env start` with the two model servers, preloaded with bench/probe.ts for the memory reading. */
async function startServers(ctx: BenchContext, upstreamUrl: string, cap: number): Promise<Servers> {
  const dir = path.join(ctx.workDir, 'model-server');
  const memoryDir = path.join(dir, 'memory');
  mkdirSync(memoryDir, { recursive: true });
  const configPath = path.join(dir, 'bench.yaml');
  writeFileSync(configPath, configYaml(upstreamUrl, cap));
  const headPort = await freePort();
  const probe = path.join(REPO, 'dist', 'bench', 'probe.js');
  const env = {
    ...process.env,
    NODE_OPTIONS: [process.env.NODE_OPTIONS, `--import=${probe}`].filter(Boolean).join(' '),
    TSGYM_BENCH_MEMORY_DIR: memoryDir,
  };
  const args = [GYM, 'env', 'start', `+config_paths=[${configPath}]`, `++head_server.port=${headPort}`];
  const child = start(process.execPath, [...args, `++nemo_gym_log_dir=${path.join(dir, 'logs')}`], {
    cwd: REPO,
    env,
  });
  const tail = captureTail(child);
  try {
    await waitForLine(child, /^All (\d+) \/ \1 servers ready/, 60_000);
    const lookup = await fetchServerInstances(`http://127.0.0.1:${headPort}`);
    const find = (name: string): ModelServerProcess => {
      const found = lookup.kind === 'found' ? lookup.instances.find((i) => i.process_name === name) : undefined;
      if (!found?.pid) throw new Error(`the head server lists no running ${name} process`);
      return { url: found.url, pid: found.pid };
    };
    return {
      relay: find('bench_model_relay'),
      latency: find('bench_model'),
      bounded: find('bench_model_bounded'),
      memoryDir,
      stop: () => stop(child, 10_000),
    };
  } catch (err) {
    await stop(child);
    throw new Error(`gym env start (model servers) failed: ${(err as Error).message}\n${tail()}`, { cause: err });
  }
}

/** The process's RSS and heap in use after a full GC (bench/probe.ts answers SIGUSR2). */
async function memoryAfterGc(servers: Servers, pid: number): Promise<Memory> {
  const file = path.join(servers.memoryDir, `${pid}.json`);
  rmSync(file, { force: true });
  process.kill(pid, 'SIGUSR2');
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      const { rss, heapUsed } = JSON.parse(readFileSync(file, 'utf8')) as { rss: number; heapUsed: number };
      return { rssMiB: rss / MIB, heapMiB: heapUsed / MIB, fds: readdirSync(`/proc/${pid}/fd`).length };
    } catch {
      if (Date.now() > deadline) throw new Error(`model server ${pid} wrote no memory reading within 30 s`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}

type Connections = ReturnType<typeof createDispatcher>;

async function post(url: string, body: unknown, connections?: Connections): Promise<HttpResponse> {
  return request(url, {
    method: 'POST',
    json: body,
    timeoutMs: TIMEOUT_MS,
    maxBodyBytes: 64 * MIB,
    ...(connections ? { dispatcher: connections } : {}),
  });
}

async function postOk(url: string, body: unknown, connections?: Connections): Promise<HttpResponse> {
  const res = await post(url, body, connections);
  if (res.status !== 200) throw new Error(`POST ${url} answered ${res.status}: ${res.text().slice(0, 300)}`);
  return res;
}

/** Run `work` over `items`, at most `limit` at once. */
async function pool<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
};

// ---------------------------------------------------------------------------------------------------------------
// 1. Added latency per call

const CHAT = { model: 'bench-model', messages: [{ role: 'user', content: 'What is two plus two? Answer briefly.' }] };
/** What the model server adds to a captured call's body for vLLM (src/model-server/token-ids.ts). */
const CAPTURE_FIELDS = { logprobs: true, top_logprobs: 0, return_tokens_as_token_ids: true, return_token_ids: true };

type Variant = 'direct' | 'directCaptureShape' | 'plain' | 'rollout' | 'captured';
const VARIANTS: readonly Variant[] = ['direct', 'directCaptureShape', 'plain', 'rollout', 'captured'];

function byVariant<T>(make: (variant: Variant) => T): Record<Variant, T> {
  return Object.fromEntries(VARIANTS.map((v) => [v, make(v)])) as Record<Variant, T>;
}

interface VariantStats {
  latenciesMs: number[];
  serverCpuMs: number;
  calls: number;
}

/** The model servers of the latency figures: the relay alone, and one with token ids for the captured route. */
interface LatencyServers {
  relay: ModelServerProcess;
  capture: ModelServerProcess;
}

/** The server a variant's calls go through (the direct ones: the relay, whose idle work is then read). */
function serverOf(variant: Variant, servers: LatencyServers): ModelServerProcess {
  return variant === 'captured' ? servers.capture : servers.relay;
}

function variantCall(
  variant: Variant,
  upstream: VllmUpstream,
  servers: LatencyServers,
  rolloutId: string,
): () => Promise<HttpResponse> {
  const url = {
    direct: `${upstream.url}/chat/completions`,
    directCaptureShape: `${upstream.url}/chat/completions`,
    plain: `${servers.relay.url}/v1/chat/completions`,
    rollout: `${servers.relay.url}/ng-rollout/${rolloutId}-c/v1/chat/completions`,
    captured: `${servers.capture.url}/ng-rollout/${rolloutId}-d/training-token-capture/v1/chat/completions`,
  }[variant];
  const body = variant === 'directCaptureShape' ? { ...CHAT, ...CAPTURE_FIELDS } : CHAT;
  return () => postOk(url, body);
}

/** One round: a fresh pair of rollouts, then a block of each variant in `order`, each call timed. */
async function latencyRound(
  round: number,
  order: readonly Variant[],
  calls: number,
  upstream: VllmUpstream,
  servers: LatencyServers,
  stats: Record<Variant, VariantStats>,
): Promise<void> {
  const rolloutId = `lat-${round}`;
  await postOk(`${servers.relay.url}/ng-rollout/${rolloutId}-c/open`, {});
  await postOk(`${servers.capture.url}/ng-rollout/${rolloutId}-d/open`, {});
  for (const variant of order) {
    const call = variantCall(variant, upstream, servers, rolloutId);
    const pid = serverOf(variant, servers).pid;
    const cpuBefore = sampleProc(pid).cpuMs;
    for (let i = 0; i < calls; i++) {
      const started = performance.now();
      await call();
      stats[variant].latenciesMs.push(performance.now() - started);
    }
    stats[variant].serverCpuMs += sampleProc(pid).cpuMs - cpuBefore;
    stats[variant].calls += calls;
  }
  // The records are what the rollout routes exist for: each call is on its rollout, the captured ones with ids.
  const plain = (await postOk(`${servers.relay.url}/ng-rollout/${rolloutId}-c/close`, {}).then((r) =>
    r.json(),
  )) as ModelCallCapture;
  const captured = (await postOk(`${servers.capture.url}/ng-rollout/${rolloutId}-d/close`, {}).then((r) =>
    r.json(),
  )) as ModelCallCapture;
  const withIds = captured.calls.filter((c) => (c.generation_token_ids?.length ?? 0) > 0).length;
  if (plain.calls.length !== calls || captured.calls.length !== calls || withIds !== calls) {
    throw new Error(
      `round ${round}: expected ${calls} records per rollout (all captured ones with token ids), got ${plain.calls.length} and ${captured.calls.length} (${withIds} with ids)`,
    );
  }
  upstream.requests.length = 0;
}

async function addedLatency(
  upstream: VllmUpstream,
  servers: LatencyServers,
): Promise<{ figures: Figure[]; notes: string[] }> {
  const fresh = (): Record<Variant, VariantStats> =>
    byVariant((): VariantStats => ({ latenciesMs: [], serverCpuMs: 0, calls: 0 }));
  await latencyRound(-1, VARIANTS, WARM_UP_CALLS / VARIANTS.length, upstream, servers, fresh());
  const stats = fresh();
  const roundMedians: Array<Record<Variant, number>> = [];
  for (let r = 0; r < ROUNDS; r++) {
    const order = VARIANTS.map((_, i) => VARIANTS[(i + r) % VARIANTS.length]!);
    const before = Object.fromEntries(VARIANTS.map((v) => [v, stats[v].latenciesMs.length]));
    await latencyRound(r, order, BLOCK, upstream, servers, stats);
    roundMedians.push(byVariant((v) => median(stats[v].latenciesMs.slice(before[v]))));
  }
  const med = byVariant((v) => median(stats[v].latenciesMs));
  const cpuUs = (v: Variant): number => (stats[v].serverCpuMs / stats[v].calls) * 1000;
  const spread = (v: Variant, base: Variant): string => {
    const diffs = roundMedians.map((m) => m[v] - m[base]).sort((a, b) => a - b);
    return `${diffs[0]!.toFixed(3)}–${diffs.at(-1)!.toFixed(3)}`;
  };
  const added = (v: Variant, base: Variant = 'direct'): number => med[v] - med[base];
  const context = (v: Variant, base: Variant = 'direct'): Figure['context'] => ({
    median_ms: round(med[v]),
    direct_median_ms: round(med[base]),
    round_median_differences_ms: spread(v, base),
    server_cpu_us_per_call: round(cpuUs(v), 1),
    calls: stats[v].calls,
  });
  const contextFigure = (figure: string, value: number, ctxValues: Figure['context']): Figure => ({
    name: NAME,
    figure,
    value: round(value),
    target: '— (context)',
    met: true,
    ...(ctxValues ? { context: ctxValues } : {}),
  });
  return {
    figures: [
      atMost(NAME, 'added latency, rollout route − direct (ms, median)', added('rollout'), 1, context('rollout')),
      contextFigure('added latency, plain /v1 route − direct (ms, median)', added('plain'), context('plain')),
      contextFigure('added latency, token capture − direct (ms, median)', added('captured'), context('captured')),
      contextFigure(
        'added latency, token capture − direct with capture fields (ms, median)',
        added('captured', 'directCaptureShape'),
        context('captured', 'directCaptureShape'),
      ),
      contextFigure('model server CPU per call, rollout route (µs)', cpuUs('rollout'), {
        plain_us: round(cpuUs('plain'), 1),
        captured_us: round(cpuUs('captured'), 1),
        during_direct_calls_us: round(cpuUs('direct'), 1),
      }),
    ],
    notes: [
      `10.1: ${stats.direct.calls} sequential calls per variant in ${ROUNDS} rounds of ${BLOCK}, medians (ms): direct ${med.direct.toFixed(3)}, ` +
        `direct with capture fields ${med.directCaptureShape.toFixed(3)}, /v1 ${med.plain.toFixed(3)}, rollout ${med.rollout.toFixed(3)}, ` +
        `captured ${med.captured.toFixed(3)}; added: /v1 ${added('plain').toFixed(3)} (rounds ${spread('plain', 'direct')}), ` +
        `rollout ${added('rollout').toFixed(3)} (${spread('rollout', 'direct')}), captured ${added('captured').toFixed(3)} ` +
        `(${spread('captured', 'direct')}; over direct with the capture fields ${added('captured', 'directCaptureShape').toFixed(3)}). ` +
        `Model server CPU per call (/proc): /v1 ${cpuUs('plain').toFixed(0)} µs, rollout ${cpuUs('rollout').toFixed(0)} µs, ` +
        `captured ${cpuUs('captured').toFixed(0)} µs; ${cpuUs('direct').toFixed(0)} µs per call while calls went direct (its idle work).`,
    ],
  };
}

// ---------------------------------------------------------------------------------------------------------------
// 2. 2,000 rollouts in flight with capture on

/** Every open past max_open_rollouts must be refused with 503 `too_many_rollouts`, and no call through it accepted. */
async function refusedOpens(server: ModelServerProcess, connections: Connections): Promise<number> {
  let refused = 0;
  for (let i = 0; i < OVER_CAP_OPENS; i++) {
    const res = await post(`${server.url}/ng-rollout/over-${i}/open`, {}, connections);
    const type = res.status === 503 ? (res.json() as { error?: { type?: string } }).error?.type : undefined;
    const url = `${server.url}/ng-rollout/over-${i}/training-token-capture/v1/chat/completions`;
    const call = await post(url, CHAT, connections);
    if (type === 'too_many_rollouts' && call.status === 404) refused++;
  }
  return refused;
}

/** Close every rollout of a wave and check what each held: all its records, the over-cap gap, its first calls' ids. */
async function closeAndCheck(
  server: ModelServerProcess,
  connections: Connections,
  wave: number,
  expectedHeld: number,
): Promise<void> {
  const problems: string[] = [];
  await pool(
    Array.from({ length: ROLLOUTS }, (_, i) => i),
    256,
    async (i) => {
      const res = await postOk(`${server.url}/ng-rollout/mem-${wave}-${i}/close`, {}, connections);
      const capture = res.json() as ModelCallCapture;
      const held = capture.calls.reduce(
        (sum, c) => sum + (c.prompt_token_ids?.length ?? 0) + 2 * (c.generation_token_ids?.length ?? 0),
        0,
      );
      const overCap = capture.gaps?.some((gap) => gap.code === 'token_id_capture_over_cap') ?? false;
      if (capture.calls.length !== CALLS_PER_ROLLOUT || held !== expectedHeld || !overCap) {
        problems.push(
          `mem-${wave}-${i}: ${capture.calls.length} records, ${held} tokens held, over-cap gap ${overCap}`,
        );
      }
    },
  );
  if (problems.length > 0) {
    throw new Error(
      `${problems.length} rollouts closed with an unexpected capture (expected ${CALLS_PER_ROLLOUT} records, ${expectedHeld} tokens held, the over-cap gap): ${problems.slice(0, 3).join('; ')}`,
    );
  }
}

/** One rollout's calls, one after the other, each appending to the conversation; the largest answer's bytes. */
async function rolloutCalls(
  server: ModelServerProcess,
  connections: Connections,
  wave: number,
  index: number,
): Promise<number> {
  const base = `${server.url}/ng-rollout/mem-${wave}-${index}/training-token-capture/v1/chat/completions`;
  let largest = 0;
  for (let k = 0; k < CALLS_PER_ROLLOUT; k++) {
    const res = await postOk(base, { model: 'bench-model', messages: historyBefore(taskOf(index), k) }, connections);
    largest = Math.max(largest, res.body.length);
  }
  return largest;
}

interface Wave {
  callsMs: number;
  /** The largest answer a call of the wave relayed (every rollout's first call is in flight at once). */
  answerBytes: number;
  /** VmHWM after the wave's calls (the process's peak so far). */
  peakRssMiB: number;
  open: Memory;
  closed: Memory;
  /** Opens past max_open_rollouts refused, of OVER_CAP_OPENS (tried while the wave's rollouts are open). */
  refused: number;
}

/**
 * End the bench's connections to the model server and the upstream's idle ones from it, and wait until the model
 * server's descriptors are back to `fds` (+ a few): a memory reading then counts what the server holds, not sockets.
 */
async function dropConnections(
  connections: Connections,
  upstream: VllmUpstream,
  server: ModelServerProcess,
  fds: number,
): Promise<void> {
  await connections.close();
  upstream.closeIdleConnections();
  const deadline = Date.now() + 30_000;
  while (readdirSync(`/proc/${server.pid}/fd`).length > fds + 8) {
    if (Date.now() > deadline) throw new Error(`model server ${server.pid} kept its connections for 30 s`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * Open ROLLOUTS rollouts, make their calls all at once, read the memory with them open, close and check them, read
 * it again; each reading after the connections are gone (`fds`: the model server's descriptors before any wave).
 */
async function wave(
  servers: Servers,
  upstream: VllmUpstream,
  index: number,
  firstCalls: number,
  fds: number,
): Promise<Wave> {
  const server = servers.bounded;
  const rollouts = Array.from({ length: ROLLOUTS }, (_, i) => i);
  let connections = createDispatcher();
  await pool(rollouts, 256, (i) => postOk(`${server.url}/ng-rollout/mem-${index}-${i}/open`, {}, connections));
  const refused = await refusedOpens(server, connections);
  const started = performance.now();
  const answers = await pool(rollouts, ROLLOUTS, (i) => rolloutCalls(server, connections, index, i));
  const callsMs = performance.now() - started;
  upstream.requests.length = 0;
  const peakRssMiB = sampleProc(server.pid).peakRssMiB;
  await dropConnections(connections, upstream, server, fds);
  const open = await memoryAfterGc(servers, server.pid);
  connections = createDispatcher();
  await closeAndCheck(server, connections, index, firstCalls);
  await dropConnections(connections, upstream, server, fds);
  const closed = await memoryAfterGc(servers, server.pid);
  return { callsMs, answerBytes: Math.max(...answers), peakRssMiB, open, closed, refused };
}

const signed = (value: number): string => `${value >= 0 ? '+' : ''}${value.toFixed(1)}`;

async function rolloutsInFlight(
  servers: Servers,
  upstream: VllmUpstream,
  cap: number,
  firstCalls: number,
): Promise<{ figures: Figure[]; notes: string[] }> {
  const before = await memoryAfterGc(servers, servers.bounded.pid);
  const first = await wave(servers, upstream, 1, firstCalls, before.fds);
  const second = await wave(servers, upstream, 2, firstCalls, before.fds);
  const peakRssMiB = Math.max(first.peakRssMiB, second.peakRssMiB);
  const heldMiB = (ROLLOUTS * cap * BYTES_PER_HELD_TOKEN) / MIB;
  const inFlightMiB = (ROLLOUTS * Math.max(first.answerBytes, second.answerBytes)) / MIB;
  const heldOnlyMiB = before.rssMiB + 2 * heldMiB + SLACK_MIB;
  const boundMiB = heldOnlyMiB + IN_FLIGHT_COPIES * inFlightMiB;
  const heldEntries = ROLLOUTS * firstCalls;
  const refused = first.refused + second.refused;
  return {
    figures: [
      atMost(NAME, `peak RSS, ${ROLLOUTS} captured rollouts at once ÷ bound`, peakRssMiB / boundMiB, 1, {
        peak_rss_mib: round(peakRssMiB, 1),
        bound_mib: round(boundMiB, 1),
        baseline_rss_mib: round(before.rssMiB, 1),
        cap_entries_per_rollout: cap,
        held_entries_per_rollout: firstCalls,
        largest_answer_bytes: Math.max(first.answerBytes, second.answerBytes),
      }),
      {
        name: NAME,
        figure: 'peak RSS ÷ the same bound without the answers in flight',
        value: round(peakRssMiB / heldOnlyMiB),
        target: '— (context)',
        met: true,
        context: { bound_mib: round(heldOnlyMiB, 1) },
      },
      atMost(NAME, 'heap in use after close − before (MiB, full GC)', first.closed.heapMiB - before.heapMiB, 8, {
        heap_before_mib: round(before.heapMiB, 1),
        heap_all_open_mib: round(first.open.heapMiB, 1),
        bytes_per_held_entry: round(((first.open.heapMiB - before.heapMiB) * MIB) / heldEntries, 1),
      }),
      atMost(
        NAME,
        'heap in use after a 2nd wave − after the 1st (MiB)',
        second.closed.heapMiB - first.closed.heapMiB,
        8,
        {
          heap_after_1st_mib: round(first.closed.heapMiB, 1),
          heap_after_2nd_mib: round(second.closed.heapMiB, 1),
        },
      ),
      {
        name: NAME,
        figure: 'RSS after close − before, 1st wave (MiB, full GC)',
        value: round(first.closed.rssMiB - before.rssMiB, 1),
        target: '— (context)',
        met: true,
        context: {
          rss_before_mib: round(before.rssMiB, 1),
          rss_after_1st_mib: round(first.closed.rssMiB, 1),
          rss_after_2nd_mib: round(second.closed.rssMiB, 1),
          peak_rss_1st_mib: round(first.peakRssMiB, 1),
          peak_rss_2nd_mib: round(second.peakRssMiB, 1),
        },
      },
      atLeast(
        NAME,
        `opens past max_open_rollouts refused (share of ${2 * OVER_CAP_OPENS})`,
        refused / (2 * OVER_CAP_OPENS),
        1,
        {
          refused,
        },
      ),
    ],
    notes: [
      `10.2: 2 waves of ${ROLLOUTS} rollouts × ${CALLS_PER_ROLLOUT} captured calls, all ${ROLLOUTS} at once (${(first.callsMs / 1000).toFixed(1)} s, ${(second.callsMs / 1000).toFixed(1)} s); ` +
        `each rollout holds ${firstCalls} token entries (ids + log-probs; cap ${cap}: its 4th call is over it), ` +
        `${((heldEntries * BYTES_PER_HELD_TOKEN) / MIB).toFixed(0)} MiB as 8-byte elements; largest answer ${(Math.max(first.answerBytes, second.answerBytes) / 1024).toFixed(0)} KiB. ` +
        `Model server (after a full GC): RSS ${before.rssMiB.toFixed(0)} MiB, heap ${before.heapMiB.toFixed(1)} before; ` +
        `all open: RSS ${first.open.rssMiB.toFixed(0)}, heap ${first.open.heapMiB.toFixed(1)}; closed: RSS ${first.closed.rssMiB.toFixed(0)} (${signed(first.closed.rssMiB - before.rssMiB)}), ` +
        `heap ${first.closed.heapMiB.toFixed(1)} (${signed(first.closed.heapMiB - before.heapMiB)}); after a 2nd wave: RSS ${second.closed.rssMiB.toFixed(0)} (${signed(second.closed.rssMiB - first.closed.rssMiB)}), ` +
        `heap ${second.closed.heapMiB.toFixed(1)} (${signed(second.closed.heapMiB - first.closed.heapMiB)}); ` +
        `peak RSS ${first.peakRssMiB.toFixed(0)}, ${second.peakRssMiB.toFixed(0)} MiB (bound ${boundMiB.toFixed(0)}: ${before.rssMiB.toFixed(0)} + 2 × ${heldMiB.toFixed(0)} held at the cap ` +
        `+ ${IN_FLIGHT_COPIES} × ${inFlightMiB.toFixed(0)} answers in flight + ${SLACK_MIB}); ${refused} of ${2 * OVER_CAP_OPENS} opens past max_open_rollouts refused.`,
    ],
  };
}

export async function modelServerCost(ctx: BenchContext): Promise<ScenarioReport> {
  const { cap, firstCalls } = capFor();
  // Longer than the run, so no pooled connection is closed under a call (the model server's pool keeps them).
  const upstream = await startVllmUpstream({ keepAliveTimeoutMs: 120_000 });
  let servers: Servers | undefined;
  try {
    servers = await startServers(ctx, upstream.url, cap);
    const latency = await addedLatency(upstream, { relay: servers.relay, capture: servers.latency });
    for (const note of latency.notes) ctx.log(`  ${note}`);
    const memory = await rolloutsInFlight(servers, upstream, cap, firstCalls);
    for (const note of memory.notes) ctx.log(`  ${note}`);
    return { figures: [...latency.figures, ...memory.figures], notes: [...latency.notes, ...memory.notes] };
  } finally {
    await servers?.stop();
    await upstream.close();
  }
}
