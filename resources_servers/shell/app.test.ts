import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { findFreePort } from '../../src/config/index.js';
import { placeholderResponse } from '../../src/contract/index.js';
import { request, type HttpResponse } from '../../src/http/client.js';
import { CookieJar } from '../../src/http/cookies.js';
import { createShellServer, shellSettings } from './app.js';
import { killProcesses } from './sandbox/processes.js';
import { exampleJsonl, EXAMPLE_JSONL, exampleRows } from './scripts/generate.js';
import {
  mountsUnder,
  pidsMentioning,
  pidsOfUid,
  processRunning,
  pathWithout,
  sandboxesGauge,
  sandboxTestsUnavailable,
} from '../../test/support/sandbox.js';
import { tempDir } from '../../test/support/cli.js';
import { eventually } from '../../test/support/wait.js';

const unavailable = sandboxTestsUnavailable();
const APP = fileURLToPath(new URL('./app.js', import.meta.url));
/** The unprivileged uid the non-root refusal is tried as. */
const NOBODY = 65534;

/** The session dirs (`s<uid>`) of an owner dir, which also holds the staged launcher's `runtime/`. */
function sessionDirs(ownerDir: string): string[] {
  return readdirSync(ownerDir).filter((name) => /^s\d+$/.test(name));
}

