/**
 * The head server's Prometheus targets (scrape-targets.ts), decided from the plans: one group per process serving
 * /metrics (a co-located pair once), no Python or model server, and addresses a scraper on another host can use.
 * The real-process side (Prometheus discovering and scraping them) is src/prometheus/prometheus.test.ts.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import type { ServerInstance } from '../config/index.js';
import { groupIntoUnits } from './colocate.js';
import type { Plan } from './plan.js';
import { scrapeTargets } from './scrape-targets.js';

const ROOT = '/opt/tsgym';

function plan(
  name: string,
  serverType: ServerInstance['serverType'],
  impl: string,
  where: { host?: string; port: number; python?: boolean; config?: Record<string, unknown> },
): Plan {
  const dirPath = path.join(ROOT, serverType, impl);
  const host = where.host ?? '127.0.0.1';
  return {
    instance: { name, serverType, impl, config: where.config ?? {}, host, port: where.port, url: `http://x` },
    dirPath,
    entrypoint: 'app.py',
    origin: "tsgym's own",
    shadowed: [],
    launch: where.python
      ? { command: 'python3', args: [path.join(dirPath, 'app.py')], cwd: dirPath }
      : { command: process.execPath, args: [path.join(ROOT, 'dist', serverType, impl, 'app.js')], cwd: dirPath },
    ...(where.python ? { python: { executable: 'python3', reason: 'test' } } : {}),
  } as Plan;
}

const units = (plans: Plan[]) => groupIntoUnits(plans, ROOT, () => ({ NEMO_GYM_CONFIG_DICT: '{}' }));
const agent = (name: string, environment: string, port: number, config: Record<string, unknown> = {}) =>
  plan(name, 'responses_api_agents', 'remote_agent', {
    port,
    config: { resources_server: { type: 'resources_servers', name: environment }, ...config },
  });

test('one target per process: a co-located pair once, at its environment; Python and model servers left out', () => {
  const listed = scrapeTargets(
    units([
      plan('counter', 'resources_servers', 'example_session_state_mgmt', { port: 9001 }),
      agent('agent', 'counter', 9002),
      plan('math', 'resources_servers', 'math', { port: 9003 }),
      agent('math_agent', 'math', 9004, { colocate: false }),
      plan('py', 'resources_servers', 'python_stdlib_example', { port: 9005, python: true }),
      plan('model', 'responses_api_models', 'openai_model', { port: 9006 }),
    ]),
    {},
  );
  assert.deepEqual(listed, [
    { targets: ['127.0.0.1:9001'], labels: { server: 'counter+agent', server_kind: 'resources+agent' } },
    { targets: ['127.0.0.1:9003'], labels: { server: 'math', server_kind: 'resources' } },
    { targets: ['127.0.0.1:9004'], labels: { server: 'math_agent', server_kind: 'agent' } },
  ]);
});

test('addresses are the advertised ones: a server on every interface is listed where other hosts reach it', () => {
  const on = (host: string) => units([plan('env', 'resources_servers', 'math', { host, port: 9001 })]);
  const target = (host: string, config: Record<string, unknown>) => scrapeTargets(on(host), config)[0]!.targets[0];
  assert.equal(target('10.0.0.7', {}), '10.0.0.7:9001');
  const head = { host: '0.0.0.0', advertise_host: '10.0.0.5' };
  assert.equal(target('0.0.0.0', { head_server: head }), '10.0.0.5:9001');
  assert.equal(target('0.0.0.0', { head_server: { host: '0.0.0.0' }, default_host: '10.0.0.6' }), '10.0.0.6:9001');
  assert.equal(target('::', { head_server: { host: '10.0.0.8' } }), '10.0.0.8:9001');
  assert.equal(target('0.0.0.0', {}), '127.0.0.1:9001');
  assert.equal(target('fd00::1', {}), '[fd00::1]:9001');
});
