import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { after, afterEach, before, describe, it } from 'node:test';
import { findFreePort, isPortFree, loadGlobalConfig, type GlobalConfig } from '../config/index.js';
import { ConfigError, GymError } from '../errors.js';
import { isConnectError, request } from '../http/client.js';
import type { InstanceRecord } from '../server/head-server.js';
import { StartAborted, startEnvironment, type RunningEnvironment, type StartOptions } from './supervisor.js';
import {
  fixtureServer,
  isAlive,
  makeScratch,
  occupyPort,
  processesWithMarker,
  type Scratch,
} from '../../test/support/environments.js';
import { eventually, fileSays } from '../../test/support/wait.js';

/** Collects everything the supervisor writes, and resolves waits for a pattern as soon as it appears. */
class Output extends PassThrough {
  text = '';
  constructor() {
    super();
    this.on('data', (chunk: Buffer) => (this.text += chunk.toString('utf8')));
  }
  /** `timeoutMs` is only an upper bound: on a busy machine a line can take seconds to come through the pipes. */
  waitFor(pattern: RegExp, timeoutMs = 120_000): Promise<RegExpMatchArray> {
    return new Promise((resolve, reject) => {
      const check = (): boolean => {
        const match = this.text.match(pattern);
        if (!match) return false;
        clearTimeout(timer);
        this.off('data', onData);
        resolve(match);
        return true;
      };
      const onData = (): void => void setImmediate(check);
      const timer = setTimeout(() => {
        this.off('data', onData);
        reject(new Error(`no output matching ${pattern} within ${timeoutMs} ms; got:\n${this.text}`));
      }, timeoutMs);
      if (!check()) this.on('data', onData);
    });
  }
}

