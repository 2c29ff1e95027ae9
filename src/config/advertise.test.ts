/**
 * Addresses a head server beyond loopback hands out: its servers are advertised where other hosts reach them, or
 * starting is refused naming the missing setting (src/config/advertise.ts).
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { ConfigError } from '../errors.js';
import { loadGlobalConfig } from './load.js';
import { listServerInstances } from './servers.js';
import { runGym, tempDir } from '../../test/support/cli.js';

function configDir(): string {
  const dir = tempDir('tsgym-advertise-');
  writeFileSync(
    path.join(dir, 'env.yaml'),
    'agent_a:\n  responses_api_agents:\n    fake:\n      entrypoint: app.py\n      port: 17001\n',
  );
  return dir;
}

const urls = async (overrides: string[], starting = false): Promise<string[]> => {
  const config = await loadGlobalConfig({
    overrides: ['+config_paths=[env.yaml]', ...overrides],
    cwd: configDir(),
    env: {},
    allocatePorts: starting,
    warn: () => {},
  });
  return listServerInstances(config).map((instance) => instance.url);
};

test('servers of a head server on loopback stay on loopback', async () => {
  assert.deepEqual(await urls([]), ['http://127.0.0.1:17001']);
  assert.deepEqual(await urls(['++head_server.host=localhost']), ['http://127.0.0.1:17001']);
});

test('servers listen on, and are advertised at, the interface of a head server beyond loopback', async () => {
  assert.deepEqual(await urls(['++head_server.host=10.231.9.2']), ['http://10.231.9.2:17001']);
});

test('a head server on every interface advertises head_server.advertise_host, or refuses to start without it', async () => {
  assert.deepEqual(await urls(['++head_server.host=0.0.0.0', '++head_server.advertise_host=10.231.9.3'], true), [
    'http://10.231.9.3:17001',
  ]);
  await assert.rejects(
    urls(['++head_server.host=0.0.0.0'], true),
    (err: unknown) =>
      err instanceof ConfigError &&
      /listen on 0\.0\.0\.0 .* but hand out server addresses on 127\.0\.0\.1.*\+\+head_server\.advertise_host=/.test(
        err.message,
      ),
  );
  // default_host named by the user wins, as before.
  assert.deepEqual(await urls(['++head_server.host=0.0.0.0', '+default_host=10.231.9.4'], true), [
    'http://10.231.9.4:17001',
  ]);
  await assert.rejects(
    urls(['++head_server.host=0.0.0.0', '++head_server.advertise_host=0.0.0.0'], true),
    /head_server\.advertise_host.*must be the address other hosts reach this machine at/,
  );
});

test('gym env start with a head server on every interface and no advertise_host stops before starting anything', async () => {
  const dir = configDir();
  const result = await runGym(['env', 'start', '+config_paths=[env.yaml]', '++head_server.host=0.0.0.0'], { cwd: dir });
  assert.notEqual(result.code, 0);
  assert.match(result.stderr, /\+\+head_server\.advertise_host=<this machine's address as other hosts reach it>/);
  assert.doesNotMatch(result.stdout + result.stderr, /listening on/);
});
