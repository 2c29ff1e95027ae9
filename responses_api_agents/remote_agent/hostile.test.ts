/**
 * The hostile-service test (decisions D14, D19): a real `gym env start` (the counter environment and the remote agent
 * as their own processes) and a real `gym eval run --no-serve` at concurrency 16, against a service that answers each
 * rollout with one hostile reply chosen by a seeded generator: random JSON values, mutations of valid objects, JSON
 * nested 100,000 deep (as the body, inside a valid item, inside tool arguments) and exactly 512 deep, an 8 MiB string, 100 MiB bodies
 * (declared and chunked), a gzip bomb, slow and stalled bodies, invalid UTF-8, a dropped connection, 10,000 asks in
 * one answer and reserved tool names. Then: the agent process is the one that started (never restarted) and serves a
 * plain rollout; every row is exactly one line of one file; each rollout's time is within its timeouts; the agent's
 * peak RSS is printed and asserted under the 256 MiB goal. The seed is printed;
 * `TSGYM_HOSTILE_SEED=<seed>` replays a run.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import { gzipSync } from 'node:zlib';
import { seededRandom as prng } from '../../src/seeded-random.js';
import { keysOf, readJsonl, runGym, spawnGym, tempDir, type RunningGym } from '../../test/support/cli.js';
import { findFreePort } from '../../src/config/index.js';
import {
  isAlive,
  peakRssMiB,
  processesWithMarker,
  serverInstances,
  waitForEnvironment,
} from '../../test/support/environments.js';
import { finalAnswer, functionCall, toolAsk } from '../../src/testing/index.js';
import { eventually } from '../../test/support/wait.js';

const SEED = Number(process.env.TSGYM_HOSTILE_SEED ?? Math.floor(Math.random() * 2 ** 31));
const CONCURRENCY = 16;
// Long enough for the 8 MiB answer on a loaded 2-core machine (2 s was not, at load average 8), short enough that
// the stalled kinds end well within the run timeout.
const CALL_TIMEOUT_SECS = 4;
const RUN_TIMEOUT_SECS = 8;
/**
 * The agent's memory goal under a hostile service, asserted. Peaks were 193–261 MiB when the agent held a trajectory's items parsed and
 * encoded and its verify answer as text; with the items kept once (encoded only) and the answer passed on as its bytes,
 * 10 runs gave 174–215 MiB (the agent and the co-located environment together; the runs where a heavy kind met the
 * per-call deadline (then 2 s) on a loaded machine are the low ones). The regression this guards against — buffering a
 * 100 MiB body, or another whole copy of the 8 MiB answer — shows as 256 MiB and more.
 */
const RSS_GOAL_MIB = 256;
const MiB = 1024 * 1024;

