/**
 * NeMo Gym's Python environments under tsgym (decision C5, C4), end to end with real processes: the standard-library
 * Python resources server in this directory under `gym env start` (start-up contract: NEMO_GYM_CONFIG_DICT,
 * NEMO_GYM_CONFIG_PATH, host/port from the config, the head server's /global_config_dict_yaml), tsgym's remote agent,
 * a scripted agent service, and `gym eval run --no-serve`. Its verify response leaves dataset fields out, so every
 * success row must be exactly that response plus the collector's stamps. Then NeMo Gym's conventions: a same-named
 * server in NEMO_GYM_EXTRA_ROOTS loses to tsgym's own unless `server_dir` names it, and `+uv_venv_dir` with
 * `+skip_venv_if_present=true` runs the server with that venv's python.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import { readJsonl, runGym, spawnGym, tempDir, type RunningGym } from '../../test/support/cli.js';
import { findFreePort, installRoot } from '../../src/config/index.js';
import { normalizeInput } from '../../src/service/index.js';
import { quoteArg } from '../../src/supervisor/plan.js';
import {
  finalAnswer,
  functionCall,
  startScriptedService,
  toolAsk,
  toolOutputsIn,
  type ScriptedService,
} from '../../src/testing/index.js';
import { eventually, fileSays } from '../../test/support/wait.js';

const HERE = path.join(installRoot(), 'resources_servers', 'python_stdlib_example');
const CONFIG = path.join(HERE, 'configs', 'python_stdlib_example.yaml');
const DATA = path.join(HERE, 'data', 'example.jsonl');
const AGENT = '++remote_agent.responses_api_agents.remote_agent';
const ENV_NAME = 'python_stdlib_example_resources_server';

const services: ScriptedService[] = [];
const running: RunningGym[] = [];
after(async () => {
  for (const gym of running) if (gym.child.exitCode === null) gym.child.kill('SIGKILL');
  for (const service of services) await service.close();
});

/** Asks count_letters for the quoted word, then answers with the count it got. */
async function letterCountingService(): Promise<ScriptedService> {
  const service = await startScriptedService((call) => {
    const [output] = toolOutputsIn(call.body.input);
    if (output) return finalAnswer(`It has ${(JSON.parse(output.output) as { count: number }).count} letters.`);
    const word = /'([^']+)'/.exec(String(normalizeInput(call.body.input)[0]!.content))![1];
    return toolAsk(functionCall('count_letters', { word }, 'call_1'));
  });
  services.push(service);
  return service;
}

interface StartedEnv {
  gym: RunningGym;
  stdout(): string;
  headPort: number;
  logDir: string;
  stop(): Promise<void>;
}

/** `gym env start` until its servers are ready (or it exits). */
async function startEnv(
  dir: string,
  args: string[],
  env: Record<string, string | undefined> = {},
): Promise<StartedEnv> {
  const headPort = await findFreePort();
  const logDir = path.join(dir, `logs-${headPort}`);
  const gym = spawnGym(
    [
      'env',
      'start',
      `+config_paths=[${CONFIG}]`,
      `++head_server.port=${headPort}`,
      `++nemo_gym_log_dir=${logDir}`,
      ...args,
    ],
    { cwd: dir, env },
  );
  running.push(gym);
  let out = '';
  gym.child.stdout!.on('data', (chunk: string) => (out += chunk));
  await eventually(() => /^Logs: /m.test(out) || gym.child.exitCode !== null, {
    what: 'gym env start to be ready',
    timeoutMs: 120_000,
  });
  assert.match(out, /All 2 \/ 2 servers ready/, `${out}\n${gym.stderr()}`);
  return {
    gym,
    stdout: () => out,
    headPort,
    logDir,
    async stop() {
      gym.child.kill('SIGINT');
      const result = await gym.result;
      assert.equal(result.code, 0, result.stderr);
    },
  };
}

/** The listing block of one server in `gym env start`'s output. */
function listingOf(stdout: string, instance: string): string {
  const start = stdout.indexOf(`  ${instance} (`);
  assert.ok(start >= 0, `no listing for ${instance} in:\n${stdout}`);
  const rest = stdout.slice(start + 1);
  const end = rest.search(/\n {2}\S|\n\S/);
  return rest.slice(0, end < 0 ? undefined : end);
}