describe('startEnvironment', () => {
  let scratch: Scratch;
  const marker = randomUUID();
  const env = { ...process.env, TSGYM_TEST_MARKER: marker };
  let configs = 0;

  /** Every environment a test started, stopped after it even when it failed half-way (`stop()` is idempotent). */
  const started: RunningEnvironment[] = [];

  before(() => {
    scratch = makeScratch();
  });
  afterEach(async () => {
    await Promise.all(started.splice(0).map((running) => running.stop()));
  });
  after(() => scratch.remove());

  async function load(servers: Record<string, unknown>, overrides: string[] = []): Promise<GlobalConfig> {
    const file = scratch.writeConfig(`config-${++configs}.yaml`, servers);
    return loadGlobalConfig({
      overrides: [`+config_paths=[${file}]`, `++head_server.port=${await findFreePort()}`, ...overrides],
      cwd: scratch.dir,
      env,
      warn: () => undefined,
    });
  }

  async function start(
    config: GlobalConfig,
    out: Output,
    options: Partial<StartOptions> = {},
  ): Promise<RunningEnvironment> {
    const running = await startEnvironment(config, {
      cwd: scratch.dir,
      env,
      out,
      logDir: path.join(scratch.dir, `logs-${configs}`),
      ...options,
    });
    started.push(running);
    return running;
  }

  const nothingLeft = (): Promise<void> =>
    eventually(() => processesWithMarker(marker).length === 0, {
      what: 'no test process is left',
      timeoutMs: 30_000,
      intervalMs: 25,
    });

  it('starts every server, lists them at the head server, and stops them all', async () => {
    const out = new Output();
    const config = await load({ alpha: fixtureServer('serve'), beta: fixtureServer('serve') });
    const running = await start(config, out);
    try {
      assert.deepEqual(
        running.instances.map((i) => i.process_name),
        ['alpha', 'beta'],
      );
      const listed = (
        await request(`${running.headUrl}/server_instances`, { timeoutMs: 30_000 })
      ).json() as InstanceRecord[];
      assert.deepEqual(
        listed.map((i) => [i.process_name, i.pid]),
        running.instances.map((i) => [i.process_name, i.pid]),
      );
      for (const instance of running.instances) {
        assert.equal(instance.server_type, 'resources_servers');
        assert.equal(instance.name, 'fixture');
        assert.equal(instance.entrypoint, 'app.mjs');
        assert.equal(instance.dir_path, path.join(scratch.dir, 'resources_servers', 'fixture'));
        assert.ok(isAlive(instance.pid!));
        assert.equal((await request(`${instance.url}/`, { timeoutMs: 30_000 })).status, 200);
      }
      if (process.platform === 'linux') {
        const marked = processesWithMarker(marker);
        for (const instance of running.instances)
          assert.ok(marked.includes(instance.pid!), 'the marker check cannot see servers');
      }
      // Each server learned its own name from NEMO_GYM_CONFIG_PATH; its lines are prefixed and logged.
      assert.match(out.text, /^\(alpha\) fixture alpha starting as serve$/m);
      assert.match(out.text, /^\(beta\) fixture beta starting as serve$/m);
      // The supervisor appends a line to the log file after passing it on: waited for, not assumed.
      await fileSays(
        path.join(running.logDir, 'alpha.log'),
        /^fixture alpha starting as serve$/m,
        "alpha.log to hold the server's first line",
        30_000,
      );
    } finally {
      await running.stop();
    }
    assert.deepEqual(await running.done, { kind: 'stopped' });
    for (const instance of running.instances) assert.equal(isAlive(instance.pid!), false);
    // Refused, not merely slow: the head server is closed.
    await assert.rejects(request(`${running.headUrl}/`, { timeoutMs: 30_000 }), isConnectError);
    await nothingLeft();
  });

  it('refuses a config without server instances', async () => {
    const config = await load({ just_a_setting: { value: 1 } });
    await assert.rejects(start(config, new Output()), (err: unknown) => {
      assert.ok(err instanceof ConfigError);
      assert.equal(err.code, 'GYM_NO_SERVER_INSTANCES');
      assert.match(err.message, /No server instances are configured, so there is nothing to run/);
      return true;
    });
  });

  it('fails the start with the last log lines of a server that exits during start-up, and stops the others', async () => {
    const out = new Output();
    const config = await load({ good: fixtureServer('serve'), bad: fixtureServer('crash', { database: '/nowhere' }) });
    const headPort = (config.head_server as { port: number }).port;
    await assert.rejects(start(config, out), (err: unknown) => {
      assert.ok(err instanceof GymError);
      assert.equal(err.code, 'GYM_SERVER_EXITED');
      assert.match(err.message, /Server 'bad' exited with code 3 during start-up/);
      assert.match(err.message, /loading the database\n\s+fatal: no database at \/nowhere/);
      assert.match(err.message, /bad\.log/);
      return true;
    });
    await nothingLeft();
    assert.ok(await isPortFree(headPort, '127.0.0.1'), 'the head server was not closed');
  });

  it('names the port and ++head_server.port when the head port is taken', async () => {
    const blocker = await occupyPort();
    try {
      const config = await load({ alpha: fixtureServer('serve') }, [`++head_server.port=${blocker.port}`]);
      await assert.rejects(start(config, new Output()), (err: unknown) => {
        assert.ok(err instanceof ConfigError);
        assert.match(err.message, new RegExp(`Port ${blocker.port} on 127\\.0\\.0\\.1 is already in use`));
        assert.match(err.message, /\+\+head_server\.port=<free port>/);
        return true;
      });
      await nothingLeft();
    } finally {
      await blocker.close();
    }
  });

  it('names the port and the server port key when a server port is taken, before starting anything', async () => {
    const blocker = await occupyPort();
    try {
      const config = await load({ alpha: fixtureServer('serve') }, [
        `++alpha.resources_servers.fixture.port=${blocker.port}`,
      ]);
      await assert.rejects(start(config, new Output()), (err: unknown) => {
        assert.ok(err instanceof ConfigError);
        assert.match(err.message, new RegExp(`Port ${blocker.port} on 127\\.0\\.0\\.1 is already in use`));
        assert.match(err.message, /\+\+alpha\.resources_servers\.fixture\.port=<free port>/);
        return true;
      });
      await nothingLeft();
    } finally {
      await blocker.close();
    }
  });

  it('D20: restarts a server that dies after start-up on the same address, and reports restarts and the exit cause', async () => {
    const out = new Output();
    const running = await start(await load({ alpha: fixtureServer('serve'), beta: fixtureServer('serve') }), out);
    try {
      const alpha = running.instances[0]!;
      const [firstPid, url] = [alpha.pid!, alpha.url];
      process.kill(firstPid, 'SIGKILL');
      await out.waitFor(/\(alpha\) restarted \(pid \d+\) and answering on /);
      assert.match(
        out.text,
        /\(alpha\) was killed by SIGKILL unexpectedly; restarting it on http:\/\/127\.0\.0\.1:\d+ in 0\.25s \(restart 1 of at most 5 within 10 minutes\)/,
      );
      const listed = (
        await request(`${running.headUrl}/server_instances`, { timeoutMs: 30_000 })
      ).json() as InstanceRecord[];
      const record = listed.find((i) => i.process_name === 'alpha')!;
      assert.equal(record.url, url);
      assert.notEqual(record.pid, firstPid);
      assert.ok(isAlive(record.pid!));
      assert.equal(record.restarts, 1);
      assert.match(record.last_exit ?? '', /^was killed by SIGKILL at \d{4}-/);
      assert.equal(listed.find((i) => i.process_name === 'beta')!.restarts, 0);
      assert.equal((await request(`${url}/`, { timeoutMs: 30_000 })).status, 200);
      assert.ok(isAlive(running.instances[1]!.pid!), 'the other server was touched');
      // The restarted server logs to the same file.
      const starts = (): number =>
        readFileSync(path.join(running.logDir, 'alpha.log'), 'utf8').match(/starting as serve/g)?.length ?? 0;
      await eventually(() => starts() >= 2, {
        what: 'alpha.log to hold both starts',
        timeoutMs: 30_000,
        intervalMs: 20,
      });
      assert.equal(starts(), 2);
    } finally {
      await running.stop();
    }
    assert.deepEqual(await running.done, { kind: 'stopped' });
    await nothingLeft();
  });

  it('D20: a crash loop (more restarts than the policy allows within its window) stops the environment with the log tail', async () => {
    const out = new Output();
    // A window far longer than three deaths take even on a busy machine: the third always lands inside it.
    const restartPolicy = { maxRestarts: 2, windowMs: 600_000, backoffMs: [10, 20] };
    const running = await start(await load({ alpha: fixtureServer('serve'), beta: fixtureServer('serve') }), out, {
      restartPolicy,
    });
    const die = async (): Promise<void> => {
      await request(`${running.instances[0]!.url}/die`, { method: 'POST', json: {}, timeoutMs: 30_000 });
    };
    await die();
    await out.waitFor(/\(alpha\) restarted .*\n/);
    await die();
    await eventually(() => (out.text.match(/\(alpha\) restarted \(pid/g) ?? []).length === 2, {
      what: 'the second restart answers',
      timeoutMs: 120_000,
    });
    await die();
    const reason = await running.done;
    assert.equal(reason.kind, 'server_exited');
    assert.equal(reason.kind === 'server_exited' && reason.name, 'alpha');
    assert.equal(reason.kind === 'server_exited' && reason.exit.code, 7);
    assert.equal(reason.kind === 'server_exited' && reason.restarts, 2);
    assert.match(
      out.text,
      /\(alpha\) exited with code 7 unexpectedly after 2 restart\(s\) within 10 minutes: a crash loop, so the environment is stopped\. Its last \d+ log line\(s\)/,
    );
    assert.equal(isAlive(running.instances[1]!.pid!), false);
    await nothingLeft();
  });

  it('escalates to SIGKILL when a server ignores SIGINT', async () => {
    const out = new Output();
    // A grace period long enough for a busy machine to let the server see SIGINT (and say so) before the SIGKILL.
    const graceMs = 3_000;
    const running = await start(await load({ stubborn: fixtureServer('ignore_sigint') }), out, { graceMs });
    const stopStarted = Date.now();
    await running.stop();
    assert.ok(Date.now() - stopStarted >= graceMs - 20, 'the grace period was skipped');
    // The server's line comes through the supervisor's pipe at its own pace: waited for, not assumed.
    await out.waitFor(/\(stubborn\) ignoring SIGINT/);
    assert.equal(isAlive(running.instances[0]!.pid!), false);
    await nothingLeft();
  });

  it("kills a server's own subprocesses with it", async () => {
    const out = new Output();
    const running = await start(await load({ parent: fixtureServer('with_grandchild') }), out);
    const grandchild = Number((await out.waitFor(/grandchild pid (\d+)/))[1]);
    assert.ok(isAlive(grandchild));
    await running.stop();
    await eventually(() => !isAlive(grandchild), { what: 'the grandchild is gone', timeoutMs: 30_000 });
    await nothingLeft();
  });

  it('gives up after the start-up timeout, naming the servers that never answered', async () => {
    const config = await load({ silent: fixtureServer('never_listen') });
    await assert.rejects(start(config, new Output(), { startupTimeoutMs: 500 }), (err: unknown) => {
      assert.ok(err instanceof GymError);
      assert.equal(err.code, 'GYM_STARTUP_TIMEOUT');
      assert.match(err.message, /1 of 1 server\(s\) did not answer within 0\.5s: silent/);
      assert.match(err.message, /silent\.log/);
      return true;
    });
    await nothingLeft();
  });

  it('stops everything started so far when start-up is aborted', async () => {
    const out = new Output();
    const controller = new AbortController();
    const starting = start(await load({ silent: fixtureServer('never_listen') }), out, { signal: controller.signal });
    await out.waitFor(/starting as never_listen/);
    controller.abort();
    await assert.rejects(starting, StartAborted);
    await nothingLeft();
  });

  it('treats POST /shutdown during start-up as an interruption, not a crash', async () => {
    const out = new Output();
    const config = await load({ silent: fixtureServer('never_listen') });
    const starting = start(config, out);
    await out.waitFor(/starting as never_listen/);
    const headPort = (config.head_server as { port: number }).port;
    await request(`http://127.0.0.1:${headPort}/shutdown`, { method: 'POST', json: {}, timeoutMs: 30_000 });
    await assert.rejects(starting, StartAborted);
    await nothingLeft();
  });
});
