import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { findFreePort } from '../config/index.js';
import { GymError } from '../errors.js';
import { App, type Listening } from '../http/server.js';
import { createHeadServer } from '../server/head-server.js';
import {
  fetchServerInstances,
  formatUptime,
  probeHealth,
  requestShutdown,
  waitUntilGone,
  withHealth,
} from './head-client.js';

describe('head client', () => {
  let other: Listening;
  let stalls: Listening;
  before(async () => {
    // Something that is not a head server: answers every path with 404.
    other = await new App().listen(0, '127.0.0.1');
    const hanging = new App();
    hanging.get('/', () => new Promise(() => undefined));
    stalls = await hanging.listen(0, '127.0.0.1');
  });
  after(async () => {
    await other.close();
    await stalls.close();
  });

  it('probes health in the reference four words: any HTTP answer (even 404) is success', async () => {
    assert.equal(await probeHealth(other.url, 30_000), 'success');
    assert.equal(await probeHealth(`http://127.0.0.1:${await findFreePort()}`), 'connection_error');
    assert.equal(await probeHealth(null), 'unknown_error');
  });

  it('reports a server that accepts but never answers as timeout', async () => {
    assert.equal(await probeHealth(stalls.url, 100), 'timeout');
  });

  it('treats nothing listening as "unreachable", not as an error', async () => {
    const lookup = await fetchServerInstances(`http://127.0.0.1:${await findFreePort()}`);
    assert.equal(lookup.kind, 'unreachable');
  });

  it('says so when the port holds something that is not a head server', async () => {
    await assert.rejects(fetchServerInstances(other.url), (err: unknown) => {
      assert.ok(err instanceof GymError);
      assert.equal(err.code, 'GYM_NOT_A_HEAD_SERVER');
      assert.match(err.message, /HTTP 404 for \/server_instances/);
      return true;
    });
    assert.deepEqual(await requestShutdown(other.url), { kind: 'unsupported', status: 404 });
  });

  it('lists instances with health and uptime, asks for shutdown, and sees the head server go', async () => {
    let stop: () => void = () => undefined;
    const stopped = new Promise<void>((resolve) => (stop = resolve));
    const record = {
      process_name: 'probe_target',
      server_type: 'resources_servers',
      name: 'x',
      dir_path: '/x',
      entrypoint: 'app.py',
      host: '127.0.0.1',
      port: Number(new URL(other.url).port),
      url: other.url,
      pid: 1,
      config_path: 'probe_target',
      start_time: Date.now() / 1000 - 90,
      status: null,
      uptime_seconds: null,
    };
    const head = await createHeadServer({ config: {}, instances: () => [record], onShutdown: () => stop() }).listen(
      0,
      '127.0.0.1',
    );
    const lookup = await fetchServerInstances(head.url);
    assert.equal(lookup.kind, 'found');
    const [probed] = await withHealth(lookup.kind === 'found' ? lookup.instances : []);
    assert.equal(probed!.status, 'success');
    assert.ok(probed!.uptime_seconds! >= 89 && probed!.uptime_seconds! < 120);

    assert.deepEqual(await requestShutdown(head.url), { kind: 'accepted' });
    await stopped;
    await head.close();
    assert.equal(await waitUntilGone(head.url, 30_000, 10), true);
  });

  it('formats uptimes as Xd Yh Zm S.Ss', () => {
    assert.equal(formatUptime(0), '0d 0h 0m 0.0s');
    assert.equal(formatUptime(90061.25), '1d 1h 1m 1.3s');
  });
});