type Kind = (typeof KINDS)[number];
const KINDS = [
  'plain',
  'random_json',
  'mutated',
  'deep_array',
  'deep_object',
  'deep_in_item',
  'deep_in_arguments',
  'deep_at_limit',
  'huge_string',
  'body_100mib_declared',
  'body_100mib_chunked',
  'gzip_bomb',
  'slow_body',
  'stalled',
  'invalid_utf8',
  'dropped',
  'ten_k_asks',
  'reserved_names',
] as const;
/** The outcome each kind must have; random and mutated answers may land either way. */
type Expectation = { completed: true; orError?: RegExp } | { error: RegExp; terminal: boolean };
const EXPECTED: Partial<Record<Kind, Expectation>> = {
  plain: { completed: true },
  deep_in_arguments: { completed: true },
  // 512 levels exactly: accepted, and still within bounds wrapped in Gym's row and verify envelopes.
  deep_at_limit: { completed: true },
  huge_string: { completed: true },
  reserved_names: { completed: true },
  // 10,000 sequential tool calls finish, or meet the run's own deadline on a slow machine: bounded either way.
  ten_k_asks: { completed: true, orError: /exceeded run_timeout_secs=8\.0s|resources server .* timed out after/ },
  deep_array: { error: /nested deeper than 512 levels/, terminal: true },
  deep_object: { error: /nested deeper than 512 levels/, terminal: true },
  deep_in_item: { error: /nested deeper than 512 levels/, terminal: true },
  body_100mib_declared: { error: /too large/, terminal: false },
  // Read until the 64 MiB bound, unless the per-call deadline comes first on a slow machine: bounded either way.
  body_100mib_chunked: { error: /too large|timed out after 4\.0s/, terminal: false },
  gzip_bomb: { error: /not valid JSON/, terminal: false },
  slow_body: { error: /timed out after 4\.0s/, terminal: false },
  stalled: { error: /timed out after 4\.0s/, terminal: false },
  invalid_utf8: { error: /not valid UTF-8/, terminal: false },
  // Three connection attempts, half a second apart, each dropped: on a machine at load average 10 they have outlasted
  // the 4 s per-call bound, which then ends the rollout first. Either way it is the same retryable failure.
  dropped: {
    error: /could not reach the remote service|socket|closed|timed out after 4\.0s \(remote_responses_timeout_secs/i,
    terminal: false,
  },
};
const PER_CALL_DEADLINE = /timed out after 4\.0s/;

/** The dataset line a result row came from, found by its prompt (each row's prompt carries its own seed). */
function lineOf(rows: Array<{ line: string }>, result: Record<string, unknown>): string {
  const params = result.responses_create_params as { input: Array<{ content?: unknown }> } | undefined;
  const prompt = JSON.stringify(params?.input[0]?.content);
  const found = rows.find((row) => row.line.includes(`"content":${prompt}`));
  assert.ok(found, `no dataset line has the prompt ${prompt}`);
  return found.line;
}
const DEEP = 100_000;
const deepArrayText = '['.repeat(DEEP) + ']'.repeat(DEEP);
const deepObjectText = '{"a":'.repeat(DEEP) + '1' + '}'.repeat(DEEP);
const gzipBomb = gzipSync(Buffer.alloc(100 * MiB));

const marker = randomUUID();
let environment: RunningGym | undefined;
let service: http.Server | undefined;
after(async () => {
  environment?.child.kill('SIGINT');
  await environment?.result;
  service?.closeAllConnections();
  service?.close();
});

// ---------------------------------------------------------------------------------------------------
// Seeded generators

function randomJson(random: () => number, depth: number): unknown {
  const pick = Math.floor(random() * (depth > 0 ? 8 : 5));
  switch (pick) {
    case 0:
      return null;
    case 1:
      return random() < 0.5;
    case 2:
      return [0, -1, 1e308, -0.5, 2 ** 53 + 1, 42][Math.floor(random() * 6)];
    case 3:
      return ['', 'response', 'message', 'function_call', '\u0000\ud83d\ude00"\\', 'x'.repeat(1000)][
        Math.floor(random() * 6)
      ];
    case 4:
      return String.fromCharCode(...Array.from({ length: 8 }, () => Math.floor(random() * 0x3000)));
    case 5:
      return Array.from({ length: Math.floor(random() * 4) }, () => randomJson(random, depth - 1));
    default: {
      const keys = [
        'id',
        'object',
        'output',
        'type',
        'role',
        'content',
        'call_id',
        'name',
        'arguments',
        'status',
        'usage',
      ];
      const out: Record<string, unknown> = {};
      for (let i = Math.floor(random() * 5); i > 0; i--)
        out[keys[Math.floor(random() * keys.length)]!] = randomJson(random, depth - 1);
      return out;
    }
  }
}

/** A valid answer with one to three random edits: a deleted key, a value replaced by random JSON, a type swapped. */
function mutated(random: () => number): unknown {
  const valid = random() < 0.5 ? finalAnswer('done') : toolAsk(functionCall('get_counter_value', {}, 'c_0'));
  for (let edits = 1 + Math.floor(random() * 3); edits > 0; edits--) {
    // Objects and arrays alike are indexed by their keys here (an array's keys are '0', '1', …).
    let holder = valid;
    for (let hops = Math.floor(random() * 4); hops > 0; hops--) {
      const keys = Object.keys(holder);
      const next = holder[keys[Math.floor(random() * keys.length)]!];
      if (next === null || typeof next !== 'object' || Object.keys(next).length === 0) break;
      holder = next as Record<string, unknown>;
    }
    const keys = Object.keys(holder);
    const key = keys[Math.floor(random() * keys.length)]!;
    const edit = Math.floor(random() * 3);
    if (edit === 0) delete holder[key];
    else if (edit === 1) holder[key] = randomJson(random, 2);
    else holder[key] = Array.isArray(holder[key]) ? { ...holder[key] } : [holder[key]];
  }
  return valid;
}

/**
 * How many rows of each kind a run has: the cheap kinds several times, the heavy ones (a 100 MiB body, an 8 MiB
 * string, 10,000 asks) once each, as a hostile service would mix them rather than all at the same moment.
 */
const ROWS_PER_KIND: Record<Kind, number> = {
  plain: 4,
  random_json: 8,
  mutated: 8,
  deep_array: 2,
  deep_object: 2,
  deep_in_item: 2,
  deep_in_arguments: 2,
  deep_at_limit: 2,
  huge_string: 1,
  body_100mib_declared: 1,
  body_100mib_chunked: 1,
  gzip_bomb: 2,
  slow_body: 2,
  stalled: 2,
  invalid_utf8: 2,
  dropped: 2,
  ten_k_asks: 1,
  reserved_names: 2,
};

/** The rows in a seeded order; each row names its kind and its own seed (for random and mutated answers). */
function hostileRows(seed: number): Array<{ kind: Kind; line: string }> {
  const random = prng(seed);
  // TSGYM_HOSTILE_KINDS=a,b narrows the mix while investigating one kind.
  const only = process.env.TSGYM_HOSTILE_KINDS?.split(',');
  const kinds = KINDS.filter((kind) => !only || only.includes(kind)).flatMap((kind) =>
    Array<Kind>(ROWS_PER_KIND[kind]).fill(kind),
  );
  for (let i = kinds.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [kinds[i], kinds[j]] = [kinds[j]!, kinds[i]!];
  }
  return kinds.map((kind) => {
    const content = `hostile ${kind} ${Math.floor(random() * 2 ** 31)}`;
    const row = {
      responses_create_params: { input: [{ role: 'user', content }] },
      initial_count: 5,
      expected_count: 5,
      kind,
    };
    return { kind, line: JSON.stringify(row) };
  });
}

// ---------------------------------------------------------------------------------------------------
// The hostile service

function sendJson(res: http.ServerResponse, body: string | Buffer, headers: http.OutgoingHttpHeaders = {}): void {
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers });
  res.end(body);
}

