/**
 * Structured logs end to end, through real processes: `gym env start --log-format json` (the counter environment and
 * the remote agent, co-located) serves `gym eval run --no-serve --log-format json` against a scripted service; then
 * every line either process wrote, on either stream and in every server log file, must be one JSON event, and one
 * rollout must be followable by its trace id from the collector through the agent to the environment. Also: text
 * mode prints no JSON at all, a bad value is refused with one paragraph, and hostile `baggage` headers neither hurt
 * the server nor reach its events.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import { findFreePort } from '../config/index.js';
import { startScriptedService, type ScriptedService } from '../testing/index.js';
import { runGym, spawnGym, tempDir, type GymResult } from '../../test/support/cli.js';
import { KIT_URL, startEnvironmentProcess } from '../../test/support/environment-process.js';
import { fixtureServer, makeScratch, waitForEnvironment } from '../../test/support/environments.js';
import { solveCounterTask } from '../../test/support/live-run.js';

const DATA = 'resources_servers/example_session_state_mgmt/data/example.jsonl';
const AGENT_KEY = 'remote_agent.responses_api_agents.remote_agent';
const SECRET = 's3cret-header-value-7f1e';

const services: ScriptedService[] = [];
after(async () => {
  for (const service of services) await service.close();
});

interface Event {
  time: string;
  level: string;
  service: string;
  msg: string;
  [field: string]: unknown;
}

/** Every non-empty line of `text` as an event; a line that is not one fails the test, naming where it was. */
function events(text: string, where: string): Event[] {
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line, index) => {
      let value: unknown;
      assert.doesNotThrow(() => (value = JSON.parse(line)), `${where} line ${index + 1} is not JSON: ${line}`);
      const event = value as Event;
      assert.ok(typeof event === 'object' && event !== null && !Array.isArray(event), `${where}: ${line}`);
      assert.match(event.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, `${where}: ${line}`);
      assert.ok(['debug', 'info', 'warn', 'error'].includes(event.level), `${where}: ${line}`);
      assert.equal(typeof event.service, 'string', `${where}: ${line}`);
      assert.equal(typeof event.msg, 'string', `${where}: ${line}`);
      return event;
    });
}

function logFiles(dir: string): string[] {
  const root = path.join(dir, 'logs');
  return readdirSync(root).flatMap((run) =>
    readdirSync(path.join(root, run)).map((file) => path.join(root, run, file)),
  );
}

