/**
 * `gym new`, as a user meets it: in an empty project (an `npm init` package.json, and node_modules/tsgym linked to
 * this checkout, which is what `npm install <tsgym tarball>` leaves for the package's exports), run the built CLI,
 * then the test it wrote, the service it wrote and `gym eval run` on the config it wrote, all as real processes, and
 * read the rewards. Also: it refuses to overwrite anything, and refuses a NAME that is not a plain identifier.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { findFreePort } from '../config/index.js';
import { installRoot } from '../config/roots.js';
import { readJsonl, runGym, tempDir } from '../../test/support/cli.js';
import { spawnService, type SpawnedService } from '../../test/support/examples.js';

/** tsx's loader from this checkout's dependencies: the project has no node_modules/tsx of its own here. */
const TSX_LOADER = import.meta.resolve('tsx');
/**
 * The temp dir of every process these tests start: tsx keeps its cache in `$TMPDIR/tsx-<uid>`, which would outlive the
 * tests in the shared temp dir. This one is removed when the test process exits.
 */
const CHILD_TMP = tempDir('tsgym-scaffold-tmp-');
/** What the written files run under: no extra roots, so everything is found from the project and tsgym. */
const PLAIN_ENV = { NEMO_GYM_EXTRA_ROOTS: undefined, TMPDIR: CHILD_TMP };
const hasPython = spawnSync('python3', ['--version']).status === 0;
/**
 * Upper bounds only, for a busy machine: a whole scaffold-to-rewards test (a few seconds on a quiet one), and a written
 * service's start-up (tsx compiles it first).
 */
const WHOLE_RUN_MS = 300_000;
const SERVICE_START_MS = 120_000;

function emptyProject(): string {
  const dir = tempDir('tsgym-new-');
  writeFileSync(path.join(dir, 'package.json'), `${JSON.stringify({ name: 'my-project', version: '1.0.0' })}\n`);
  mkdirSync(path.join(dir, 'node_modules'));
  symlinkSync(installRoot(), path.join(dir, 'node_modules', 'tsgym'), 'dir');
  return dir;
}

/** Run a written node:test file the way its header says (`node --import tsx --test …`), outside this test runner. */
function runWrittenTest(dir: string, file: string): Promise<{ code: number | null; output: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, TMPDIR: CHILD_TMP };
  delete env.NODE_TEST_CONTEXT; // else the child reports to this runner instead of running on its own
  const child = spawn(process.execPath, ['--import', TSX_LOADER, '--test', file], {
    cwd: dir,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, output }));
  });
}

/** The eval run the next steps print, with the service's ephemeral URL and a free head-server port. */
async function collect(dir: string, name: string, config: string, rows: string, serviceUrl: string): Promise<number[]> {
  const res = await runGym(
    [
      'eval',
      'run',
      `+config_paths=[${config}]`,
      `+agent_name=${name}_agent`,
      `+input_jsonl_fpath=${rows}`,
      `+output_jsonl_fpath=results/${name}.jsonl`,
      `++${name}_agent.responses_api_agents.remote_agent.agent_base_url=${serviceUrl}`,
      `++head_server.port=${await findFreePort()}`,
    ],
    { cwd: dir, env: PLAIN_ENV },
  );
  assert.equal(res.code, 0, `${res.stdout}\n${res.stderr}`);
  assert.equal(readJsonl(path.join(dir, `results/${name}_failures.jsonl`)).length, 0, res.stdout);
  return readJsonl(path.join(dir, `results/${name}.jsonl`)).map((row) => row.reward as number);
}

async function withService<T>(start: Promise<SpawnedService>, use: (url: string) => Promise<T>): Promise<T> {
  const service = await start;
  try {
    return await use(service.url);
  } finally {
    await service.close();
  }
}

const ENVIRONMENT_FILES = [
  'app.ts',
  'configs/trivia.yaml',
  'data/example.jsonl',
  'solver.ts',
  'app.test.ts',
  'README.md',
  'package.json',
];