/** Write `total` bytes of filler, respecting backpressure, until done or the client goes away. */
async function streamFiller(res: http.ServerResponse, total: number): Promise<void> {
  const chunk = Buffer.alloc(MiB, 0x20);
  let closed = false;
  res.once('close', () => (closed = true));
  for (let sent = 0; sent < total && !closed; sent += chunk.length) {
    if (res.write(chunk)) continue;
    await new Promise<void>((resolve) => {
      const resume = (): void => {
        res.off('drain', resume);
        res.off('close', resume);
        resolve();
      };
      res.on('drain', resume);
      res.on('close', resume);
    });
  }
  if (!closed) res.end();
}

function play(kind: Kind, random: () => number, req: http.IncomingMessage, res: http.ServerResponse): void {
  switch (kind) {
    case 'plain':
      return sendJson(res, JSON.stringify(finalAnswer('done')));
    case 'random_json':
      return sendJson(res, JSON.stringify(randomJson(random, 5)) ?? 'null');
    case 'mutated':
      return sendJson(res, JSON.stringify(mutated(random)));
    case 'deep_array':
      return sendJson(res, deepArrayText);
    case 'deep_object':
      return sendJson(res, deepObjectText);
    case 'deep_in_item': {
      const answer = finalAnswer('done');
      (answer.output as Array<Record<string, unknown>>)[0]!.extra = '__DEEP__';
      return sendJson(res, JSON.stringify(answer).replace('"__DEEP__"', deepObjectText));
    }
    case 'deep_at_limit': {
      // response (1) > output (2) > item (3) > 509 levels more = 512.
      const answer = finalAnswer('done');
      (answer.output as Array<Record<string, unknown>>)[0]!.extra = '__DEEP__';
      return sendJson(res, JSON.stringify(answer).replace('"__DEEP__"', '{"a":'.repeat(509) + '1' + '}'.repeat(509)));
    }
    case 'deep_in_arguments':
      return sendJson(res, JSON.stringify(toolAsk(functionCall('increment_counter', deepObjectText, 'c_deep'))));
    case 'huge_string':
      return sendJson(res, JSON.stringify(finalAnswer('x'.repeat(8 * MiB))));
    case 'body_100mib_declared':
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': 100 * MiB });
      return void streamFiller(res, 100 * MiB);
    case 'body_100mib_chunked':
      res.writeHead(200, { 'content-type': 'application/json' });
      return void streamFiller(res, 100 * MiB);
    case 'gzip_bomb':
      return sendJson(res, gzipBomb, { 'content-encoding': 'gzip' });
    case 'slow_body': {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': 4096 });
      const timer = setInterval(() => res.write('{'), 100);
      res.once('close', () => clearInterval(timer));
      return;
    }
    case 'stalled':
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': 100 });
      return;
    case 'invalid_utf8': {
      const [head, tail] = JSON.stringify(finalAnswer('__BAD__')).split('__BAD__');
      return sendJson(res, Buffer.concat([Buffer.from(head!), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from(tail!)]));
    }
    case 'dropped':
      req.socket.destroy();
      return;
    case 'ten_k_asks':
      return sendJson(
        res,
        JSON.stringify(
          toolAsk(...Array.from({ length: 10_000 }, (_, i) => functionCall('get_counter_value', {}, `c_${i}`))),
        ),
      );
    case 'reserved_names': {
      const names = ['verify', 'seed_session', 'aggregate_metrics', '../admin', 'a/b', 'x'.repeat(300), ''];
      return sendJson(res, JSON.stringify(toolAsk(...names.map((name, i) => functionCall(name, {}, `c_${i}`)))));
    }
  }
}