const python3 = execFileSync('sh', ['-c', 'command -v python3'], { encoding: 'utf8' }).trim();

/** A virtualenv as `python3 -m venv --without-pip` makes it: `bin/python` linked to the interpreter, `pyvenv.cfg`. */
function makeVenv(venv: string): void {
  const real = execFileSync(python3, ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' }).trim();
  mkdirSync(path.join(venv, 'bin'), { recursive: true });
  symlinkSync(real, path.join(venv, 'bin', 'python'));
  writeFileSync(path.join(venv, 'pyvenv.cfg'), `home = ${path.dirname(real)}\ninclude-system-site-packages = false\n`);
}

test('a Python resources server under gym env start: the listing, and rows that are its verify response + stamps', async () => {
  const dir = tempDir('tsgym-pyenv-');
  const service = await letterCountingService();
  const env = await startEnv(dir, [`${AGENT}.agent_base_url=${service.url}`]);
  try {
    const pyListing = listingOf(env.stdout(), ENV_NAME);
    assert.match(pyListing, new RegExp(`dir: +${HERE} \\(tsgym's own\\)`));
    assert.ok(pyListing.includes(`command: ${quoteArg(python3)} ${quoteArg(path.join(HERE, 'app.py'))}\n`), pyListing);
    assert.match(pyListing, new RegExp(`python: +${python3} \\(python3 on PATH, the default\\)`));
    const agentListing = listingOf(env.stdout(), 'remote_agent');
    assert.match(agentListing, /dir: .*responses_api_agents\/remote_agent \(tsgym's own\)/);
    assert.match(
      agentListing,
      new RegExp(`command: ${process.execPath} .*dist/responses_api_agents/remote_agent/app\\.js`),
    );
    assert.doesNotMatch(agentListing, /python:/);
    await fileSays(
      path.join(env.logDir, `${ENV_NAME}.log`),
      /the head server's config lists this instance/,
      "it read the head server's /global_config_dict_yaml",
    );

    const run = await runGym(
      [
        'eval',
        'run',
        '--no-serve',
        `++head_server.port=${env.headPort}`,
        '-a',
        'remote_agent',
        '-i',
        DATA,
        '-o',
        'out/rollouts.jsonl',
      ],
      { cwd: dir },
    );
    assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
    const inputs = readJsonl(path.join(dir, 'out/rollouts_materialized_inputs.jsonl'));
    const rows = readJsonl(path.join(dir, 'out/rollouts.jsonl'));
    assert.equal(rows.length, 4, readFileSync(path.join(dir, 'out/rollouts_failures.jsonl'), 'utf8'));
    for (const row of rows) {
      const input = inputs.find((candidate) => candidate._ng_task_index === row._ng_task_index)!;
      // The verify response (its four declared fields) plus the stamps — nothing from the dataset row merged in.
      assert.deepEqual(Object.keys(row).sort(), [
        '_ng_rollout_index',
        '_ng_task_index',
        'agent_ref',
        'response',
        'responses_create_params',
        'reward',
        'tool_calls',
      ]);
      assert.deepEqual(row.responses_create_params, input.responses_create_params);
      assert.equal(row.reward, 1);
      assert.equal(row.tool_calls, 1);
      assert.deepEqual(row.agent_ref, { name: 'remote_agent' });
      const output = (row.response as { output: Array<{ type: string; output?: string }> }).output;
      assert.deepEqual(
        output.map((item) => item.type),
        ['function_call', 'function_call_output', 'message'],
      );
      assert.match(String(output[1]!.output), new RegExp(`"count": ${String(input.expected_answer)}`));
    }
    const metrics = JSON.parse(readFileSync(path.join(dir, 'out/rollouts_aggregate_metrics.json'), 'utf8')) as Array<{
      agent_metrics: Record<string, unknown>;
    }>;
    assert.equal(metrics[0]!.agent_metrics['mean/reward'], 1, 'aggregate metrics came from the Python server');
    const profile = await runGym(
      ['eval', 'profile', '--inputs', 'out/rollouts_materialized_inputs.jsonl', '--rollouts', 'out/rollouts.jsonl'],
      { cwd: dir },
    );
    assert.equal(profile.code, 0, profile.stderr);
  } finally {
    await env.stop();
  }
});

test("NeMo Gym conventions: tsgym's own remote_agent beats an extra root's unless server_dir names it; uv_venv_dir venvs are used", async () => {
  const dir = tempDir('tsgym-pyenv-');
  const service = await letterCountingService();
  // A NeMo Gym-like checkout on NEMO_GYM_EXTRA_ROOTS with its own (Python) responses_api_agents/remote_agent.
  const checkout = path.join(dir, 'nemo-gym');
  const foreignAgent = path.join(checkout, 'responses_api_agents', 'remote_agent');
  mkdirSync(foreignAgent, { recursive: true });
  copyFileSync(path.join(HERE, 'app.py'), path.join(foreignAgent, 'app.py'));
  // A per-server venv where NeMo Gym's gym env start would have built it (made here by the test, never by tsgym),
  // laid out as `python -m venv` lays one out — without needing Debian's python3-venv on the CI machine.
  const venvs = path.join(dir, 'venvs');
  const venv = path.join(venvs, 'resources_servers', 'python_stdlib_example', '.venv');
  makeVenv(venv);
  const extra = { NEMO_GYM_EXTRA_ROOTS: checkout };
  const venvArgs = [`+uv_venv_dir=${venvs}`, '+skip_venv_if_present=true', `${AGENT}.agent_base_url=${service.url}`];

  const ours = await startEnv(dir, venvArgs, extra);
  try {
    const agentListing = listingOf(ours.stdout(), 'remote_agent');
    assert.match(agentListing, /dir: .*responses_api_agents\/remote_agent \(tsgym's own\)/);
    assert.match(
      agentListing,
      new RegExp(`not used: ${foreignAgent} \\(same name; set server_dir to run it instead\\)`),
    );
    const pyListing = listingOf(ours.stdout(), ENV_NAME);
    assert.match(
      pyListing,
      new RegExp(`python: +${venv}/bin/python \\(the venv under uv_venv_dir \\(skip_venv_if_present=true\\)\\)`),
    );
    await fileSays(
      path.join(ours.logDir, `${ENV_NAME}.log`),
      new RegExp(`prefix ${venv}\\)`),
      'it ran inside the venv',
    );
  } finally {
    await ours.stop();
  }

  const theirs = await startEnv(dir, [...venvArgs, `${AGENT}.server_dir=${foreignAgent}`], extra);
  try {
    const agentListing = listingOf(theirs.stdout(), 'remote_agent');
    assert.match(agentListing, new RegExp(`dir: +${foreignAgent} \\(server_dir\\)`));
    assert.match(
      agentListing,
      new RegExp(
        `python: +${python3} \\(python3 on PATH, the default; no venv at ${venvs}/responses_api_agents/remote_agent/\\.venv \\(tsgym never builds one\\)\\)`,
      ),
    );
    await fileSays(
      path.join(theirs.logDir, 'remote_agent.log'),
      /remote_agent listening on http:/,
      "the extra root's server ran",
    );
  } finally {
    await theirs.stop();
  }
});

test('a named interpreter that does not exist stops gym env start before any server runs, naming the key', async () => {
  const dir = tempDir('tsgym-pyenv-');
  const res = await runGym(
    [
      'env',
      'start',
      `+config_paths=[${CONFIG}]`,
      `${AGENT}.agent_base_url=http://127.0.0.1:9`,
      `++head_server.port=${await findFreePort()}`,
      `++${ENV_NAME}.resources_servers.python_stdlib_example.python_executable=/no/such/python`,
    ],
    { cwd: dir },
  );
  assert.equal(res.code, 1);
  assert.match(
    res.stderr,
    new RegExp(
      `^Error: ${ENV_NAME}\\.resources_servers\\.python_stdlib_example\\.python_executable = /no/such/python is not an executable file`,
      'm',
    ),
  );
  assert.doesNotMatch(res.stdout, /Starting/);
});