test('json logs: every line of every process is an event, and one rollout is followed by its trace id', async () => {
  const service = await startScriptedService((call) => solveCounterTask(call));
  services.push(service);
  const dir = tempDir('tsgym-logs-');
  const headPort = await findFreePort();
  const env = spawnGym(
    [
      'env',
      'start',
      '+config_paths=[counter_remote.yaml]',
      `++${AGENT_KEY}.agent_base_url=${service.url}`,
      `++${AGENT_KEY}.agent_headers={X-Team-Token: ${SECRET}}`,
      `++head_server.port=${headPort}`,
      '--log-format',
      'json',
    ],
    { cwd: dir },
  );
  let evalRun: GymResult | undefined;
  try {
    const instances = await waitForEnvironment(headPort);
    evalRun = await runGym(
      [
        'eval',
        'run',
        '--no-serve',
        `++head_server.port=${headPort}`,
        ...['-a', 'remote_agent', '-i', DATA, '-o', 'out/rollouts.jsonl', '--limit', '3', '--log-format', 'json'],
      ],
      { cwd: dir },
    );
    assert.equal(evalRun.code, 0, `${evalRun.stdout}\n${evalRun.stderr}`);

    // Hostile baggage and traceparent: answered as usual, and nothing of them reaches the event.
    const envUrl = instances.find((i) => i.process_name === 'example_session_state_mgmt_resources_server')!.url;
    const junk = Array.from({ length: 70 }, (_, i) => `k${i}=v`).join(',');
    const hostile = [
      `gym.task_index=99999999999999999999,${'x='.repeat(5000)},__proto__=1,constructor=2,gym.rollout_index=-1,gym.attempt=1e3`,
      `${junk},gym.task_index=5`,
      ',,,;;;===\u00ff',
    ];
    for (const [index, baggage] of hostile.entries()) {
      const res = await fetch(`${envUrl}/hostile_probe_${index}`, {
        method: 'POST',
        headers: {
          baggage,
          traceparent: `00-${'0'.repeat(32)}-${'1'.repeat(16)}-01`,
          'content-type': 'application/json',
        },
        body: '{}',
      });
      assert.equal(res.status, 404);
      await res.arrayBuffer();
    }
    const stop = await runGym(['env', 'stop', `++head_server.port=${headPort}`], { cwd: dir });
    assert.equal(stop.code, 0, stop.stderr);
  } finally {
    env.child.kill('SIGINT');
  }
  const envResult = await env.result;
  assert.equal(envResult.code, 0, envResult.stderr);

  // Every stream and every log file: one JSON event per line.
  const envEvents = [...events(envResult.stdout, 'env start stdout'), ...events(envResult.stderr, 'env start stderr')];
  const evalResult = evalRun;
  const collectorEvents = [...events(evalResult.stdout, 'eval stdout'), ...events(evalResult.stderr, 'eval stderr')];
  const files = logFiles(dir);
  assert.equal(files.length, 2, files.join(', '));
  const fileEvents = new Map(files.map((file) => [path.basename(file), events(readFileSync(file, 'utf8'), file)]));
  for (const text of [envResult.stdout, envResult.stderr, evalResult.stdout, evalResult.stderr])
    assert.ok(!text.includes(SECRET), 'an auth header value reached a log');
  for (const file of files) assert.ok(!readFileSync(file, 'utf8').includes(SECRET), `${file} holds a header value`);
  assert.ok(envEvents.some((e) => e.service === 'supervisor' && /servers ready/.test(e.msg)));

  // One rollout, by its trace id: the collector's, the agent's and the environment's events.
  const finished = collectorEvents.filter((e) => e.msg === 'rollout finished');
  assert.deepEqual(finished.map((e) => e.task_index).sort(), [0, 1, 2], JSON.stringify(finished));
  const rollout = finished.find((e) => e.task_index === 1)!;
  assert.equal(rollout.service, 'collector');
  assert.equal(rollout.rollout_index, 0);
  assert.equal(rollout.attempt, 0);
  assert.equal(rollout.agent, 'remote_agent');
  assert.equal(rollout.outcome, 'completed');
  assert.equal(rollout.reward, 1);
  assert.equal(typeof rollout.duration_ms, 'number');
  const traceId = rollout.trace_id as string;
  assert.match(traceId, /^[0-9a-f]{32}$/);

  const agentEvents = envEvents.filter((e) => e.trace_id === traceId && e.service === 'remote_agent');
  assert.equal(agentEvents.length, 1, JSON.stringify(agentEvents));
  assert.equal(agentEvents[0]!.msg, 'run served');
  assert.equal(agentEvents[0]!.task_index, 1);
  assert.equal(agentEvents[0]!.rollout_index, 0);
  assert.equal(agentEvents[0]!.outcome, 'completed');
  assert.equal(typeof agentEvents[0]!.duration_ms, 'number');

  const envName = 'example_session_state_mgmt_resources_server';
  const requests = envEvents.filter((e) => e.trace_id === traceId && e.service === envName);
  const paths = requests.map((e) => e.path);
  assert.ok(paths.includes('/seed_session') && paths.includes('/verify'), paths.join(', '));
  assert.ok(paths.includes('/increment_counter'), paths.join(', '));
  for (const request of requests) {
    assert.equal(request.msg, 'request');
    assert.equal(request.method, 'POST');
    assert.equal(request.status, 200);
    assert.equal(request.task_index, 1);
    assert.equal(request.rollout_index, 0);
    assert.equal(request.attempt, 0);
    assert.equal(typeof request.duration_ms, 'number');
  }
  // The log files hold the same events (the pair shares a process, so each file gets both servers' lines).
  const envFile = fileEvents.get(`${envName}.log`)!;
  assert.equal(envFile.filter((e) => e.trace_id === traceId).length, requests.length + 1);

  for (let index = 0; index < 3; index++) {
    const probe = envEvents.find((e) => e.path === `/hostile_probe_${index}`);
    assert.ok(probe, `no event for hostile probe ${index}`);
    assert.equal(probe.status, 404);
    for (const key of ['task_index', 'rollout_index', 'attempt', 'trace_id']) assert.equal(probe[key], undefined, key);
    assert.deepEqual(Object.keys(probe).sort(), [
      'duration_ms',
      'level',
      'method',
      'msg',
      'path',
      'service',
      'status',
      'time',
    ]);
  }
});

test('text mode (the default) prints what it always did: no JSON line anywhere, no per-rollout events', async () => {
  const service = await startScriptedService((call) => solveCounterTask(call));
  services.push(service);
  const dir = tempDir('tsgym-logs-text-');
  const res = await runGym(
    [
      'eval',
      'run',
      '+config_paths=[counter_remote.yaml]',
      `++${AGENT_KEY}.agent_base_url=${service.url}`,
      `++head_server.port=${await findFreePort()}`,
      ...['-a', 'remote_agent', '-i', DATA, '-o', 'out/rollouts.jsonl', '--limit', '2'],
    ],
    { cwd: dir },
  );
  assert.equal(res.code, 0, `${res.stdout}\n${res.stderr}`);
  const texts = [res.stdout, res.stderr, ...logFiles(dir).map((file) => readFileSync(file, 'utf8'))];
  for (const text of texts) {
    for (const line of text.split('\n')) assert.ok(!line.startsWith('{"time"'), `a JSON event in text mode: ${line}`);
    assert.ok(!text.includes('rollout finished') && !text.includes('run served'), text);
  }
  assert.match(res.stderr, /^\(example_session_state_mgmt_resources_server\+remote_agent\) \S+ listening on http:/m);
  assert.match(res.stdout, /^Rollouts: 2 tasks, 2 rollouts expected: 2 completed, 0 failed/m);
  const envLog = readFileSync(
    logFiles(dir).find((f) => f.endsWith('example_session_state_mgmt_resources_server.log'))!,
    'utf8',
  );
  assert.match(envLog, /^example_session_state_mgmt_resources_server listening on http:\/\/127\.0\.0\.1:\d+$/m);
});