async function startHostileService(): Promise<string> {
  service = http.createServer({ requestTimeout: 0 }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.once('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        input: Array<{ type?: string; content?: unknown }>;
      };
      const [, kind, rowSeed] = /^hostile (\w+) (\d+)$/.exec(String(body.input[0]!.content))!;
      // After Gym ran the asked tools, every kind finishes plainly.
      if (body.input.some((item) => item.type === 'function_call_output'))
        return sendJson(res, JSON.stringify(finalAnswer('done')));
      play(kind as Kind, prng(Number(rowSeed)), req, res);
    });
  });
  await new Promise<void>((resolve) => service!.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(service.address() as AddressInfo).port}`;
}

// ---------------------------------------------------------------------------------------------------

test(
  `a hostile service cannot take the agent down (seed ${SEED}; replay with TSGYM_HOSTILE_SEED=${SEED})`,
  // Only an upper bound (the run takes seconds): room for a slow start of the servers on a busy machine.
  { timeout: 300_000 },
  async (t) => {
    t.diagnostic(`hostile seed ${SEED} (replay: TSGYM_HOSTILE_SEED=${SEED})`);
    const serviceUrl = await startHostileService();
    const dir = tempDir('tsgym-hostile-');
    const rows = hostileRows(SEED);
    writeFileSync(path.join(dir, 'hostile.jsonl'), `${rows.map((row) => row.line).join('\n')}\n`);
    writeFileSync(
      path.join(dir, 'plain.jsonl'),
      `${JSON.stringify({ responses_create_params: { input: [{ role: 'user', content: 'hostile plain 1' }] }, initial_count: 2, expected_count: 2 })}\n`,
    );
    const headPort = await findFreePort();
    const head = [`++head_server.port=${headPort}`];
    const agentKey = '++remote_agent.responses_api_agents.remote_agent';
    environment = spawnGym(
      [
        'env',
        'start',
        '+config_paths=[counter_remote.yaml]',
        `${agentKey}.agent_base_url=${serviceUrl}`,
        `${agentKey}.concurrency=${CONCURRENCY}`,
        `${agentKey}.remote_responses_timeout_secs=${CALL_TIMEOUT_SECS}`,
        `${agentKey}.run_timeout_secs=${RUN_TIMEOUT_SECS}`,
        `++nemo_gym_log_dir=${path.join(dir, 'logs')}`,
        ...head,
      ],
      { cwd: dir, env: { TSGYM_TEST_MARKER: marker } },
    );
    const agent = (await waitForEnvironment(headPort)).find((i) => i.process_name === 'remote_agent')!;
    const collect = (input: string, output: string) =>
      runGym(
        [
          'eval',
          'run',
          '--no-serve',
          '-a',
          'remote_agent',
          '-i',
          input,
          '-o',
          output,
          `+num_samples_in_parallel=${CONCURRENCY}`,
          ...head,
        ],
        {
          cwd: dir,
          env: { TSGYM_TEST_MARKER: marker },
        },
      );

    const started = Date.now();
    const res = await collect('hostile.jsonl', 'hostile/r.jsonl');
    const wallSecs = (Date.now() - started) / 1000;
    assert.equal(res.code, 0, `${res.stdout}\n${res.stderr}`);

    // The agent survived every answer: the same process, never restarted, and it serves a plain rollout.
    const listed = (await serverInstances(headPort)).find((i) => i.process_name === 'remote_agent')!;
    assert.equal(
      listed.pid,
      agent.pid,
      `the agent was restarted (${listed.last_exit}); its log: ${environment.stderr().slice(-3000)}`,
    );
    assert.equal(listed.restarts, 0);
    assert.ok(isAlive(agent.pid!));
    const peak = peakRssMiB(agent.pid!);
    // Printed before the outcome checks, so a run that fails on a slow machine still reports its peak.
    t.diagnostic(`agent peak RSS ${peak === undefined ? 'n/a' : peak.toFixed(1)} MiB after the hostile mix`);
    const plain = await collect('plain.jsonl', 'plain/r.jsonl');
    assert.equal(plain.code, 0, plain.stderr);
    assert.deepEqual(
      readJsonl(path.join(dir, 'plain/r.jsonl')).map((row) => row.reward),
      [1],
    );

    // Every row ends in exactly one line of one file, with the outcome its kind must have.
    const completed = readJsonl(path.join(dir, 'hostile/r.jsonl'));
    const failures = readJsonl(path.join(dir, 'hostile/r_failures.jsonl'));
    const keys = keysOf([...completed, ...failures]);
    assert.equal(keys.length, rows.length);
    assert.equal(new Set(keys).size, rows.length);
    for (const row of completed) {
      const expected = EXPECTED[row.kind as Kind];
      assert.ok(!expected || 'completed' in expected, `${String(row.kind)} completed but should have failed`);
      if (expected) assert.equal(row.reward, 1, String(row.kind));
    }
    // A row that must complete but met the per-call deadline was starved by the mix around it (the hostile service
    // shares this test's process with the 100 MiB bodies): it was not tested, so it is replayed alone below.
    const starved: string[] = [];
    for (const row of failures) {
      const expected = EXPECTED[row.kind as Kind];
      if (!expected) continue;
      const error = String(row.error);
      if ('completed' in expected) {
        if (expected.orError?.test(error)) continue;
        assert.match(error, PER_CALL_DEADLINE, `${String(row.kind)} failed: ${error.slice(0, 300)}`);
        starved.push(lineOf(rows, row));
        continue;
      }
      assert.match(error, expected.error, String(row.kind));
      assert.equal(row._ng_failure_terminal === true, expected.terminal, `${String(row.kind)}: ${error.slice(0, 300)}`);
    }
    // Each rollout's time is bounded by its timeouts: the run timeout plus scheduling slack, which a busy machine
    // stretches, so the slack is generous; unbounded, the slow body would take 400 s and the stalled ones forever.
    for (const row of [...completed, ...failures]) {
      const secs = row._ng_rollout_duration_secs;
      if (typeof secs === 'number') assert.ok(secs <= RUN_TIMEOUT_SECS + 10, `${String(row.kind)} took ${secs}s`);
    }
    if (starved.length > 0) {
      t.diagnostic(`${starved.length} must-complete row(s) met the per-call deadline in the mix; replayed alone`);
      writeFileSync(path.join(dir, 'starved.jsonl'), `${starved.join('\n')}\n`);
      const replay = await collect('starved.jsonl', 'starved/r.jsonl');
      assert.equal(replay.code, 0, replay.stderr);
      const replayed = readJsonl(path.join(dir, 'starved/r.jsonl'));
      const replayFailures = readJsonl(path.join(dir, 'starved/r_failures.jsonl'));
      assert.deepEqual(
        replayFailures.map((row) => String(row.error).slice(0, 300)),
        [],
        'a must-complete row failed when replayed alone',
      );
      assert.deepEqual(
        replayed.map((row) => row.reward),
        starved.map(() => 1),
      );
    }
    assert.ok(
      peak === undefined || peak < RSS_GOAL_MIB,
      `agent peak RSS ${peak} MiB is over the ${RSS_GOAL_MIB} MiB goal`,
    );
    const figure =
      `hostile mix (seed ${SEED}): ${rows.length} rows at concurrency ${CONCURRENCY} in ${wallSecs.toFixed(1)}s, ` +
      `${completed.length} completed, ${failures.length} failed; agent peak RSS ${peak === undefined ? 'n/a' : peak.toFixed(1)} MiB (goal ${RSS_GOAL_MIB}, asserted)`;
    t.diagnostic(figure);

    environment.child.kill('SIGINT');
    await environment.result;
    environment = undefined;
    await eventually(() => processesWithMarker(marker).length === 0, {
      what: 'no server is left',
      timeoutMs: 30_000,
      intervalMs: 25,
    });
  },
);
