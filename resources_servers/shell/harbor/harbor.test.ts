/**
 * Harbor-format tasks in real sandboxes: seeded over HTTP (the work dir at WORKDIR, ENV, COPY, RUN), verified by
 * tests/test.sh with the reward and extras from /logs/verifier, the task's timeouts honoured, a failing RUN failing
 * the seed with its output; `gym tasks check` naming exactly the task whose oracle is wrong; and the example rows
 * collected through the remote agent by a service that runs each task's oracle.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { findFreePort } from '../../../src/config/index.js';
import { installRoot } from '../../../src/config/roots.js';
import { placeholderResponse } from '../../../src/contract/index.js';
import { request } from '../../../src/http/client.js';
import { CookieJar } from '../../../src/http/cookies.js';
import { serve, toolHistory, userMessages } from '../../../src/service/index.js';
import { readJsonl, runGym, tempDir } from '../../../test/support/cli.js';
import { pathWithout, sandboxTestsUnavailable } from '../../../test/support/sandbox.js';
import { createShellServer, DEFAULT_HARBOR_TASKS_DIR, shellSettings } from '../app.js';
import { HARBOR_EXAMPLE_JSONL } from '../scripts/harbor-rows.js';

const unavailable = sandboxTestsUnavailable();

/** A directory the sessions' uids can pass through (the sandbox base dir's parents must be o+x). */
function openTempDir(prefix: string): string {
  const dir = tempDir(prefix);
  chmodSync(dir, 0o755);
  return dir;
}

/** Harbor tasks written by the test: name → files (paths relative to the task dir). */
function writeTasks(tasks: Record<string, Record<string, string>>): string {
  const root = openTempDir('tsgym-harbor-tasks-');
  for (const [name, files] of Object.entries(tasks)) {
    for (const [relative, content] of Object.entries(files)) {
      const file = path.join(root, name, relative);
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(file, content);
    }
  }
  return root;
}

const TIMEOUTS_TASK = {
  'task.toml': '[agent]\ntimeout_sec = 2.0\n[verifier]\ntimeout_sec = 1.0\n',
  'instruction.md': 'Wait.\n',
  'environment/Dockerfile': 'FROM ubuntu:24.04\nWORKDIR /srv/app\n',
  'tests/test.sh': 'echo 1 > /logs/verifier/reward.txt\nsleep 30\n',
};

const FAILING_RUN_TASK = {
  'task.toml': 'version = "1.0"\n',
  'instruction.md': 'Never seeded.\n',
  'environment/Dockerfile':
    'FROM ubuntu:24.04\nWORKDIR /app\nRUN echo step one\nRUN echo compiling the thing; echo "fatal: no compiler" >&2; exit 3\nRUN echo never\n',
  'tests/test.sh': 'echo 1 > /logs/verifier/reward.txt\n',
  'solution/solve.sh': 'true\n',
};

class Session {
  readonly jar = new CookieJar();
  constructor(private readonly url: string) {}

  async post(route: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
    const reply = await request(`${this.url}/${route}`, {
      method: 'POST',
      json: body,
      jar: this.jar,
      timeoutMs: 120_000,
    });
    return { status: reply.status, body: reply.json() as Record<string, unknown> };
  }

  async call(route: string, body: unknown): Promise<Record<string, unknown>> {
    const reply = await this.post(route, body);
    assert.equal(reply.status, 200, `${route}: ${JSON.stringify(reply.body)}`);
    return reply.body;
  }

  verify(harborTask: string): Promise<Record<string, unknown>> {
    return this.call('verify', {
      harbor_task: harborTask,
      responses_create_params: { input: [{ role: 'user', content: 'task' }] },
      response: placeholderResponse(),
    });
  }
}