test('a bad log format is refused with one paragraph naming the flag, the key or the variable', async () => {
  const dir = tempDir('tsgym-logs-bad-');
  const evalArgs = ['eval', 'run', '--no-serve', '-a', 'remote_agent', '-i', DATA, '-o', 'out/r.jsonl'];
  const cases: Array<{ args: string[]; env?: Record<string, string>; names: RegExp; got: string }> = [
    {
      args: [...evalArgs, '--log-format', 'yaml'],
      names: /^Error: --log-format \(config key 'log_format'\)/,
      got: '"yaml"',
    },
    { args: [...evalArgs, '++log_format=3'], names: /^Error: --log-format \(config key 'log_format'\)/, got: '3' },
    {
      args: ['env', 'start', '+config_paths=[counter_remote.yaml]'],
      env: { TSGYM_LOG_FORMAT: 'xml' },
      names: /^Error: The environment variable TSGYM_LOG_FORMAT/,
      got: '"xml"',
    },
    {
      args: ['worker', '--queue', 'redis://127.0.0.1:1', '--log-format', 'JSONL'],
      names: /^Error: --log-format/,
      got: '"JSONL"',
    },
  ];
  for (const { args, env, names, got } of cases) {
    const res = await runGym(args, { cwd: dir, ...(env ? { env } : {}) });
    assert.equal(res.code, 1, `${args.join(' ')}: ${res.stdout}\n${res.stderr}`);
    assert.match(res.stderr, names);
    assert.ok(res.stderr.includes(`must be one of text or json, got ${got}.`), res.stderr);
    assert.equal(res.stderr.trimEnd().split('\n').length, 1, `one paragraph: ${res.stderr}`);
  }
});

test('a server process started with a bad TSGYM_LOG_FORMAT exits 1 naming the variable', async () => {
  const source = `import { defineEnvironment, runEnvironment, z } from ${JSON.stringify(KIT_URL)};
void runEnvironment(defineEnvironment({ name: 'probe', tools: () => ({}), verify: () => ({ reward: 1 }) }));
`;
  const previous = process.env.TSGYM_LOG_FORMAT;
  process.env.TSGYM_LOG_FORMAT = 'loud';
  let proc: Awaited<ReturnType<typeof startEnvironmentProcess>>;
  try {
    proc = await startEnvironmentProcess(source, 'probe');
  } finally {
    if (previous === undefined) delete process.env.TSGYM_LOG_FORMAT;
    else process.env.TSGYM_LOG_FORMAT = previous;
  }
  assert.equal(await proc.exited, 1);
  assert.match(
    proc.output().stderr,
    /^Error: The environment variable TSGYM_LOG_FORMAT must be one of text or json, got "loud"\./,
  );
});

test('json logs: a server that prints plain lines and dies has them wrapped, and the error still quotes them', async () => {
  const scratch = makeScratch();
  try {
    const config = scratch.writeConfig('crash.yaml', {
      crasher: fixtureServer('crash', { database: '/nowhere/db' }),
    });
    const res = await runGym(
      ['env', 'start', '--config', config, `++head_server.port=${await findFreePort()}`, '--log-format', 'json'],
      { cwd: scratch.dir },
    );
    assert.equal(res.code, 1, `${res.stdout}\n${res.stderr}`);
    const all = [...events(res.stdout, 'env start stdout'), ...events(res.stderr, 'env start stderr')];
    const logged = logFiles(scratch.dir).flatMap((file) => events(readFileSync(file, 'utf8'), file));
    for (const list of [all, logged]) {
      const fatal = list.find((e) => e.service === 'crasher' && e.msg === 'fatal: no database at /nowhere/db');
      assert.ok(fatal, JSON.stringify(list));
      assert.equal(fatal.level, 'error');
      assert.equal(fatal.stream, 'stderr');
      assert.ok(list.some((e) => e.service === 'crasher' && e.msg === 'loading the database' && e.level === 'info'));
    }
    // The supervisor's own error names the server and quotes its last lines as text, not as nested JSON.
    const failure = all.find((e) => e.service === 'supervisor' && /crasher/.test(e.msg) && e.level === 'error');
    assert.ok(failure, JSON.stringify(all));
    assert.match(failure.msg, /fatal: no database at \/nowhere\/db/);
    assert.doesNotMatch(failure.msg, /\{"time"/);
  } finally {
    scratch.remove();
  }
});
