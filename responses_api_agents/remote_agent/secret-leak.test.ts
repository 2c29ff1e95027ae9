/**
 * Credentials on the service hop (D21) end to end: the counter environment and the remote agent under a real `gym env start`, an https agent
 * service behind a private CA (made by openssl here) that wants a bearer token and an extra header, and a real
 * `gym eval run --no-serve`. One task's calls are refused with a 401 that echoes the credential. Then everything the
 * run wrote (output dir, logs dir) and everything it served (every head-server endpoint, `gym env status`,
 * `gym env resolve`, the viewer's pages) is searched for the two secret values: they appear nowhere.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import {
  COUNTER_TASKS,
  readJsonl,
  runGym,
  runRemoteAgentEval,
  spawnGym,
  startGymEnv,
  tempDir,
} from '../../test/support/cli.js';
import { findFreePort, installRoot } from '../../src/config/index.js';
import { request } from '../../src/http/client.js';
import { counterTaskReply, firstAddend } from '../../src/testing/counter-brain.js';
import {
  makeTestCa,
  reply,
  startScriptedService,
  type ScriptedService,
  type ServiceCall,
} from '../../src/testing/index.js';
import { eventually } from '../../test/support/wait.js';

const TOKEN = `bearer-${process.pid}-${Date.now()}-s3cr3t`;
const TENANT_KEY = `tenant-${process.pid}-${Date.now()}-k3y`;
const SECRETS = [TOKEN, TENANT_KEY];

const services: ScriptedService[] = [];
after(async () => {
  for (const service of services) await service.close();
});

/** Every file under `dir`, recursively. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    return statSync(full).isDirectory() ? filesUnder(full) : [full];
  });
}

function assertNoSecret(text: string, where: string): void {
  for (const secret of SECRETS) assert.ok(!text.includes(secret), `a secret value appears in ${where}`);
}

/** The counter tasks, solved; the task starting "add 13" is refused with a 401 echoing the credential. */
function counterBrain(call: ServiceCall): unknown {
  if (call.headers.authorization !== `Bearer ${TOKEN}` || call.headers['x-tenant-key'] !== TENANT_KEY) {
    return reply.status(401, 'bad credential');
  }
  if (firstAddend(call) === 13) {
    // A careless service echoing what it received: the row must not carry it.
    return reply.status(
      401,
      `token ${String(call.headers.authorization)} with key ${String(call.headers['x-tenant-key'])} is not allowed this task`,
    );
  }
  return counterTaskReply(call);
}