describe('Harbor tasks in the shell environment', { skip: unavailable }, () => {
  let url: string;
  let close: () => Promise<void>;
  let tasksDir: string;

  before(async () => {
    tasksDir = writeTasks({ timeouts: TIMEOUTS_TASK, 'failing-run': FAILING_RUN_TASK });
    cpSync(DEFAULT_HARBOR_TASKS_DIR, tasksDir, { recursive: true });
    const running = await createShellServer(
      shellSettings({ sandbox_base_dir: openTempDir('tsgym-harbor-base-'), harbor_tasks_dir: tasksDir }, 'shell'),
    );
    const listening = await running.server.app.listen(0, '127.0.0.1');
    url = listening.url;
    close = async () => {
      await listening.close();
      await running.close();
    };
  });

  after(() => close());

  test('the Dockerfile is applied: work dir at WORKDIR, ENV in commands, COPY and RUN done; the oracle scores 1', async () => {
    const session = new Session(url);
    await session.call('seed_session', { harbor_task: 'greeting-service' });
    const ran = await session.call('run_command', {
      command: 'pwd; echo "$GREETING_PREFIX|$APP_HOME|$HOME"; ls -a; ls out; id -u',
    });
    assert.equal(ran.exit_code, 0, JSON.stringify(ran));
    assert.equal(ran.stdout, '/app\nHello from|/app|/app\n.\n..\ndata\ngreet.py\nout\n1000\n');
    const listed = await session.call('list_dir', { path: 'data' });
    assert.deepEqual(listed.entries, [{ name: 'team.conf', type: 'file', size: 14 }]);
    const before = await session.verify('greeting-service');
    assert.equal(before.reward, 0, 'nothing done yet');
    // A verified session is gone: seed again and do the work as the oracle does.
    await session.call('seed_session', { harbor_task: 'greeting-service' });
    const solved = await session.call('run_command', {
      command: 'python3 greet.py > out/greeting.txt && echo "status=ready" >> data/team.conf',
    });
    assert.equal(solved.exit_code, 0, JSON.stringify(solved));
    const verified = await session.verify('greeting-service');
    assert.equal(verified.reward, 1, JSON.stringify(verified));
    assert.equal(verified.task_id, 'greeting-service');
    assert.equal(verified.verifier_exit_code, 0);
    assert.equal(verified.commands_run, 1);
    assert.equal(verified.check_error, undefined);
  });

  test("reward.json's extras reach the verify response; no reward file is reward 0 with check_error", async () => {
    const session = new Session(url);
    await session.call('seed_session', { harbor_task: 'word-stats' });
    await session.call('run_command', { command: 'wc -w < text.txt | tr -d " " > count.txt; echo the > top.txt' });
    const verified = await session.verify('word-stats');
    assert.deepEqual(
      [verified.reward, verified.count_ok, verified.top_ok, verified.expected_count],
      [1, true, true, 19],
      JSON.stringify(verified),
    );
    await session.call('seed_session', { harbor_task: 'word-stats' });
    await session.call('run_command', { command: 'rm text.txt' }); // the test's python then fails before writing
    const broken = await session.verify('word-stats');
    assert.equal(broken.reward, 0);
    assert.match(
      String(broken.check_error),
      /wrote neither \/logs\/verifier\/reward\.txt nor .*reward\.json \(test\.sh exited 1\).*No such file/s,
    );
  });

  test("task.toml's timeouts: the agent's is the session's wall budget, the verifier's bounds test.sh", async () => {
    const session = new Session(url);
    await session.call('seed_session', { harbor_task: 'timeouts' });
    const started = performance.now();
    const slept = await session.call('run_command', { command: 'pwd; sleep 20' });
    assert.equal(slept.limit_exceeded, 'session_wall_time', JSON.stringify(slept));
    assert.equal(slept.stdout, '/srv/app\n');
    const verified = await session.verify('timeouts');
    // test.sh wrote a reward and then slept: the verifier's 1 s bound stopped it long before its 30 s, and a
    // verifier that did not finish scores nothing, whatever it wrote before.
    assert.ok(performance.now() - started < 15_000, 'neither the 20 s command nor the 30 s test.sh ran out');
    assert.equal(verified.reward, 0);
    assert.equal(verified.verifier_exit_code, 137);
    assert.match(
      String(verified.check_error),
      /^tests\/test\.sh did not finish: it ran past the verifier timeout, 1 s; its reward file is not used/,
    );
  });

  test('a failing RUN step fails the seed with its output and line; no sandbox is left', async () => {
    const session = new Session(url);
    const seeded = await session.post('seed_session', { harbor_task: 'failing-run' });
    assert.equal(seeded.status, 422);
    const message = JSON.stringify(seeded.body);
    assert.match(
      message,
      /failing-run\/environment\/Dockerfile:4: RUN echo compiling the thing.* failed with exit code 3/,
    );
    assert.match(message, /compiling the thing\\nfatal: no compiler/);
    assert.doesNotMatch(message, /never/);
    assert.match(message, /"loc":\["body","harbor_task"\]/);
    const status = (await request(`${url}/`, { timeoutMs: 30_000 })).json() as { sandboxes_live: number };
    assert.equal(status.sandboxes_live, 0);
  });

  test('an unknown harbor_task is a 422 naming the field', async () => {
    const seeded = await new Session(url).post('seed_session', { harbor_task: 'no-such-task' });
    assert.equal(seeded.status, 422);
    assert.match(JSON.stringify(seeded.body), /harbor_task 'no-such-task': no task\.toml in .*no-such-task/);
  });
});

