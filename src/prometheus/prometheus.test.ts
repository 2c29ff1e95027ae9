import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { findFreePort } from '../config/index.js';
import { reply, startScriptedService, toolOutputsIn, type ScriptedService } from '../testing/index.js';
import { runGym, spawnGym, tempDir, type RunningGym } from '../../test/support/cli.js';
import { addendsOf, solveCounterTask } from '../../test/support/live-run.js';
import { eventually } from '../../test/support/wait.js';

/**
 * A real Prometheus (Debian's `prometheus`) scrapes the remote agent and the counter environment, started by
 * `gym env start`, while `gym eval run --no-serve` collects 5 rollouts (one fails with an HTTP 500 at its second
 * step); its query API must then return the counters the run implies.
 */
const ENV_KEY = 'example_session_state_mgmt_resources_server.resources_servers.example_session_state_mgmt';
const AGENT_KEY = 'remote_agent.responses_api_agents.remote_agent';

let service: ScriptedService;
let env: RunningGym;
let prometheus: ChildProcess;
let promUrl: string;
let dir: string;
let ports: { head: number; agent: number; environment: number };

before(async () => {
  service = await startScriptedService((call) =>
    addendsOf(call)[0] === 13 && toolOutputsIn(call.body.input).length > 0
      ? reply.status(500, 'service exploded')
      : solveCounterTask(call),
  );
  dir = tempDir('tsgym-prometheus-');
  ports = { head: await findFreePort(), agent: await findFreePort(), environment: await findFreePort() };
  const common = ['+config_paths=[counter_remote.yaml]', `++head_server.port=${ports.head}`];
  env = spawnGym(
    [
      'env',
      'start',
      ...common,
      `++${AGENT_KEY}.agent_base_url=${service.url}`,
      `++${AGENT_KEY}.port=${ports.agent}`,
      `++${ENV_KEY}.port=${ports.environment}`,
    ],
    { cwd: process.cwd() },
  );
  let stdout = '';
  env.child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  await eventually(() => /servers ready/.test(stdout) || env.child.exitCode !== null, { what: 'gym env start' });
  assert.equal(env.child.exitCode, null, env.stderr());

  const promPort = await findFreePort();
  promUrl = `http://127.0.0.1:${promPort}`;
  const config = path.join(dir, 'prometheus.yml');
  writeFileSync(
    config,
    [
      'global: {scrape_interval: 1s, scrape_timeout: 1s}',
      'scrape_configs:',
      `  - {job_name: agent, static_configs: [{targets: ['127.0.0.1:${ports.agent}']}]}`,
      `  - {job_name: environment, static_configs: [{targets: ['127.0.0.1:${ports.environment}']}]}`,
      '',
    ].join('\n'),
  );
  prometheus = spawn(
    'prometheus',
    [
      `--config.file=${config}`,
      `--storage.tsdb.path=${path.join(dir, 'tsdb')}`,
      `--web.listen-address=127.0.0.1:${promPort}`,
    ],
    { stdio: 'ignore' },
  );
  await eventually(async () => (await fetch(`${promUrl}/-/ready`).catch(() => undefined))?.ok === true, {
    what: 'Prometheus ready',
  });

  const run = await runGym(
    [
      'eval',
      'run',
      '--no-serve',
      ...common,
      '-a',
      'remote_agent',
      '-i',
      path.resolve('resources_servers/example_session_state_mgmt/data/example.jsonl'),
      '-o',
      path.join(dir, 'out/rollouts.jsonl'),
    ],
    { cwd: process.cwd() },
  );
  assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
});

after(async () => {
  prometheus?.kill('SIGTERM');
  env?.child.kill('SIGINT');
  await env?.result;
  await service?.close();
});

async function query(expr: string): Promise<Map<string, number>> {
  const res = await fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(expr)}`);
  const body = (await res.json()) as {
    data: { result: Array<{ metric: Record<string, string>; value: [number, string] }> };
  };
  return new Map(
    body.data.result.map((r) => [
      Object.entries(r.metric)
        .filter(([k]) => k !== 'instance' && k !== '__name__')
        .map(([k, v]) => `${k}=${v}`)
        .join(','),
      Number(r.value[1]),
    ]),
  );
}

test('Prometheus scrapes both servers; its query API returns the rollouts, hops, statuses and process metrics', async () => {
  // Each target is scraped at its own offset within the interval: wait until both have reported the whole run.
  await eventually(
    async () =>
      (await query('gym_agent_rollouts_finished_total')).get('job=agent,outcome_class=completed') === 4 &&
      (await query('gym_env_requests_total')).get('job=environment,route=verify,status_class=2xx') === 4,
    { what: 'the run in Prometheus', timeoutMs: 20_000, intervalMs: 200 },
  );
  const finished = await query('gym_agent_rollouts_finished_total');
  assert.equal(finished.get('job=agent,outcome_class=remote_agent_error'), 1);
  assert.equal((await query('gym_agent_rollouts_in_flight')).get('job=agent'), 0);
  const statuses = await query('gym_agent_service_responses_total');
  assert.equal(statuses.get('job=agent,status_code=500'), 1);
  assert.ok((statuses.get('job=agent,status_code=200') ?? 0) >= 10, JSON.stringify([...statuses]));
  const hops = await query('gym_agent_hop_duration_seconds_count');
  assert.equal(hops.get('hop=seed,job=agent'), 5);
  assert.equal(hops.get('hop=verify,job=agent'), 4);
  assert.ok((hops.get('hop=tool,job=agent') ?? 0) > 0);
  const env = await query('gym_env_requests_total');
  assert.equal(env.get('job=environment,route=seed,status_class=2xx'), 5);
  assert.equal(env.get('job=environment,route=verify,status_class=2xx'), 4);
  const up = await query('up');
  assert.equal(up.size, 2);
  for (const value of up.values()) assert.equal(value, 1);
  const rss = await query('process_resident_memory_bytes');
  assert.equal(rss.size, 2);
  assert.ok((await query('nodejs_eventloop_lag_seconds')).size === 2);
  // Labels stay bounded: no series names a task, a tool or a URL.
  const series = (await (await fetch(`${promUrl}/api/v1/series?match[]={__name__=~"gym_.*"}`)).json()) as {
    data: Array<Record<string, string>>;
  };
  const labels = new Set(series.data.flatMap((s) => Object.keys(s)));
  for (const label of labels)
    assert.ok(
      [
        '__name__',
        'instance',
        'job',
        'outcome_class',
        'hop',
        'status_code',
        'kind',
        'route',
        'status_class',
        'le',
      ].includes(label),
      label,
    );
});
