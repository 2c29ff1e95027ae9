/**
 * tsgym as its users have it: `npm pack` of this checkout, installed into an empty project outside the checkout,
 * under a 0700 directory whose path has a space (as a home directory is), then driven only through that project's
 * `npx gym` and the public entries. Then the same install as an unprivileged user. Nothing here reaches into the
 * checkout at run time: a file the package forgets to ship, an export without types, a path that only resolves
 * inside the repository, or a server that cannot read its own files under a private directory fails here.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';

interface Outcome {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Every deadline in this file is only an upper bound against a hung command: an install, a compile through tsx or a
 * quickstart takes seconds on a quiet machine and can take minutes on a busy one.
 */
const COMMAND_DEADLINE_MS = 300_000;
const LISTEN_DEADLINE_MS = 300_000;

/** Run a command to its end, its output collected (a hung command is killed after `timeoutMs`). */
function run(
  command: string,
  args: readonly string[],
  cwd: string,
  options: { timeoutMs?: number; env?: NodeJS.ProcessEnv } = {},
): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env: options.env ?? cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, options.timeoutMs ?? COMMAND_DEADLINE_MS);
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      const killed = timedOut ? `\n(killed: still running after ${options.timeoutMs ?? COMMAND_DEADLINE_MS} ms)` : '';
      resolve({ code, stdout, stderr: stderr + killed });
    });
  });
}

/** The environment a user's shell has: none of this checkout's search roots or test switches. */
function cleanEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra };
  delete env.NEMO_GYM_EXTRA_ROOTS;
  delete env.NODE_OPTIONS;
  delete env.NODE_TEST_CONTEXT;
  return env;
}

function explain(outcome: Outcome): string {
  return `exit ${outcome.code}\n--- stdout\n${outcome.stdout.slice(-3000)}\n--- stderr\n${outcome.stderr.slice(-3000)}`;
}

/**
 * A long-running command (an agent service) whose first `listening on URL` line is awaited; stopped at once when it
 * never says it.
 */
async function startListening(command: string, args: readonly string[], cwd: string, env: NodeJS.ProcessEnv) {
  const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`no 'listening on' line within ${LISTEN_DEADLINE_MS} ms:\n${output}`));
    }, LISTEN_DEADLINE_MS);
    const onData = (chunk: string) => {
      output += chunk;
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (match?.[1]) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    };
    child.stdout.setEncoding('utf8').on('data', onData);
    child.stderr.setEncoding('utf8').on('data', onData);
    child.once('close', (code) => reject(new Error(`exited with ${code} before listening:\n${output}`)));
  });
  return { url, stop: () => child.kill('SIGTERM') };
}