describe('gym tasks check', { skip: unavailable }, () => {
  const check = (args: string[]) =>
    runGym(['tasks', 'check', ...args, `+sandbox_base_dir=${path.join(openTempDir('tsgym-tasks-check-'), 'base')}`], {
      cwd: tempDir('tsgym-tasks-check-cwd-'),
    });

  test('lists exactly the task whose oracle is wrong, exit 1; --json says the same', async () => {
    const run = await check([DEFAULT_HARBOR_TASKS_DIR]);
    assert.equal(run.code, 1, `${run.stdout}\n${run.stderr}`);
    const lines = run.stdout.split('\n');
    for (const task of ['greeting-service', 'hello-world', 'word-stats'])
      assert.ok(
        lines.some((line) => new RegExp(`^ok +${task} +reward 1\\.0 +\\d+\\.\\d s$`).test(line)),
        run.stdout,
      );
    assert.ok(
      lines.some((line) => /^FAIL sort-numbers +reward 0\.0 +\d+\.\d s$/.test(line)),
      run.stdout,
    );
    assert.match(run.stdout, /^1 of 4 tasks do not reach reward 1 with their oracle: sort-numbers$/m);
    const json = await check([DEFAULT_HARBOR_TASKS_DIR, '--json']);
    assert.equal(json.code, 1);
    const report = JSON.parse(json.stdout) as { failing: string[]; tasks: Array<{ task: string; verify: object }> };
    assert.deepEqual(report.failing, ['sort-numbers']);
    assert.deepEqual(report.tasks.find((task) => task.task === 'word-stats')!.verify, {
      ...report.tasks.find((task) => task.task === 'word-stats')!.verify,
      count_ok: true,
      top_ok: true,
    });
  });

  test('one task that passes is exit 0; a failing RUN step is reported with its output', async () => {
    const good = await check([path.join(DEFAULT_HARBOR_TASKS_DIR, 'hello-world')]);
    assert.equal(good.code, 0, `${good.stdout}\n${good.stderr}`);
    assert.match(good.stdout, /^All 1 tasks reach reward 1 with their oracle\.$/m);
    const bad = await check([writeTasks({ 'failing-run': FAILING_RUN_TASK })]);
    assert.equal(bad.code, 1, `${bad.stdout}\n${bad.stderr}`);
    assert.match(
      bad.stdout,
      /^FAIL failing-run .*\n +seed failed: failing-run\/environment\/Dockerfile:4: RUN .* failed with exit code 3/m,
    );
    assert.match(bad.stdout, /fatal: no compiler/);
  });

  test('without a tool the sandboxes need (nsenter, as a user) it refuses in one paragraph naming it, exit 1', (t) => {
    const gym = path.join(installRoot(), 'bin', 'gym.js');
    const reachable = spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', 'test', '-r', gym]);
    if (reachable.status !== 0) return t.skip('this checkout is out of reach of an unprivileged user');
    const run = spawnSync(
      'setpriv',
      [
        '--reuid=65534',
        '--regid=65534',
        '--clear-groups',
        process.execPath,
        gym,
        'tasks',
        'check',
        DEFAULT_HARBOR_TASKS_DIR,
      ],
      {
        cwd: '/',
        env: { ...process.env, HOME: '/', PATH: pathWithout('nsenter', tempDir('tsgym-harbor-bin-')) },
        encoding: 'utf8',
      },
    );
    assert.equal(run.status, 1, `${run.stdout}\n${run.stderr}`);
    assert.match(
      run.stderr,
      /^Error: gym tasks check runs each task in a shell environment sandbox, and the shell environment cannot create its sandboxes on this machine, .*nsenter \(util-linux\) is not installed.*\n$/,
    );
    assert.equal(run.stderr.trim().split('\n').length, 1, run.stderr);
    assert.equal(run.stdout, '');
  });

  test('a directory without tasks is one paragraph, exit 1', async () => {
    const run = await check([openTempDir('tsgym-no-tasks-')]);
    assert.equal(run.code, 1);
    assert.match(run.stderr, /^Error: .*no Harbor task here \(a task is a directory holding task\.toml\)\n$/);
  });
});