/** Whether `uid` can read `file` (every parent dir included), asked of a real process running as it. */
function readableBy(uid: number, file: string): boolean {
  return spawnSync('setpriv', [`--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', 'test', '-r', file]).status === 0;
}

/** One rollout's view of the environment: its own cookie jar, JSON in and out. */
/** The fields of each route's 200 answer that these tests read (what resources_servers/shell/app.ts returns). */
interface ShellReplies {
  seed_session: Record<string, unknown>;
  list_dir: { entries: { name: string; type: string }[] };
  run_command: { exit_code: number; stdout: string; stderr: string; limit_exceeded?: string };
  verify: {
    reward: number;
    checks_passed: number;
    checks_total: number;
    commands_run: number;
    sandbox_seconds: number;
    check_error?: string;
  };
}

/** What GET / reports about the sandbox host. */
interface ShellStatus {
  sandboxes_live: number;
  stale_sandbox_dirs_removed_at_start: number;
  memory_cgroup: string | null;
}

class Session {
  readonly jar = new CookieJar();
  constructor(private readonly url: string) {}

  /** A deadline only: a verify runs the task's check, and eight or 32 of them at once take long on a loaded machine. */
  async post(route: string, body: unknown, timeoutMs = 120_000): Promise<HttpResponse> {
    return request(`${this.url}/${route}`, { method: 'POST', json: body, jar: this.jar, timeoutMs });
  }

  async call<R extends keyof ShellReplies>(route: R, body: unknown): Promise<ShellReplies[R]> {
    const reply = await this.post(route, body);
    assert.equal(reply.status, 200, `${route}: ${reply.text()}`);
    return reply.json() as ShellReplies[R];
  }
}

const params = (text = 'task') => ({ input: [{ role: 'user', content: text }] });
const verifyBody = (row: Record<string, unknown>) => ({
  ...row,
  responses_create_params: params(),
  response: placeholderResponse(),
});
const status = async (url: string): Promise<ShellStatus> =>
  (await request(`${url}/`, { timeoutMs: 30_000 })).json() as ShellStatus;

describe('shell environment over HTTP', { skip: unavailable }, () => {
  let url: string;
  let close: () => Promise<void>;
  let baseDir: string;

  before(async () => {
    baseDir = tempDir('tsgym-shell-env-test-');
    const running = await createShellServer(
      shellSettings({ sandbox_base_dir: baseDir, limits: { command_wall_secs: 60 } }, 'shell'),
    );
    const listening = await running.server.app.listen(0, '127.0.0.1');
    url = listening.url;
    close = async () => {
      await listening.close();
      await running.close();
    };
  });

  after(async () => {
    await close();
    assert.deepEqual(readdirSync(baseDir), [], 'shutdown leaves no sandbox dir behind');
  });

  test('seed → tools → verify on an inline task: reward by the fraction rule, the check never echoed', async () => {
    const task = {
      setup_files: { 'data/in.txt': 'b\na\nc\n' },
      check_files: {
        'check.sh':
          'test -f sorted.txt && echo "PASS exists" || echo "FAIL exists"\n[ "$(cat sorted.txt)" = "$(printf \'a\\nb\\nc\')" ] && echo "PASS sorted" || echo "FAIL sorted"\necho "FAIL impossible"\n',
      },
      reward_rule: 'fraction',
    };
    const session = new Session(url);
    await session.call('seed_session', { task });
    assert.equal((await status(url)).sandboxes_live, 1);
    assert.equal(await sandboxesGauge(url), 1);
    assert.deepEqual(
      (await session.call('list_dir', {})).entries.map((e) => [e.name, e.type]),
      [['data', 'dir']],
    );
    const ran = await session.call('run_command', {
      command: 'sort data/in.txt > sorted.txt; ls /check; cat sorted.txt',
    });
    assert.equal(ran.exit_code, 0);
    assert.equal(ran.stdout, 'a\nb\nc\n', 'the check dir does not exist while the agent works');
    assert.match(ran.stderr, /No such file/);
    assert.deepEqual(Object.keys(ran).sort(), [
      'duration_ms',
      'exit_code',
      'limit_exceeded',
      'stderr',
      'stderr_truncated',
      'stdout',
      'stdout_truncated',
    ]);
    const verified = await session.call('verify', verifyBody({ task }));
    assert.equal(verified.reward, 2 / 3);
    assert.deepEqual([verified.checks_passed, verified.checks_total, verified.commands_run], [2, 3, 1]);
    assert.ok(verified.sandbox_seconds > 0);
    assert.equal('task' in verified, false, 'the hidden check is dropped from the verify response (C4)');
    await eventually(async () => (await status(url)).sandboxes_live === 0, {
      what: 'verify destroys the sandbox',
      timeoutMs: 60_000,
      intervalMs: 50,
    });
    assert.equal(await sandboxesGauge(url), 0, 'the gauge follows the destroyed sandbox');
    assert.equal((await session.post('run_command', { command: 'true' })).status, 409);
  });

  test('tool refusals reach the agent as 400 with the reason; a bad body is a 422 naming the field', async () => {
    const session = new Session(url);
    await session.call('seed_session', { task_dir: 'fix-shell-script' });
    const escape = await session.post('read_file', { path: '../../etc/shadow' });
    assert.equal(escape.status, 400);
    assert.match(escape.text(), /'\.\.' is not allowed/);
    const absolute = await session.post('write_file', { path: '/etc/passwd', content: 'x' });
    assert.equal(absolute.status, 400);
    assert.match(absolute.text(), /absolute paths are not allowed/);
    const missing = await session.post('read_file', { path: 'nope.txt' });
    assert.match(missing.text(), /nope\.txt: no such file or directory/);
    const bad = await session.post('run_command', { command: 'true', timeout_secs: 99 });
    assert.equal(bad.status, 422);
    assert.match(bad.text(), /timeout_secs/);
    // A hundred times the timeout: only the timeout can end it first.
    const killed = await session.call('run_command', { command: 'sleep 30', timeout_secs: 0.3 });
    assert.equal(killed.limit_exceeded, 'wall_time');
    // A command still running at verify (here: one that would break the script the check runs) is killed first.
    // Verify is asked once its sleep runs, and the sleep leaves verify 53 s to stop it.
    const saboteur = session.post('run_command', {
      command: 'sleep 53; echo "exit 1" > count_words.sh',
      timeout_secs: 60,
    });
    await eventually(() => processRunning('sleep 53'), {
      what: "the saboteur's sleep runs",
      timeoutMs: 60_000,
      intervalMs: 50,
    });
    const verified = await session.call('verify', verifyBody({ task_dir: 'fix-shell-script' }));
    assert.equal(verified.checks_total, 2);
    const stopped = await saboteur;
    assert.equal(stopped.status, 200);
    assert.match((stopped.json() as { stderr: string }).stderr, /stopped: the session ended/);
  });

  test('a bad task is a 422 naming the field; a check printing no result scores 0 with a reason', async () => {
    const session = new Session(url);
    const unknown = await session.post('seed_session', { task_dir: 'no-such-task' });
    assert.equal(unknown.status, 422);
    assert.match(unknown.text(), /task_dir 'no-such-task': no such task directory/);
    const traversal = await session.post('seed_session', { task_dir: '../shell' });
    assert.equal(traversal.status, 422);
    assert.match(traversal.text(), /task_dir/);
    const both = await session.post('seed_session', {
      task_dir: 'csv-transform',
      task: { check_files: { 'check.sh': '' } },
    });
    assert.match(both.text(), /exactly one of 'task_dir'/);
    const escaping = await session.post('seed_session', {
      task: { setup_files: { '../x': 'x' }, check_files: { 'check.sh': '' } },
    });
    assert.equal(escaping.status, 422);
    assert.match(escaping.text(), /relative path without '\.\.'/);
    const silent = { check_files: { 'check.sh': 'echo nothing to see\n' } };
    await session.call('seed_session', { task: silent });
    const verified = await session.call('verify', verifyBody({ task: silent }));
    assert.deepEqual([verified.reward, verified.checks_total], [0, 0]);
    assert.match(String(verified.check_error), /no PASS\/FAIL line/);
  });

  test('every example task fails its check when nothing is done (the tasks are not free)', async () => {
    const rows = exampleRows();
    assert.ok(rows.length >= 8);
    const rewards = await Promise.all(
      rows.map(async (row) => {
        const session = new Session(url);
        await session.call('seed_session', row);
        const verified = await session.call('verify', verifyBody(row));
        assert.ok(verified.checks_total > 0, `${String(row.task_dir)} reports checks`);
        return [row.task_dir, verified.reward];
      }),
    );
    for (const [task, reward] of rewards)
      assert.ok((reward as number) < 1, `${String(task)} untouched scores ${String(reward)}`);
  });

  test('data/example.jsonl is what scripts/generate.ts writes from the task dirs, and carries no check', () => {
    const shipped = readFileSync(EXAMPLE_JSONL, 'utf8');
    assert.equal(shipped, exampleJsonl(), 'regenerate with node dist/resources_servers/shell/scripts/generate.js');
    assert.doesNotMatch(shipped, /PASS|check\.sh/);
    for (const row of exampleRows()) {
      const tools = (row.responses_create_params as { tools: Array<{ name: string }> }).tools.map((tool) => tool.name);
      assert.deepEqual(tools, ['run_command', 'read_file', 'write_file', 'list_dir']);
    }
  });
});

// -------------------------------------------------------------------------------------------------------------
// The environment as a process, the way `gym env start` runs it.

interface EnvProcess {
  child: ChildProcess;
  url: string;
  output(): string;
  exited: Promise<number | null>;
}

/** Every environment process started, so those a failing test leaves running are stopped after the tests. */
const envProcesses: EnvProcess[] = [];

/** The exit code of an environment process expected to exit by itself; fails (and kills it) should it run on. */
async function exitCode(env: EnvProcess): Promise<number | null> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      env.child.kill('SIGKILL');
      reject(new Error(`the environment did not exit within 60 s:\n${env.output()}`));
    }, 60_000);
  });
  try {
    return await Promise.race([env.exited, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

async function startEnvProcess(
  config: Record<string, unknown>,
  env: NodeJS.ProcessEnv = process.env,
  asUid?: number,
): Promise<EnvProcess> {
  const port = await findFreePort();
  const dict = {
    shell_resources_server: {
      resources_servers: { shell: { entrypoint: 'app.ts', domain: 'agent', host: '127.0.0.1', port, ...config } },
    },
  };
  const command =
    asUid === undefined
      ? [process.execPath, APP]
      : ['setpriv', `--reuid=${asUid}`, `--regid=${asUid}`, '--clear-groups', process.execPath, APP];
  const child = spawn(command[0]!, command.slice(1), {
    env: { ...env, NEMO_GYM_CONFIG_DICT: stringify(dict), NEMO_GYM_CONFIG_PATH: 'shell_resources_server' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let printed = '';
  child.stdout.on('data', (chunk: Buffer) => (printed += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (printed += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const started: EnvProcess = { child, url: '', output: () => printed, exited };
  envProcesses.push(started);
  const listening = await Promise.race([
    eventually(() => /listening on/.test(printed), {
      what: 'the listening line',
      timeoutMs: 60_000,
      intervalMs: 50,
    }).then(
      () => true,
      () => false,
    ),
    exited.then(() => false),
  ]);
  started.url = listening ? `http://127.0.0.1:${port}` : '';
  return started;
}

describe('shell environment process', { skip: unavailable }, () => {
  after(async () => {
    for (const env of envProcesses) {
      if (env.child.exitCode !== null || env.child.signalCode !== null) continue;
      env.child.kill('SIGKILL');
      await env.exited;
    }
  });

  test('refuses to start, naming what is missing, when bubblewrap is not there — never runs unsandboxed', async () => {
    const env = await startEnvProcess({ sandbox_base_dir: tempDir('tsgym-shell-nobwrap-') }, { PATH: '/nonexistent' });
    assert.equal(await exitCode(env), 1);
    assert.match(
      env.output(),
      /^Error: the shell environment cannot create its sandboxes on this machine, and it never runs commands unsandboxed: .*bubblewrap \(apt-get install bubblewrap\) is not installed/m,
    );
    assert.doesNotMatch(env.output(), /\n\s+at /, 'no stack trace');
  });

  test(
    'as any user but root, without a tool it needs (nsenter) it refuses in one paragraph naming it — never runs unsandboxed',
    { skip: readableBy(NOBODY, APP) ? false : 'this checkout is out of reach of an unprivileged user' },
    async () => {
      const bin = pathWithout('nsenter', tempDir('tsgym-shell-bin-'));
      const env = await startEnvProcess(
        { sandbox_base_dir: tempDir('tsgym-shell-nonroot-') },
        { ...process.env, PATH: bin },
        NOBODY,
      );
      assert.equal(await exitCode(env), 1);
      assert.match(
        env.output(),
        /^Error: the shell environment cannot create its sandboxes on this machine, and it never runs commands unsandboxed: nsenter \(util-linux\) is not installed\.$/m,
      );
      assert.equal(env.output().trim().split('\n').length, 1, `one paragraph:\n${env.output()}`);
    },
  );

  test('a bad limit in the config is a one-line config error naming the key', async () => {
    const env = await startEnvProcess({ limits: { memroy_bytes: 5 } });
    assert.equal(await exitCode(env), 1);
    assert.match(env.output(), /^Error: shell_resources_server\.limits: Unrecognized key: "memroy_bytes"/m);
  });

  test('a SIGKILLed collector leaks nothing: its sessions expire and their sandboxes are destroyed', async (t) => {
    const baseDir = tempDir('tsgym-shell-expiry-');
    // Sessions idle for 10 s expire: ten times more than a loaded machine takes between the collector's seeding and
    // the count of live sandboxes below. Its long command (sleep 302) may run 300 s, five times the waits below, so
    // only the expiry can end it in time.
    const env = await startEnvProcess({
      sandbox_base_dir: baseDir,
      session_idle_timeout_secs: 10,
      limits: { command_wall_secs: 300 },
    });
    try {
      // The "collector": seeds three sessions, starts a long command in one, and is killed mid-rollout.
      const collector = spawn(process.execPath, ['--input-type=module', '-e', collectorScript(env.url)], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      t.after(() => collector.kill('SIGKILL'));
      let said = '';
      collector.stdout.on('data', (chunk: Buffer) => (said += chunk.toString()));
      await eventually(() => said.includes('seeded'), {
        what: 'the collector seeded its sessions',
        timeoutMs: 60_000,
        intervalMs: 50,
      });
      assert.equal((await status(env.url)).sandboxes_live, 3);
      assert.equal(await sandboxesGauge(env.url), 3);
      await eventually(() => processRunning('sleep 302'), {
        what: "the collector's long command runs",
        timeoutMs: 60_000,
        intervalMs: 50,
      });
      collector.kill('SIGKILL');
      await eventually(async () => (await status(env.url)).sandboxes_live === 0, {
        what: 'every sandbox is destroyed after expiry',
        timeoutMs: 60_000,
        intervalMs: 50,
      });
      assert.equal(await sandboxesGauge(env.url), 0, 'expired sessions leave the gauge');
      const owner = readdirSync(baseDir);
      assert.equal(owner.length, 1);
      assert.deepEqual(sessionDirs(path.join(baseDir, owner[0]!)), [], 'no work dir is left');
      await eventually(() => pidsMentioning(baseDir).length === 0 && !processRunning('sleep 302'), {
        what: 'no sandbox process is left',
        timeoutMs: 60_000,
        intervalMs: 50,
      });
    } finally {
      env.child.kill('SIGTERM');
      await env.exited;
    }
    assert.deepEqual(readdirSync(baseDir), [], 'SIGTERM shutdown removes the owner dir');
  });

  test('a SIGKILLed environment leaves no sandbox process; the next start removes its dirs and mounts', async (t) => {
    const baseDir = tempDir('tsgym-shell-killed-');
    const first = await startEnvProcess({ sandbox_base_dir: baseDir });
    // The sleep outlasts every wait below fivefold: only its sandbox going down with the environment ends it in time.
    t.after(() => killProcesses((proc) => proc.cmdline.trim() === 'sleep 303'));
    let cgroup: string | null | undefined;
    try {
      cgroup = (await status(first.url)).memory_cgroup;
      const sessions = [new Session(first.url), new Session(first.url)];
      for (const session of sessions) await session.call('seed_session', { task_dir: 'csv-transform' });
      void sessions[0]!.post('run_command', { command: 'sleep 303' }).catch(() => undefined);
      await eventually(() => processRunning('sleep 303'), {
        what: 'the command runs',
        timeoutMs: 60_000,
        intervalMs: 50,
      });
    } finally {
      first.child.kill('SIGKILL');
      await first.exited;
    }
    const [ownerDir] = readdirSync(baseDir);
    const uids = sessionDirs(path.join(baseDir, ownerDir!)).map((name) => Number(name.slice(1)));
    assert.equal(uids.length, 2);
    assert.equal(mountsUnder(path.join(baseDir, ownerDir!)).length, 2, 'a SIGKILLed environment leaves its mounts');
    const gone = () =>
      pidsMentioning(baseDir).length === 0 &&
      uids.every((uid) => pidsOfUid(uid).length === 0) &&
      !processRunning('sleep 303');
    await eventually(gone, {
      what: 'bwrap --die-with-parent takes the running sandbox down with the environment',
      timeoutMs: 60_000,
      intervalMs: 50,
    });

    const second = await startEnvProcess({ sandbox_base_dir: baseDir });
    try {
      assert.equal((await status(second.url)).stale_sandbox_dirs_removed_at_start, 1);
      assert.equal(existsSync(path.join(baseDir, ownerDir!)), false);
      assert.deepEqual(mountsUnder(path.join(baseDir, ownerDir!)), []);
      assert.equal((await status(second.url)).sandboxes_live, 0);
      if (cgroup) assert.equal(existsSync(cgroup), false, "the dead environment's memory cgroups are removed too");
      assert.ok(gone());
    } finally {
      second.child.kill('SIGTERM');
      await second.exited;
    }
  });

  test('32 sessions at once, each in its own sandbox', async () => {
    const baseDir = tempDir('tsgym-shell-32-');
    const env = await startEnvProcess({ sandbox_base_dir: baseDir });
    try {
      assert.equal(await sandboxesGauge(env.url), 0, 'no sandbox before the first seed (the self-test left none)');
      const sessions = Array.from({ length: 32 }, () => new Session(env.url));
      await Promise.all(
        sessions.map((session, i) =>
          session.call('seed_session', {
            task: {
              setup_files: { 'me.txt': `${i}` },
              check_files: { 'check.sh': `[ "$(cat me.txt)" = "${i}" ] && echo PASS mine || echo FAIL mine\n` },
            },
          }),
        ),
      );
      assert.equal((await status(env.url)).sandboxes_live, 32);
      assert.equal(await sandboxesGauge(env.url), 32);
      const seen = await Promise.all(
        sessions.map((session) => session.call('run_command', { command: 'cat me.txt; ls /work | wc -l' })),
      );
      assert.deepEqual(
        seen.map((r) => r.stdout),
        sessions.map((_, i) => `${i}1\n`),
      );
      const verified = await Promise.all(sessions.map((session) => session.call('verify', verifyBody({}))));
      assert.deepEqual(
        verified.map((v) => v.reward),
        sessions.map(() => 1),
      );
      await eventually(async () => (await status(env.url)).sandboxes_live === 0, {
        what: 'every sandbox is destroyed after verify',
        timeoutMs: 60_000,
        intervalMs: 50,
      });
      assert.equal(await sandboxesGauge(env.url), 0);
    } finally {
      env.child.kill('SIGTERM');
      await env.exited;
    }
  });
});

function collectorScript(url: string): string {
  const client = new URL('../../src/http/client.js', import.meta.url).href;
  const cookies = new URL('../../src/http/cookies.js', import.meta.url).href;
  return `
import { request } from ${JSON.stringify(client)};
import { CookieJar } from ${JSON.stringify(cookies)};
const jars = [new CookieJar(), new CookieJar(), new CookieJar()];
for (const jar of jars) await request(${JSON.stringify(url)} + '/seed_session', { method: 'POST', json: { task_dir: 'log-errors' }, jar, timeoutMs: 120000 });
console.log('seeded');
await request(${JSON.stringify(url)} + '/run_command', { method: 'POST', json: { command: 'sleep 302' }, jar: jars[0], timeoutMs: 600000 });
`;
}
