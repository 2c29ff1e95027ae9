/**
 * NeMo Gym's collector drives a co-located pair (D23) over HTTP as it would its own servers. A Python script with the
 * standard library only plays `ng_collect_rollouts` against `gym env start` of counter_remote.yaml: one
 * `POST <agent>/run` per materialized row, with no cookies, no timeout and none of Gym's own headers, then calls the
 * environment on its own port the way NeMo Gym's simple_agent does (`/seed_session`, the tools, `/verify`, the
 * session cookie carried), and `gym env status` lists both addresses. That the two servers share a process must not
 * show in any answer.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, test } from 'node:test';
import { runGym, spawnGym, tempDir, type RunningGym } from '../../test/support/cli.js';
import { waitForEnvironment } from '../../test/support/environments.js';
import type { InstanceRecord } from '../server/head-server.js';
import { solveCounterTask } from '../../test/support/live-run.js';
import { findFreePort } from '../config/index.js';
import { startScriptedService, type ScriptedService } from '../testing/index.js';

const NEMO_GYM_LIKE_COLLECTOR = String.raw`
import json, sys, urllib.request

agent_url, env_url, data_path = sys.argv[1:4]

def post(url, body, cookie=None):
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json", **({"Cookie": cookie} if cookie else {})})
    with urllib.request.urlopen(request) as response:  # no timeout, as the reference collector
        return response.status, response.headers.get_all("Set-Cookie") or [], json.loads(response.read())

runs = []
with open(data_path) as rows:
    for task_index, line in enumerate(rows):
        row = json.loads(line)
        row.update({"agent_ref": {"type": "responses_api_agents", "name": "remote_agent"},
                    "_ng_task_index": task_index, "_ng_rollout_index": 0})
        status, cookies, result = post(agent_url + "/run", row)
        runs.append({"status": status, "set_cookie": cookies, "result": result})

# The environment on its own port, as simple_agent calls it: the session cookie from /seed_session carried along.
row = json.loads(open(data_path).readline())
status, cookies, _ = post(env_url + "/seed_session", row)
cookie = "; ".join(c.split(";")[0] for c in cookies)
post(env_url + "/increment_counter", {"count": 2}, cookie)
_, _, value = post(env_url + "/get_counter_value", {}, cookie)
_, _, other = post(env_url + "/get_counter_value", {})
post(env_url + "/increment_counter", {"count": 1}, cookie)
response = runs[0]["result"]["response"]  # a real response object, from the first rollout
_, _, verified = post(env_url + "/verify", {**row, "response": response}, cookie)
print(json.dumps({"runs": runs, "seed_status": status, "seed_cookies": len(cookies), "value": value, "other": other,
                  "verify_reward": verified.get("reward")}))
`;

let service: ScriptedService;
let gym: RunningGym;
let instances: InstanceRecord[];
let dir: string;
let headPort: number;

before(async () => {
  service = await startScriptedService(solveCounterTask);
  dir = tempDir('tsgym-foreign-collector-');
  headPort = await findFreePort();
  gym = spawnGym(
    [
      'env',
      'start',
      '+config_paths=[counter_remote.yaml]',
      `++remote_agent.responses_api_agents.remote_agent.agent_base_url=${service.url}`,
      `++head_server.port=${headPort}`,
      `++nemo_gym_log_dir=${path.join(dir, 'logs')}`,
    ],
    { cwd: dir },
  );
  instances = await waitForEnvironment(headPort, 120_000);
});

after(async () => {
  gym?.child.kill('SIGINT');
  await gym?.result;
  await service?.close();
});

test('a NeMo Gym-style collector gets the reference /run answers from a co-located agent, the environment its own HTTP, gym env status both addresses', async () => {
  const agent = instances.find((i) => i.process_name === 'remote_agent')!;
  const environment = instances.find((i) => i.process_name !== 'remote_agent')!;
  assert.equal(agent.pid, environment.pid, 'the pair shares one process (the default)');
  assert.notEqual(agent.port, environment.port);

  const data = path.resolve('resources_servers/example_session_state_mgmt/data/example.jsonl');
  const rows = readFileSync(data, 'utf8').trim().split('\n');
  const { stdout } = await promisify(execFile)(
    'python3',
    ['-c', NEMO_GYM_LIKE_COLLECTOR, agent.url, environment.url, data],
    {
      timeout: 300_000,
    },
  );
  const report = JSON.parse(stdout) as {
    runs: Array<{ status: number; set_cookie: string[]; result: Record<string, unknown> }>;
    seed_status: number;
    seed_cookies: number;
    value: unknown;
    other: unknown;
    verify_reward: unknown;
  };
  assert.equal(report.runs.length, rows.length);
  for (const [index, run] of report.runs.entries()) {
    const expected = JSON.parse(rows[index]!) as Record<string, unknown>;
    assert.equal(run.status, 200);
    assert.deepEqual(run.set_cookie, [], '/run sets no cookie on its caller');
    assert.equal(run.result.reward, 1.0, JSON.stringify(run.result).slice(0, 500));
    assert.equal(run.result._ng_task_index, index);
    assert.equal(run.result.expected_count, expected.expected_count);
    // The collector asked for nothing of Gym's: no step latencies spliced in, no failure marks.
    for (const key of ['_ng_step_latency_secs', '_ng_failure_class', '_ng_usage_filled'])
      assert.equal(run.result[key], undefined, key);
    const response = run.result.response as { output: Array<{ type: string }> };
    assert.ok(response.output.some((item) => item.type === 'function_call_output'));
  }
  // gym env status lists both servers, each with its own address, as it would two processes.
  const status = await runGym(['env', 'status', '--json', `++head_server.port=${headPort}`], { cwd: dir });
  assert.equal(status.code, 0, status.stderr);
  const listed = JSON.parse(status.stdout) as InstanceRecord[];
  assert.deepEqual(
    listed.map((i) => [i.process_name, i.url]).sort(),
    [
      [agent.process_name, agent.url],
      [environment.process_name, environment.url],
    ].sort(),
  );

  assert.equal(report.seed_status, 200);
  assert.equal(report.seed_cookies, 1, 'the environment keeps its session cookie over HTTP');
  assert.deepEqual(report.value, { count: 5 }, 'the seeded 3, plus 2, in the cookie’s session');
  assert.deepEqual(report.other, { count: 0 }, 'a request without the cookie is another session');
  assert.equal(report.verify_reward, 1.0, 'the session reached the expected 6 (3 + 2 + 1)');
});