/** A port nothing listens on now (the head server of one `gym eval run`). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
    server.once('error', reject);
  });
}

/** A ```ts block of the README (or a page under docs/) that imports `entry`, exactly as printed. */
function printedExample(entry: string): string {
  const pages = [
    path.join(REPO, 'README.md'),
    ...readdirSync(path.join(REPO, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .map((f) => path.join(REPO, 'docs', f)),
  ];
  for (const page of pages) {
    for (const match of readFileSync(page, 'utf8').matchAll(/```ts\n([\s\S]*?)```/g)) {
      const code = match[1] ?? '';
      if (code.includes(`from '${entry}'`)) return code;
    }
  }
  throw new Error(`no \`\`\`ts block importing '${entry}' in README.md or docs/`);
}

let root = '';
let project = '';
let tarball = '';

before(async () => {
  root = mkdtempSync(path.join(os.tmpdir(), 'tsgym-user-'));
  chmodSync(root, 0o700);
  project = path.join(root, 'my project');
  mkdirSync(project);
  const packed = await run(NPM, ['pack', '--ignore-scripts', '--json', '--pack-destination', root], REPO);
  assert.equal(packed.code, 0, explain(packed));
  tarball = path.join(root, (JSON.parse(packed.stdout) as Array<{ filename: string }>)[0]!.filename);
  writeFileSync(
    path.join(project, 'package.json'),
    JSON.stringify({ name: 'my-evals', private: true, type: 'module' }),
  );
  const installed = await run(NPM, ['install', '--no-audit', '--no-fund', '--prefer-offline', tarball], project, {
    timeoutMs: 600_000,
  });
  assert.equal(installed.code, 0, explain(installed));
});

after(() => {
  if (root) rmSync(root, { recursive: true, force: true });
});

describe('the installed package', () => {
  it('ships what runs and nothing that only develops', () => {
    const pkg = path.join(project, 'node_modules', 'tsgym');
    for (const file of [
      'dist/src/service/index.js',
      'dist/src/service/index.d.ts',
      'dist/src/environment/index.d.ts',
      'bin/gym.js',
      'counter_remote.yaml',
      'resources_servers/shell/sandbox/launcher.py',
    ]) {
      assert.ok(existsSync(path.join(pkg, file)), `${file} is in the package`);
    }
    const listing = spawnSync('tar', ['-tzf', tarball], { encoding: 'utf8' }).stdout.split('\n');
    assert.deepEqual(
      listing.filter((entry) => /\.test\.|\/bench\/|\/test\/support\/|\.ts$/.test(entry) && !entry.endsWith('.d.ts')),
      [],
    );
  });

  it("the README's service example runs as printed and passes gym agent check", async () => {
    writeFileSync(path.join(project, 'service.ts'), printedExample('tsgym/service'));
    const service = await startListening(
      process.execPath,
      ['--import', 'tsx', 'service.ts'],
      project,
      cleanEnv({ PORT: '0' }),
    );
    try {
      const check = await run('npx', ['gym', 'agent', 'check', service.url], project);
      assert.equal(check.code, 0, explain(check));
    } finally {
      service.stop();
    }
  });

  it("the README's environment example, written in the user's project, is found and served by gym env start", async () => {
    const dir = path.join(project, 'resources_servers', 'todo');
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, 'app.ts'), printedExample('tsgym/environment'));
    writeFileSync(
      path.join(project, 'todo.yaml'),
      'todo_resources_server:\n  resources_servers:\n    todo:\n      entrypoint: app.py\n      domain: agent\n',
    );
    // The long-running command runs as `node …/gym.js`, not through npx, so Ctrl-C (SIGINT) reaches gym itself.
    const gymBin = path.join(project, 'node_modules', 'tsgym', 'bin', 'gym.js');
    const started = spawn(
      process.execPath,
      [gymBin, 'env', 'start', '+config_paths=[todo.yaml]', `++head_server.port=${await freePort()}`],
      { cwd: project, env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    started.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    started.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`not ready within ${LISTEN_DEADLINE_MS} ms:\n${output}`)),
          LISTEN_DEADLINE_MS,
        );
        started.stdout.on('data', () => {
          if (/servers ready/.test(output)) {
            clearTimeout(timer);
            resolve();
          }
        });
        started.once('close', (code) => reject(new Error(`gym env start exited with ${code}:\n${output}`)));
      });
      assert.match(
        output,
        new RegExp(`${path.join(project, 'resources_servers', 'todo').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`),
      );
    } finally {
      const exited = new Promise((resolve) => started.once('close', resolve));
      started.kill('SIGINT');
      await exited;
    }
  });

  it('a scaffolded environment and a scaffolded service collect at mean reward 1.0 through gym eval run', async () => {
    const scaffolds = [
      {
        args: ['new', 'environment', 'trivia'],
        solver: 'resources_servers/trivia/solver.ts',
        name: 'trivia',
        config: 'resources_servers/trivia/configs/trivia.yaml',
        data: 'resources_servers/trivia/data/example.jsonl',
      },
      {
        args: ['new', 'service', 'my_agent'],
        solver: 'my_agent/service.ts',
        name: 'my_agent',
        config: 'my_agent/configs/my_agent.yaml',
        data: 'my_agent/data/example.jsonl',
      },
    ];
    for (const scaffold of scaffolds) {
      const written = await run('npx', ['gym', ...scaffold.args], project);
      assert.equal(written.code, 0, explain(written));
      const service = await startListening(
        process.execPath,
        ['--import', 'tsx', scaffold.solver, '--port', '0'],
        project,
        cleanEnv(),
      );
      try {
        const output = `results/${scaffold.name}.jsonl`;
        const collected = await run(
          'npx',
          [
            'gym',
            'eval',
            'run',
            `+config_paths=[${scaffold.config}]`,
            `+agent_name=${scaffold.name}_agent`,
            `+input_jsonl_fpath=${scaffold.data}`,
            `+output_jsonl_fpath=${output}`,
            `++${scaffold.name}_agent.responses_api_agents.remote_agent.agent_base_url=${service.url}`,
            `++head_server.port=${await freePort()}`,
          ],
          project,
        );
        assert.equal(collected.code, 0, explain(collected));
        const rows = readFileSync(path.join(project, output), 'utf8')
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line) as { reward: number });
        assert.ok(rows.length > 0);
        assert.deepEqual(
          rows.map((row) => row.reward),
          rows.map(() => 1),
        );
      } finally {
        service.stop();
      }
    }
  });

  it('gym quickstart works in the user project', async () => {
    const outcome = await run('npx', ['gym', 'quickstart'], project);
    assert.equal(outcome.code, 0, explain(outcome));
    assert.match(outcome.stdout, /mean reward 1\.0, 0 failed, 0 missing/);
  });

  it('the shell environment runs its sandbox self-test and rollouts from an install under a 0700 directory with a space', async (t) => {
    // Its own temp dir, so the sandbox base dir the environment makes there by default (tsgym-shell/, kept between
    // runs on a user's machine) goes with this test. Not under the 0700 root: the sessions' uids pass through it.
    const tmp = mkdtempSync(path.join(os.tmpdir(), 'tsgym-user-shell-tmp-'));
    t.after(() => rmSync(tmp, { recursive: true, force: true }));
    chmodSync(tmp, 0o755);
    const outcome = await run('npx', ['gym', 'quickstart', '--env', 'shell'], project, {
      timeoutMs: 600_000,
      env: cleanEnv({ TMPDIR: tmp }),
    });
    assert.equal(outcome.code, 0, explain(outcome));
    assert.match(outcome.stdout, /mean reward 1\.0, 0 failed, 0 missing/);
  });
});

