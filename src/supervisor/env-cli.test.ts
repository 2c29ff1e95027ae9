import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import { findFreePort } from '../config/index.js';
import type { InstanceRecord } from '../server/head-server.js';
import {
  counterServer,
  fixtureServer,
  GYM_BIN,
  isAlive,
  makeScratch,
  occupyPort,
  processesWithMarker,
  type Scratch,
} from '../../test/support/environments.js';
import { eventually } from '../../test/support/wait.js';

/**
 * The environment commands end to end: the real CLI (`node bin/gym.js env …`) as child processes, real servers,
 * loopback HTTP. Waits are on output lines and exits, never on sleeps.
 */

interface Gym {
  child: ChildProcess;
  stdout: string;
  stderr: string;
  exit: Promise<number | null>;
  /**
   * Resolves with the first match in stdout, as soon as it appears; rejects if the process exits first. `timeoutMs`
   * (default 120 s) is only an upper bound for a busy machine.
   */
  waitForStdout(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
}

describe('gym env start / status / stop', () => {
  let scratch: Scratch;
  const marker = randomUUID();
  let counterConfig: string;
  let logDirs = 0;
  /** Every gym process a test spawned: one still running after its test (a failed one) is stopped then. */
  const spawned: Gym[] = [];

  before(() => {
    scratch = makeScratch();
    counterConfig = scratch.writeConfig('counter.yaml', {
      example_session_state_mgmt_resources_server: counterServer(),
    });
  });
  afterEach(async () => {
    const left = spawned.splice(0).filter((run) => run.child.exitCode === null && run.child.signalCode === null);
    for (const run of left) run.child.kill('SIGINT');
    await Promise.all(left.map((run) => run.exit));
  });
  after(() => scratch.remove());

  function gym(args: string[]): Gym {
    const child = spawn(process.execPath, [GYM_BIN, ...args], {
      cwd: scratch.dir,
      env: { ...process.env, TSGYM_TEST_MARKER: marker },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const run: Gym = {
      child,
      stdout: '',
      stderr: '',
      // 'close', not 'exit': by then every line the process wrote has been read.
      exit: new Promise((resolve) => child.once('close', (code) => resolve(code))),
      waitForStdout(pattern, timeoutMs = 120_000) {
        return new Promise((resolve, reject) => {
          const check = (): void => {
            const match = run.stdout.match(pattern);
            if (!match) return;
            finish();
            resolve(match);
          };
          const onExit = (code: number | null): void => {
            // Its last chunk may hold the line: every byte has been read by 'close'.
            const match = run.stdout.match(pattern);
            finish();
            if (match) resolve(match);
            else reject(new Error(`gym exited (${code}) before printing ${pattern}:\n${run.stdout}\n${run.stderr}`));
          };
          const timer = setTimeout(() => {
            finish();
            reject(new Error(`no ${pattern} within ${timeoutMs} ms:\n${run.stdout}\n${run.stderr}`));
          }, timeoutMs);
          const finish = (): void => {
            clearTimeout(timer);
            child.stdout.off('data', onData);
            child.off('close', onExit);
          };
          const onData = (): void => void setImmediate(check);
          child.stdout.on('data', onData);
          child.once('close', onExit);
          check();
        });
      },
    };
    child.stdout.on('data', (chunk: Buffer) => (run.stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (run.stderr += chunk.toString('utf8')));
    spawned.push(run);
    return run;
  }

  /** `gym env start` with the given config file on a fresh head port. */
  async function startEnv(
    configFile: string,
    extra: string[] = [],
  ): Promise<{ run: Gym; headPort: number; logDir: string }> {
    const headPort = await findFreePort();
    const logDir = path.join(scratch.dir, `logs-${++logDirs}`);
    const run = gym([
      'env',
      'start',
      `+config_paths=[${configFile}]`,
      `++head_server.port=${headPort}`,
      `++nemo_gym_log_dir=${logDir}`,
      ...extra,
    ]);
    return { run, headPort, logDir };
  }

  /** The exit code, once the process has exited and its output has all been read. */
  function finished(run: Gym): Promise<number | null> {
    return run.exit;
  }

  const nothingLeft = (): Promise<void> =>
    eventually(() => processesWithMarker(marker).length === 0, {
      what: 'no process started by the test is left',
      timeoutMs: 30_000,
      intervalMs: 25,
    });

  it('runs the counter environment: ready line, healthy in status --json, ended by env stop with nothing left', async () => {
    const started = performance.now();
    const { run, headPort, logDir } = await startEnv(counterConfig);
    await run.waitForStdout(/^All 1 \/ 1 servers ready$/m);
    const readyMs = performance.now() - started;
    await run.waitForStdout(/^Logs: .+$/m);

    const status = gym(['env', 'status', '--json', `++head_server.port=${headPort}`]);
    assert.equal(await finished(status), 0, status.stderr);
    const servers = JSON.parse(status.stdout) as InstanceRecord[];
    assert.equal(servers.length, 1);
    const [counter] = servers as [InstanceRecord];
    assert.equal(counter.process_name, 'example_session_state_mgmt_resources_server');
    assert.equal(counter.server_type, 'resources_servers');
    assert.equal(counter.name, 'example_session_state_mgmt');
    assert.equal(counter.entrypoint, 'app.py');
    assert.equal(counter.status, 'success');
    assert.ok(typeof counter.uptime_seconds === 'number' && counter.uptime_seconds >= 0);
    assert.ok(counter.pid && isAlive(counter.pid));
    // The table names the server with its url and pid.
    assert.match(
      run.stdout,
      new RegExp(
        `example_session_state_mgmt_resources_server\\s+resources_servers/example_session_state_mgmt\\s+${counter.url}\\s+${counter.pid}`,
      ),
    );

    const human = gym(['env', 'status', `++head_server.port=${headPort}`]);
    assert.equal(await finished(human), 0);
    assert.match(
      human.stdout,
      /^\[1\] ✓ example_session_state_mgmt_resources_server \(resources_servers\/example_session_state_mgmt\)$/m,
    );
    assert.match(human.stdout, /^1 servers found \(1 healthy, 0 unhealthy\)$/m);

    const stop = gym(['env', 'stop', `++head_server.port=${headPort}`]);
    assert.equal(await finished(stop), 0, stop.stderr);
    assert.match(
      stop.stdout,
      /Stopped the environment at .*: 1 server\(s\) \(example_session_state_mgmt_resources_server\)/,
    );
    assert.equal(isAlive(counter.pid), false, 'the server outlived gym env stop');
    assert.equal(await finished(run), 0, run.stderr);
    assert.equal(run.stdout.match(/servers ready/g)?.length, 1, 'exactly one ready line');
    assert.match(
      readFileSync(path.join(logDir, 'example_session_state_mgmt_resources_server.log'), 'utf8'),
      /listening on http:\/\/127\.0\.0\.1:\d+/,
    );
    await nothingLeft();
    process.stdout.write(`# counter environment ready ${readyMs.toFixed(0)} ms after spawning gym env start\n`);
  });

  it('exits non-zero with the last log lines of a server that exits during start-up', async () => {
    const config = scratch.writeConfig('crash.yaml', {
      example_session_state_mgmt_resources_server: counterServer(),
      broken: fixtureServer('crash', { database: '/no/such/db' }),
    });
    const { run } = await startEnv(config);
    assert.equal(await finished(run), 1);
    assert.match(run.stderr, /^Error: Server 'broken' exited with code 3 during start-up/m);
    assert.match(run.stderr, /loading the database\n\s+fatal: no database at \/no\/such\/db/);
    assert.doesNotMatch(run.stdout, /servers ready/);
    await nothingLeft();
  });

  it('names the port and ++head_server.port when the head port is in use', async () => {
    const blocker = await occupyPort();
    try {
      const run = gym(['env', 'start', `+config_paths=[${counterConfig}]`, `++head_server.port=${blocker.port}`]);
      assert.equal(await finished(run), 1);
      assert.match(run.stderr, new RegExp(`^Error: Port ${blocker.port} on 127\\.0\\.0\\.1 is already in use`, 'm'));
      assert.match(run.stderr, /\+\+head_server\.port=<free port>/);
      assert.doesNotMatch(run.stderr, /\n\s+at /, 'no stack trace');
      await nothingLeft();
    } finally {
      await blocker.close();
    }
  });

  it('stops every server and exits 0 on SIGINT (Ctrl-C)', async () => {
    const { run } = await startEnv(counterConfig);
    const pid = await serverPidFromTable(run);
    run.child.kill('SIGINT');
    assert.equal(await finished(run), 0, run.stderr);
    assert.match(run.stdout, /Stopped 1 server\(s\)\./);
    assert.equal(isAlive(pid), false);
    await nothingLeft();
  });

  it('takes its servers down even when gym env start itself is SIGKILLed', async () => {
    const { run } = await startEnv(counterConfig);
    const pid = await serverPidFromTable(run);
    run.child.kill('SIGKILL');
    await finished(run);
    await eventually(() => !isAlive(pid), { what: 'the orphaned server is killed', timeoutMs: 30_000 });
    await nothingLeft();
  });

  it('says nothing is running, with exit 1, when no head server answers', async () => {
    const port = await findFreePort();
    const status = gym(['env', 'status', `++head_server.port=${port}`]);
    const json = gym(['env', 'status', '--json', `++head_server.port=${port}`]);
    const stop = gym(['env', 'stop', `++head_server.port=${port}`]);
    assert.deepEqual(await Promise.all([finished(status), finished(json), finished(stop)]), [1, 1, 1]);
    assert.match(status.stdout, /^No NeMo Gym servers found running\./m);
    assert.deepEqual(JSON.parse(json.stdout), []);
    assert.match(stop.stderr, new RegExp(`No NeMo Gym environment is running at http://127\\.0\\.0\\.1:${port}`));
  });

  it('refuses to start without server instances', async () => {
    const run = gym(['env', 'start', `++head_server.port=${await findFreePort()}`]);
    assert.equal(await finished(run), 1);
    assert.match(run.stderr, /^Error: No server instances are configured, so there is nothing to run\./m);
    assert.doesNotMatch(run.stderr, /You set/);
  });

  it('names a misspelt config_paths when nothing is configured', async () => {
    const run = gym(['env', 'start', `+config_path=[${counterConfig}]`, `++head_server.port=${await findFreePort()}`]);
    assert.equal(await finished(run), 1);
    assert.match(run.stderr, /^Error: No server instances are configured/m);
    assert.match(run.stderr, /You set 'config_path', which is not a key gym reads: the configs go in config_paths/);
  });

  it('env resolve prints the composed config with secrets masked', async () => {
    const run = gym(['env', 'resolve', `+config_paths=[${counterConfig}]`, '++policy_api_key=sk-very-secret']);
    assert.equal(await finished(run), 0, run.stderr);
    assert.match(run.stdout, /policy_api_key: "?\*\*\*\*"?/);
    assert.doesNotMatch(run.stdout, /sk-very-secret/);
    assert.match(run.stdout, /example_session_state_mgmt_resources_server:/);
  });

  /** The counter server's pid, read from the table `gym env start` prints once ready. */
  async function serverPidFromTable(run: Gym): Promise<number> {
    await run.waitForStdout(/^All 1 \/ 1 servers ready$/m);
    const pid = Number((await run.waitForStdout(/^example_session_state_mgmt_resources_server\s.*\s(\d+)$/m))[1]);
    assert.ok(isAlive(pid));
    return pid;
  }
});