describe('gym new environment', () => {
  test(
    'writes a skeleton whose test passes and whose solver collects at reward 1.0 on every example row',
    { timeout: WHOLE_RUN_MS },
    async () => {
      const dir = emptyProject();
      const res = await runGym(['new', 'environment', 'trivia'], { cwd: dir, env: PLAIN_ENV });
      assert.equal(res.code, 0, res.stderr);
      for (const file of ENVIRONMENT_FILES)
        assert.ok(existsSync(path.join(dir, 'resources_servers/trivia', file)), file);
      assert.match(res.stdout, /node --import tsx resources_servers\/trivia\/solver\.ts/);
      assert.match(
        res.stdout,
        /npx gym eval run "\+config_paths=\[resources_servers\/trivia\/configs\/trivia\.yaml\]" \+agent_name=trivia_agent/,
      );
      assert.match(res.stdout, /results\/trivia\.jsonl[\s\S]*Edit next:/);
      assert.match(
        readFileSync(path.join(dir, 'resources_servers/trivia/configs/trivia.yaml'), 'utf8'),
        /trivia_agent:[\s\S]*agent_base_url: http:\/\/127\.0\.0\.1:9000/,
      );

      const written = await runWrittenTest(dir, 'resources_servers/trivia/app.test.ts');
      assert.equal(written.code, 0, written.output);

      const solver = spawnService(
        process.execPath,
        ['--import', TSX_LOADER, path.join(dir, 'resources_servers/trivia/solver.ts'), '--port', '0'],
        { env: { ...process.env, TMPDIR: CHILD_TMP }, timeoutMs: SERVICE_START_MS },
      );
      const rewards = await withService(solver, (url) =>
        collect(
          dir,
          'trivia',
          'resources_servers/trivia/configs/trivia.yaml',
          'resources_servers/trivia/data/example.jsonl',
          url,
        ),
      );
      assert.deepEqual(rewards, [1, 1, 1]);
    },
  );

  test('run twice, it refuses, names what exists, and changes nothing', async () => {
    const dir = emptyProject();
    assert.equal((await runGym(['new', 'environment', 'trivia'], { cwd: dir })).code, 0);
    const app = path.join(dir, 'resources_servers/trivia/app.ts');
    writeFileSync(app, '// my edits\n');
    const again = await runGym(['new', 'environment', 'trivia'], { cwd: dir });
    assert.equal(again.code, 1);
    assert.equal(again.stdout, '');
    assert.match(
      again.stderr,
      /^Error: gym new environment trivia wrote nothing: resources_servers\/trivia\/app\.ts, .* already exist in .*never overwrites/,
    );
    assert.equal(again.stderr.trim().split('\n').length, 1, 'one paragraph');
    assert.equal(readFileSync(app, 'utf8'), '// my edits\n');
  });

  test('one existing target is enough to write nothing at all', async () => {
    const dir = emptyProject();
    mkdirSync(path.join(dir, 'resources_servers/trivia'), { recursive: true });
    writeFileSync(path.join(dir, 'resources_servers/trivia/README.md'), 'mine\n');
    const res = await runGym(['new', 'environment', 'trivia'], { cwd: dir });
    assert.equal(res.code, 1);
    assert.match(res.stderr, /wrote nothing: resources_servers\/trivia\/README\.md already exists/);
    assert.equal(readFileSync(path.join(dir, 'resources_servers/trivia/README.md'), 'utf8'), 'mine\n');
    assert.ok(!existsSync(path.join(dir, 'resources_servers/trivia/app.ts')));
  });

  test('a NAME that is not a plain identifier, or one tsgym ships, is refused before anything is written', async () => {
    const dir = emptyProject();
    const bad = await runGym(['new', 'environment', 'My-Env'], { cwd: dir });
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /gym: error: NAME must be a plain identifier .* got "My-Env"/);
    const shipped = await runGym(['new', 'environment', 'math'], { cwd: dir });
    assert.equal(shipped.code, 2);
    assert.match(shipped.stderr, /tsgym already ships an environment named 'math'/);
    const missing = await runGym(['new', 'environment'], { cwd: dir });
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /required: name/);
    assert.ok(!existsSync(path.join(dir, 'resources_servers')));
  });
});

describe('gym new service', () => {
  test(
    'TypeScript: its test passes and it collects the counter tasks at reward 1.0',
    { timeout: WHOLE_RUN_MS },
    async () => {
      const dir = emptyProject();
      const res = await runGym(['new', 'service', 'counter_bot'], { cwd: dir, env: PLAIN_ENV });
      assert.equal(res.code, 0, res.stderr);
      for (const file of [
        'service.ts',
        'service.test.ts',
        'README.md',
        'configs/counter_bot.yaml',
        'data/example.jsonl',
        'package.json',
      ]) {
        assert.ok(existsSync(path.join(dir, 'counter_bot', file)), file);
      }
      assert.equal(
        readFileSync(path.join(dir, 'counter_bot/data/example.jsonl'), 'utf8'),
        readFileSync(
          path.join(installRoot(), 'resources_servers/example_session_state_mgmt/data/example.jsonl'),
          'utf8',
        ),
      );
      assert.match(res.stdout, /node --import tsx counter_bot\/service\.ts/);

      const written = await runWrittenTest(dir, 'counter_bot/service.test.ts');
      assert.equal(written.code, 0, written.output);

      const service = spawnService(
        process.execPath,
        ['--import', TSX_LOADER, path.join(dir, 'counter_bot/service.ts')],
        { env: { ...process.env, PORT: '0', TMPDIR: CHILD_TMP }, timeoutMs: SERVICE_START_MS },
      );
      const rewards = await withService(service, (url) =>
        collect(dir, 'counter_bot', 'counter_bot/configs/counter_bot.yaml', 'counter_bot/data/example.jsonl', url),
      );
      assert.deepEqual(rewards, [1, 1, 1, 1, 1]);
    },
  );

  test(
    '--python: a standard-library service that collects the counter tasks at reward 1.0',
    { skip: hasPython ? false : 'python3 is not installed', timeout: WHOLE_RUN_MS },
    async () => {
      const dir = emptyProject();
      const res = await runGym(['new', 'service', 'py_bot', '--python'], { cwd: dir, env: PLAIN_ENV });
      assert.equal(res.code, 0, res.stderr);
      for (const file of ['service.py', 'README.md', 'configs/py_bot.yaml', 'data/example.jsonl'])
        assert.ok(existsSync(path.join(dir, 'py_bot', file)), file);
      assert.ok(!existsSync(path.join(dir, 'py_bot/service.ts')));
      assert.match(res.stdout, /python3 py_bot\/service\.py --port 9000/);

      const service = spawnService('python3', [path.join(dir, 'py_bot/service.py'), '--port', '0'], {
        env: { ...process.env, TMPDIR: CHILD_TMP },
        timeoutMs: SERVICE_START_MS,
      });
      const rewards = await withService(service, (url) =>
        collect(dir, 'py_bot', 'py_bot/configs/py_bot.yaml', 'py_bot/data/example.jsonl', url),
      );
      assert.deepEqual(rewards, [1, 1, 1, 1, 1]);
    },
  );
});