test('secrets never appear in anything a run writes or serves', async () => {
  const dir = tempDir('tsgym-secrets-');
  const ca = makeTestCa(dir, 'agent');
  const service = await startScriptedService(counterBrain, { tls: { key: ca.key, cert: ca.cert } });
  services.push(service);
  const headPort = await findFreePort();
  const env = { AGENT_TOKEN: TOKEN, AGENT_TENANT_KEY: TENANT_KEY };
  const agentKey = '++remote_agent.responses_api_agents.remote_agent';
  const config = [
    `+config_paths=[${path.join(installRoot(), 'counter_remote.yaml')}]`,
    `${agentKey}.agent_base_url=${service.url}`,
    `${agentKey}.agent_api_key_env=AGENT_TOKEN`,
    `${agentKey}.agent_headers={X-Tenant-Key: '\${oc.env:AGENT_TENANT_KEY}'}`,
    `${agentKey}.agent_ca_file=${ca.caFile}`,
    `++head_server.port=${headPort}`,
    // Full error bodies into the logs too: they must be scrubbed as well.
    '++global_aiohttp_client_request_debug=true',
  ];
  const logDir = path.join(dir, 'logs');
  const start = await startGymEnv(config, { cwd: dir, env, logDir, servers: 2, timeoutMs: 60_000 });
  try {
    const run = await runRemoteAgentEval(headPort, COUNTER_TASKS, 'out/rollouts.jsonl', { cwd: dir, env });
    assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
    const rollouts = readJsonl(path.join(dir, 'out/rollouts.jsonl'));
    const failures = readJsonl(path.join(dir, 'out/rollouts_failures.jsonl'));
    assert.equal(rollouts.length, 4, JSON.stringify(failures));
    for (const row of rollouts) assert.equal(row.reward, 1);
    assert.equal(failures.length, 1);
    assert.match(
      String(failures[0]!.error),
      /HTTP 401 \(the service refused the credential sent from agent_api_key_env \(AGENT_TOKEN\)/,
    );
    assert.match(String(failures[0]!.error), /token Bearer \*\*\*\* with key \*\*\*\*/);
    assertNoSecret(run.stdout + run.stderr, 'gym eval run output');

    const head = `http://127.0.0.1:${headPort}`;
    for (const endpoint of ['/', '/health', '/global_config_dict_yaml', '/server_instances']) {
      const res = await request(`${head}${endpoint}`, { timeoutMs: 30_000 });
      assert.equal(res.status, 200, endpoint);
      assertNoSecret(res.text(), `the head server's ${endpoint}`);
    }
    const served = (await request(`${head}/global_config_dict_yaml`, { timeoutMs: 30_000 })).text();
    assert.match(served, /X-Tenant-Key: (\\")?\*\*\*\*/, 'the header name stays visible, its value masked');
    for (const args of [
      ['env', 'status'],
      ['env', 'status', '--json'],
    ]) {
      const status = await runGym([...args, `++head_server.port=${headPort}`], { cwd: dir, env });
      assert.equal(status.code, 0, status.stderr);
      assertNoSecret(status.stdout + status.stderr, args.join(' '));
    }
    const resolved = await runGym(['env', 'resolve', ...config], { cwd: dir, env });
    assert.equal(resolved.code, 0, resolved.stderr);
    assert.match(resolved.stdout, /agent_headers:\s+X-Tenant-Key: "?\*\*\*\*/);
    assertNoSecret(resolved.stdout + resolved.stderr, 'gym env resolve');

    const view = spawnGym(['view', 'out/rollouts.jsonl', '--port', '0'], { cwd: dir });
    let viewOut = '';
    view.child.stdout!.on('data', (chunk: string) => (viewOut += chunk));
    try {
      await eventually(() => /\n/.test(viewOut) || view.child.exitCode !== null, {
        what: 'the viewer URL',
        timeoutMs: 60_000,
      });
      const base = /at (http:\/\/127\.0\.0\.1:\d+)/.exec(viewOut)?.[1];
      assert.ok(base, viewOut + view.stderr());
      const index = (await request(`${base}/`, { timeoutMs: 30_000 })).text();
      assertNoSecret(index, 'the viewer index');
      const links = [...new Set([...index.matchAll(/href="(\/[^"]*)"/g)].map((m) => m[1]!.replace(/&amp;/g, '&')))];
      assert.ok(links.length >= 5, 'the index links the rollouts');
      for (const link of links)
        assertNoSecret((await request(`${base}${link}`, { timeoutMs: 30_000 })).text(), `the viewer page ${link}`);
    } finally {
      view.child.kill('SIGTERM');
      await view.result;
    }
  } finally {
    await start.stop();
  }
  assertNoSecret(start.stdout() + start.gym.stderr(), 'gym env start output');
  const files = filesUnder(dir).filter((file) => !file.endsWith('.key'));
  assert.ok(
    files.some((file) => file.startsWith(logDir)),
    'the servers wrote logs',
  );
  for (const file of files) assertNoSecret(readFileSync(file, 'latin1'), file);
  // The debug log line with the full 401 body is there, scrubbed.
  assert.match(
    readFileSync(path.join(logDir, 'remote_agent.log'), 'utf8'),
    /HTTP 401 from .* full body: token Bearer \*\*\*\*/,
  );
});

test('gym env start refuses an unset agent_api_key_env variable, naming it, and a missing agent_ca_file, naming the path', async () => {
  const dir = tempDir('tsgym-secrets-');
  const agentKey = '++remote_agent.responses_api_agents.remote_agent';
  const base = [
    `+config_paths=[${path.join(installRoot(), 'counter_remote.yaml')}]`,
    `++nemo_gym_log_dir=${path.join(dir, 'logs')}`,
  ];
  const unset = await runGym(
    [
      'env',
      'start',
      ...base,
      `++head_server.port=${await findFreePort()}`,
      `${agentKey}.agent_api_key_env=TSGYM_NEVER_SET_TOKEN`,
    ],
    { cwd: dir, env: { TSGYM_NEVER_SET_TOKEN: undefined } },
  );
  assert.equal(unset.code, 1);
  assert.match(unset.stderr, /Server 'remote_agent' exited with code 1 during start-up/);
  assert.match(
    unset.stderr,
    /agent_api_key_env names the environment variable TSGYM_NEVER_SET_TOKEN, which is not set/,
  );
  const missingCa = await runGym(
    [
      'env',
      'start',
      ...base,
      `++head_server.port=${await findFreePort()}`,
      `${agentKey}.agent_ca_file=${path.join(dir, 'nope.pem')}`,
    ],
    { cwd: dir },
  );
  assert.equal(missingCa.code, 1);
  assert.match(missingCa.stderr, new RegExp(`agent_ca_file = ${path.join(dir, 'nope.pem')} does not exist`));
});
