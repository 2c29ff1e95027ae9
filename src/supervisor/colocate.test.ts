/**
 * Which servers share a process (D23), decided from the plans alone: tsgym's remote agent with the node-run resources
 * server it names, unless either says `colocate: false`; never a Python server, another agent, or a second pairing.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, test } from 'node:test';
import type { ServerInstance } from '../config/index.js';
import { ConfigError } from '../errors.js';
import { groupIntoUnits, HOST_MEMBERS_ENV, type HostMember } from './colocate.js';
import type { Plan } from './plan.js';

const ROOT = '/opt/tsgym';
let port = 20_000;

function plan(
  name: string,
  serverType: ServerInstance['serverType'],
  impl: string,
  config: Record<string, unknown> = {},
  where: { dirPath?: string; python?: boolean } = {},
): Plan {
  const dirPath = where.dirPath ?? path.join(ROOT, serverType, impl);
  const script = path.join(ROOT, 'dist', serverType, impl, 'app.js');
  const p = port++;
  return {
    instance: { name, serverType, impl, config, host: '127.0.0.1', port: p, url: `http://127.0.0.1:${p}` },
    dirPath,
    entrypoint: 'app.py',
    origin: "tsgym's own",
    shadowed: [],
    launch: where.python
      ? { command: 'python3', args: [path.join(dirPath, 'app.py')], cwd: dirPath }
      : { command: process.execPath, args: [script], cwd: dirPath },
    ...(where.python ? { python: { executable: 'python3', reason: 'test' } } : {}),
  } as Plan;
}

const agentOf = (name: string, environment: string, extra: Record<string, unknown> = {}, dirPath?: string): Plan =>
  plan(
    name,
    'responses_api_agents',
    'remote_agent',
    { resources_server: { type: 'resources_servers', name: environment }, ...extra },
    dirPath ? { dirPath } : {},
  );

const configEnv = (name: string) => ({ NEMO_GYM_CONFIG_DICT: `config of ${name}`, NEMO_GYM_CONFIG_PATH: name });
const names = (plans: readonly Plan[]) => groupIntoUnits(plans, ROOT, configEnv).map((u) => u.name);

describe('groupIntoUnits', () => {
  test('the remote agent and its TypeScript environment share one process, in the environment’s place', () => {
    const env = plan('counter', 'resources_servers', 'example_session_state_mgmt');
    const other = plan('other', 'resources_servers', 'math');
    const units = groupIntoUnits([other, agentOf('agent', 'counter'), env], ROOT, configEnv);
    assert.deepEqual(
      units.map((u) => u.name),
      ['other', 'counter+agent'],
    );
    const pair = units[1]!;
    assert.deepEqual(
      pair.plans.map((p) => p.instance.name),
      ['counter', 'agent'],
    );
    assert.equal(pair.launch.command, process.execPath);
    assert.match(pair.launch.args.at(-1)!, /host-main\.js$/);
    const members = JSON.parse(pair.env[HOST_MEMBERS_ENV]!) as HostMember[];
    assert.deepEqual(
      members.map((m) => [m.name, m.inProcess, pair.env[m.configVar]]),
      [
        ['counter', true, 'config of counter'],
        ['agent', false, 'config of agent'],
      ],
    );
  });

  test('a TypeScript environment of the user’s keeps its node flags (tsx’s loader) in the shared process', () => {
    const env = plan('mine', 'resources_servers', 'mine', {}, { dirPath: '/home/me/resources_servers/mine' });
    env.launch = { command: process.execPath, args: ['--import', 'file:///tsx.mjs', 'app.ts'], cwd: env.dirPath };
    const [unit] = groupIntoUnits([env, agentOf('agent', 'mine')], ROOT, configEnv);
    assert.deepEqual(unit!.launch.args.slice(0, 2), ['--import', 'file:///tsx.mjs']);
    const [member] = JSON.parse(unit!.env[HOST_MEMBERS_ENV]!) as HostMember[];
    assert.equal(member!.script, '/home/me/resources_servers/mine/app.ts');
  });

  test('a Python environment is never co-located', () => {
    const env = plan('py', 'resources_servers', 'python_stdlib_example', {}, { python: true });
    assert.deepEqual(names([env, agentOf('agent', 'py')]), ['py', 'agent']);
  });

  test('colocate: false on either server runs them apart', () => {
    const env = plan('counter', 'resources_servers', 'example_session_state_mgmt');
    assert.deepEqual(names([env, agentOf('agent', 'counter', { colocate: false })]), ['counter', 'agent']);
    const offEnv = plan('counter', 'resources_servers', 'example_session_state_mgmt', { colocate: false });
    assert.deepEqual(names([offEnv, agentOf('agent', 'counter')]), ['counter', 'agent']);
  });

  test('an agent that is not tsgym’s own remote_agent is not co-located', () => {
    const env = plan('counter', 'resources_servers', 'example_session_state_mgmt');
    const foreign = agentOf('agent', 'counter', {}, '/elsewhere/responses_api_agents/remote_agent');
    assert.deepEqual(names([env, foreign]), ['counter', 'agent']);
  });

  test('two agents naming one environment: the first shares its process, the second calls it over HTTP', () => {
    const env = plan('counter', 'resources_servers', 'example_session_state_mgmt');
    assert.deepEqual(names([env, agentOf('a1', 'counter'), agentOf('a2', 'counter')]), ['counter+a1', 'a2']);
  });

  test('a colocate value that is not a boolean is a config error naming the key', () => {
    const env = plan('counter', 'resources_servers', 'example_session_state_mgmt');
    assert.throws(
      () => names([env, agentOf('agent', 'counter', { colocate: 'yes' })]),
      (err: unknown) =>
        err instanceof ConfigError &&
        /^agent\.responses_api_agents\.remote_agent\.colocate must be true or false, got "yes"/.test(err.message),
    );
  });
});
