import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { parseConfigYaml } from '../config/index.js';
import { request } from '../http/client.js';
import type { Listening } from '../http/server.js';
import { createHeadServer, type InstanceRecord } from './head-server.js';

/** An upper bound on one loopback exchange: generous, so a busy machine is never mistaken for a broken server. */
const REQUEST_TIMEOUT_MS = 30_000;

const CONFIG = {
  head_server: { host: '127.0.0.1', port: 11000 },
  policy_api_key: 'sk-live-123',
  hf_token: 'hf_abc',
  policy_base_url: 'http://model:8000/v1',
  policy_model: {
    responses_api_models: {
      openai_model: {
        entrypoint: 'app.py',
        host: '127.0.0.1',
        port: 12001,
        openai_api_key: 'sk-inner',
        extra_keys: ['a', 'b'],
      },
    },
  },
  counter: {
    resources_servers: {
      example_session_state_mgmt: { entrypoint: 'app.py', domain: 'agent', host: '127.0.0.1', port: 12002 },
    },
  },
};

function record(name: string, pid: number): InstanceRecord {
  return {
    process_name: name,
    server_type: 'resources_servers',
    name: 'example_session_state_mgmt',
    dir_path: '/srv/resources_servers/example_session_state_mgmt',
    entrypoint: 'app.py',
    host: '127.0.0.1',
    port: 12002,
    url: 'http://127.0.0.1:12002',
    pid,
    config_path: name,
    start_time: 1_700_000_000.5,
    // The head server must not pass these through: only `gym env status` fills them.
    status: 'success',
    uptime_seconds: 42,
  };
}

describe('head server', () => {
  let listening: Listening;
  const records: InstanceRecord[] = [record('counter', 101)];
  let shutdowns = 0;
  let shutdownCalled: () => void;
  const shutdown = new Promise<void>((resolve) => (shutdownCalled = resolve));

  before(async () => {
    const app = createHeadServer({
      config: CONFIG,
      instances: () => records,
      scrapeTargets: () => [{ targets: ['127.0.0.1:12002'], labels: { server: 'counter', server_kind: 'resources' } }],
      onShutdown: () => {
        shutdowns += 1;
        shutdownCalled();
      },
    });
    listening = await app.listen(0, '127.0.0.1');
  });
  after(() => listening.close());

  const get = (path: string) => request(`${listening.url}${path}`, { timeoutMs: REQUEST_TIMEOUT_MS });

  it('answers GET / and GET /health with {"status":"ok"}', async () => {
    for (const path of ['/', '/health']) {
      const res = await get(path);
      assert.equal(res.status, 200);
      assert.deepEqual(res.json(), { status: 'ok' });
    }
  });

  it('lists the server instances with every reference field, status and uptime null', async () => {
    const body = (await get('/server_instances')).json() as Array<Record<string, unknown>>;
    assert.equal(body.length, 1);
    assert.deepEqual(Object.keys(body[0]!).sort(), [
      'config_path',
      'dir_path',
      'entrypoint',
      'host',
      'name',
      'pid',
      'port',
      'process_name',
      'server_type',
      'start_time',
      'status',
      'uptime_seconds',
      'url',
    ]);
    assert.equal(body[0]!.process_name, 'counter');
    assert.equal(body[0]!.pid, 101);
    assert.equal(body[0]!.status, null);
    assert.equal(body[0]!.uptime_seconds, null);
  });

  it('reads the instance list on every request, so servers spawned later appear', async () => {
    records.push(record('second', 102));
    try {
      const body = (await get('/server_instances')).json() as Array<{ process_name: string }>;
      assert.deepEqual(
        body.map((r) => r.process_name),
        ['counter', 'second'],
      );
    } finally {
      records.pop();
    }
  });

  it('lists the scrape targets in the http_sd_configs format, and none when it was given none', async () => {
    assert.deepEqual((await get('/scrape_targets')).json(), [
      { targets: ['127.0.0.1:12002'], labels: { server: 'counter', server_kind: 'resources' } },
    ]);
    const bare = await createHeadServer({ config: CONFIG, instances: () => [], onShutdown: () => {} }).listen(
      0,
      '127.0.0.1',
    );
    try {
      assert.deepEqual((await request(`${bare.url}/scrape_targets`, { timeoutMs: REQUEST_TIMEOUT_MS })).json(), []);
    } finally {
      await bare.close();
    }
  });

  it('serves the config as a JSON string of YAML, secret values masked', async () => {
    const res = await get('/global_config_dict_yaml');
    assert.equal(res.status, 200);
    const yaml = res.json();
    assert.equal(typeof yaml, 'string');
    for (const secret of ['sk-live-123', 'hf_abc', 'sk-inner'])
      assert.ok(!res.text().includes(secret), `${secret} leaked`);
    const config = parseConfigYaml(yaml as string, 'head server');
    assert.equal(config.policy_api_key, '****');
    assert.equal(config.hf_token, '****');
    assert.equal(config.policy_base_url, 'http://model:8000/v1');
    const model = (config.policy_model as { responses_api_models: { openai_model: Record<string, unknown> } })
      .responses_api_models.openai_model;
    assert.equal(model.openai_api_key, '****');
    assert.deepEqual(model.extra_keys, ['****', '****']);
    assert.equal(model.port, 12001);
    assert.deepEqual(config.head_server, { host: '127.0.0.1', port: 11000 });
    const counter = config.counter as { resources_servers: { example_session_state_mgmt: { port: number } } };
    assert.equal(counter.resources_servers.example_session_state_mgmt.port, 12002);
  });

  it('refuses GET /shutdown (405): stopping takes a POST', async () => {
    assert.equal((await get('/shutdown')).status, 405);
    assert.equal(shutdowns, 0);
  });

  it('answers POST /shutdown first, then triggers the stop exactly once', async () => {
    const res = await request(`${listening.url}/shutdown`, { method: 'POST', json: {}, timeoutMs: REQUEST_TIMEOUT_MS });
    assert.equal(res.status, 200);
    assert.deepEqual(res.json(), { status: 'shutting down' });
    await shutdown;
    const again = await request(`${listening.url}/shutdown`, {
      method: 'POST',
      json: {},
      timeoutMs: REQUEST_TIMEOUT_MS,
    });
    assert.deepEqual(again.json(), { status: 'already shutting down' });
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(shutdowns, 1);
  });
});