describe('Harbor rows collected through the remote agent', { skip: unavailable }, () => {
  test("a service that runs each task's oracle scores 1.0 on every task whose oracle is right", async (t) => {
    // The scripted service: find the task by its instruction, run its solve.sh as one command, then finish.
    const tasks = readdirSync(DEFAULT_HARBOR_TASKS_DIR).map((name) => ({
      instruction: readFileSync(path.join(DEFAULT_HARBOR_TASKS_DIR, name, 'instruction.md'), 'utf8').trim(),
      solve: readFileSync(path.join(DEFAULT_HARBOR_TASKS_DIR, name, 'solution', 'solve.sh'), 'utf8'),
    }));
    const service = await serve(
      (conversation) => {
        const asked = userMessages(conversation).join('\n');
        const task = tasks.find((candidate) => asked.includes(candidate.instruction));
        if (!task) return { final: 'unknown task' };
        if (toolHistory(conversation).length > 0) return { final: 'ran the oracle' };
        return {
          toolCalls: [{ name: 'run_command', arguments: { command: `bash <<'ORACLE'\n${task.solve}ORACLE\n` } }],
        };
      },
      { port: 0, brainName: 'harbor-oracle' },
    );
    t.after(() => service.close());
    const cwd = tempDir('tsgym-harbor-collect-');
    const run = await runGym(
      [
        'eval',
        'run',
        '+config_paths=[resources_servers/shell/configs/shell.yaml]',
        `++remote_agent.responses_api_agents.remote_agent.agent_base_url=${service.url}`,
        `++shell_resources_server.resources_servers.shell.sandbox_base_dir=${path.join(openTempDir('tsgym-harbor-env-'), 'base')}`,
        `++head_server.port=${await findFreePort()}`,
        ...['-a', 'remote_agent', '-i', HARBOR_EXAMPLE_JSONL, '-o', 'out/rollouts.jsonl'],
      ],
      { cwd },
    );
    assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
    const rows = readJsonl(path.join(cwd, 'out', 'rollouts.jsonl'));
    const rewards = Object.fromEntries(rows.map((row): [string, unknown] => [String(row.harbor_task), row.reward]));
    assert.deepEqual(rewards, { 'greeting-service': 1, 'hello-world': 1, 'word-stats': 1, 'sort-numbers': 0 });
    const words = rows.find((row) => row.harbor_task === 'word-stats')!;
    assert.deepEqual([words.count_ok, words.top_ok, words.difficulty], [true, true, 'easy']);
  });
});