/** Root can run the counter flow as a user it creates; anyone else already is such a user. */
const asRoot = process.getuid?.() === 0;

describe(
  'the installed package as an unprivileged user',
  { skip: asRoot ? false : 'this suite runs as an unprivileged user already' },
  () => {
    const user = 'tsgym-test';
    let home = '';
    let uid = 0;
    let gid = 0;

    before(() => {
      if (spawnSync('id', ['-u', user]).status !== 0) {
        const added = spawnSync('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', user], {
          encoding: 'utf8',
        });
        assert.equal(added.status, 0, `useradd: ${added.stderr}`);
      }
      uid = Number(spawnSync('id', ['-u', user], { encoding: 'utf8' }).stdout.trim());
      gid = Number(spawnSync('id', ['-g', user], { encoding: 'utf8' }).stdout.trim());
      home = mkdtempSync(path.join(os.tmpdir(), 'tsgym-unprivileged-'));
      cpSync(project, path.join(home, 'project'), { recursive: true, verbatimSymlinks: true });
      // The user's own temp dir, inside its private home (where the shell environment puts its sandboxes' dirs).
      mkdirSync(path.join(home, 'tmp'));
      spawnSync('chown', ['-R', `${uid}:${gid}`, home]);
      chmodSync(home, 0o700);
    });

    after(() => {
      if (home) rmSync(home, { recursive: true, force: true });
    });

    const asUser = (args: readonly string[], timeoutMs = COMMAND_DEADLINE_MS) =>
      run(
        'setpriv',
        [
          `--reuid=${uid}`,
          `--regid=${gid}`,
          '--clear-groups',
          process.execPath,
          path.join(home, 'project', 'node_modules', 'tsgym', 'bin', 'gym.js'),
          ...args,
        ],
        path.join(home, 'project'),
        {
          timeoutMs,
          env: cleanEnv({ HOME: home, USER: user, TMPDIR: path.join(home, 'tmp') }),
        },
      );

    it('the counter quickstart collects at mean reward 1.0', async () => {
      const outcome = await asUser(['quickstart']);
      assert.equal(outcome.code, 0, explain(outcome));
      assert.match(outcome.stdout, /mean reward 1\.0, 0 failed, 0 missing/);
    });

    it('the shell quickstart collects at mean reward 1.0 without root, each session held in namespaces of its own', async () => {
      const outcome = await asUser(['quickstart', '--env', 'shell'], 600_000);
      assert.equal(outcome.code, 0, explain(outcome));
      assert.match(outcome.stdout, /Result: 8 rollouts, mean reward 1\.0, 0 failed, 0 missing\./);
    });
  },
);
