/**
 * Reading a Harbor task without a sandbox: the Dockerfile's plan (what each instruction becomes, what is refused
 * with its line), the reward files a verifier leaves, and the rows the generator writes from a task directory.
 */
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { tempDir } from '../../../test/support/cli.js';
import { DEFAULT_HARBOR_TASKS_DIR } from '../app.js';
import { HARBOR_EXAMPLE_JSONL, harborJsonl, harborRows } from '../scripts/harbor-rows.js';
import { HarborTaskError } from './dockerfile.js';
import { planDockerfile, type DockerPlan } from './plan.js';
import { readReward } from './verify.js';

const BASE_ENV = { PATH: '/usr/bin:/bin', HOME: '/work' };

/** A build context holding `files`, and the plan of `dockerfile` over it. */
function plan(dockerfile: string, files: Record<string, string> = {}): DockerPlan {
  const contextDir = tempDir('tsgym-harbor-plan-');
  for (const [relative, content] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(contextDir, relative)), { recursive: true });
    writeFileSync(path.join(contextDir, relative), content);
  }
  return planDockerfile(dockerfile, { where: 't/environment/Dockerfile', contextDir, baseEnv: BASE_ENV });
}

function refusal(dockerfile: string, files: Record<string, string> = {}): string {
  try {
    plan(dockerfile, files);
  } catch (err) {
    assert.ok(err instanceof HarborTaskError, String(err));
    return err.message;
  }
  assert.fail('the Dockerfile was accepted');
}

describe('Harbor Dockerfile plan', () => {
  test('WORKDIR mounts the work dir; ENV, ARG, COPY (globs, dirs, heredocs) and RUN become ordered steps', () => {
    const result = plan(
      [
        '# comment',
        'FROM --platform=linux/amd64 python:3.12-slim AS build',
        'ARG SUB=src',
        'ENV APP=/app \\',
        '    GREETING="hello world"',
        'ENV PATH="/app/bin:$PATH"',
        'RUN echo early',
        'WORKDIR $APP',
        'COPY *.txt notes/',
        'COPY lib ./${SUB}/',
        'COPY --chmod=755 <<EOF run.sh',
        'echo hi',
        'EOF',
        'WORKDIR ${SUB}',
        'RUN <<SCRIPT',
        'set -e',
        'ls',
        'SCRIPT',
        'RUN ["python3", "-c", "print(\'x y\')"]',
        'EXPOSE 80',
        'CMD ["bash"]',
      ].join('\n'),
      { 'a.txt': 'A', 'b.txt': 'B', 'c.md': 'C', 'lib/x.py': 'X', 'lib/deep/y.py': 'Y' },
    );
    assert.equal(result.workMount, '/app');
    assert.equal(result.cwd, '/app/src');
    assert.equal(result.baseImage, 'python:3.12-slim');
    assert.deepEqual(result.env, { APP: '/app', GREETING: 'hello world', PATH: '/app/bin:/usr/bin:/bin' });
    const files = result.steps.flatMap((step) => (step.kind === 'files' ? Object.keys(step.files) : []));
    assert.deepEqual(files, ['notes/a.txt', 'notes/b.txt', 'src/deep/y.py', 'src/x.py', 'run.sh']);
    const heredocFile = result.steps.find((step) => step.kind === 'files' && 'run.sh' in step.files);
    assert.ok(heredocFile?.kind === 'files');
    assert.equal(heredocFile.files['run.sh']!.content.toString(), 'echo hi\n');
    assert.equal(heredocFile.files['run.sh']!.mode, 0o755);
    const runs = result.steps.filter((step) => step.kind === 'run');
    assert.deepEqual(
      runs.map((step) => [step.command, step.cwd]),
      [
        ['echo early', '/app'],
        ['set -e\nls\n', '/app/src'],
        ["python3 -c 'print('\\''x y'\\'')'", '/app/src'],
      ],
    );
    assert.equal(runs[0]!.env.SUB, 'src', 'ARG values reach RUN steps');
    assert.deepEqual(result.notes, [
      "base image python:3.12-slim (FROM) not used: the steps run over this host's system",
      'ignored: EXPOSE (line 20), CMD (line 21)',
    ]);
  });

  test('no WORKDIR: the work dir is /work, and no FROM means no base-image note', () => {
    const result = plan('COPY a.txt .\nRUN cat a.txt', { 'a.txt': 'A' });
    assert.equal(result.workMount, '/work');
    assert.deepEqual(result.notes, []);
  });

  test('what cannot be honoured is refused naming the line and the fix', () => {
    assert.match(
      refusal('FROM x\nWORKDIR /app\nCOPY ../secret /app/'),
      /Dockerfile:3: COPY \.\.\/secret lies outside the build context/,
    );
    assert.match(
      refusal('WORKDIR /app\nCOPY a.txt /etc/a.txt', { 'a.txt': 'A' }),
      /Dockerfile:2: COPY writes to \/etc\/a\.txt, outside the work dir \/app/,
    );
    assert.match(
      refusal('WORKDIR /usr/src/app'),
      /Dockerfile:1: WORKDIR \/usr\/src\/app cannot be the session's work dir: \/usr is the sandbox's own.*such as \/app/,
    );
    assert.match(refusal('WORKDIR /app\nWORKDIR /srv'), /Dockerfile:2: WORKDIR \/srv lies outside the work dir \/app/);
    assert.match(refusal('FROM a AS one\nFROM b\nRUN true'), /Dockerfile:2: a multi-stage build/);
    assert.match(
      refusal('WORKDIR /app\nCOPY --from=build /x /app/'),
      /Dockerfile:2: COPY --from=build copies from another image/,
    );
    assert.match(
      refusal('WORKDIR /app\nADD https://example.com/x.tgz /app/'),
      /Dockerfile:2: ADD https:\/\/example\.com\/x\.tgz fetches from the network/,
    );
    assert.match(
      refusal('WORKDIR /app\nCOPY missing.txt .'),
      /Dockerfile:2: COPY missing\.txt: no such file under environment\//,
    );
    assert.match(refusal('RUN <<EOF\necho never closed'), /Dockerfile:1: the heredoc <<EOF never ends/);
    assert.match(refusal('FROBNICATE x'), /Dockerfile:1: unknown Dockerfile instruction FROBNICATE/);
  });

  test('a symlink in the build context that leads outside it is refused', () => {
    const outside = tempDir('tsgym-harbor-outside-');
    writeFileSync(path.join(outside, 'secret'), 's');
    const contextDir = tempDir('tsgym-harbor-link-');
    symlinkSync(path.join(outside, 'secret'), path.join(contextDir, 'link'));
    assert.throws(
      () => planDockerfile('WORKDIR /app\nCOPY link .', { where: 'D', contextDir, baseEnv: BASE_ENV }),
      /D:2: COPY link resolves outside environment\/ \(through a symlink\)/,
    );
  });
});

describe('Harbor reward files', () => {
  const logs = (files: Record<string, string>): string => {
    const dir = tempDir('tsgym-harbor-reward-');
    for (const [name, content] of Object.entries(files)) writeFileSync(path.join(dir, name), content);
    return dir;
  };

  test('reward.txt is one number; reward.json gives the reward and extras, and wins over reward.txt', () => {
    assert.deepEqual(readReward(logs({ 'reward.txt': '0.25\n' })), { reward: 0.25, extras: {} });
    assert.deepEqual(readReward(logs({ 'reward.txt': '0', 'reward.json': '{"reward": 1, "tests_passed": 3}' })), {
      reward: 1,
      extras: { tests_passed: 3 },
    });
  });

  test('no file, a bad number, a reward.json without a reward or a symlink: reward 0 and why', () => {
    assert.match(
      readReward(logs({})).error!,
      /wrote neither \/logs\/verifier\/reward\.txt nor \/logs\/verifier\/reward\.json/,
    );
    assert.match(readReward(logs({ 'reward.txt': 'pass' })).error!, /reward\.txt holds "pass", not a number/);
    assert.match(readReward(logs({ 'reward.json': '{"score": 1}' })).error!, /reward\.json has no numeric "reward"/);
    assert.match(readReward(logs({ 'reward.json': '[1]' })).error!, /not a JSON object/);
    const dir = logs({});
    symlinkSync('/etc/passwd', path.join(dir, 'reward.txt'));
    const linked = readReward(dir);
    assert.equal(linked.reward, 0);
    assert.match(linked.error!, /reward\.txt could not be read \(a symlink\)/);
  });
});

describe('Harbor rows (scripts/harbor-rows.ts)', () => {
  test('data/harbor-example.jsonl is what the generator writes from data/harbor-example/', () => {
    assert.equal(readFileSync(HARBOR_EXAMPLE_JSONL, 'utf8'), harborJsonl());
  });

  test('one row per task: the instruction after a preface naming the work dir, the timeouts and metadata', () => {
    const rows = harborRows(DEFAULT_HARBOR_TASKS_DIR);
    assert.deepEqual(
      rows.map((row) => row.harbor_task),
      ['greeting-service', 'hello-world', 'sort-numbers', 'word-stats'],
    );
    const hello = rows.find((row) => row.harbor_task === 'hello-world')!;
    const content = (hello.responses_create_params as { input: Array<{ content: string }> }).input[0]!.content;
    assert.match(
      content,
      /^You work in a sandboxed Linux shell \(no network\)\. Your files are in the work dir \/app;/,
    );
    assert.match(
      content,
      /Task:\nCreate a file called hello\.txt in the current directory\. Write "Hello, world!" to it\.$/,
    );
    assert.equal(hello.agent_timeout_sec, 120);
    assert.equal(hello.verifier_timeout_sec, 30);
    assert.equal(hello.difficulty, 'easy');
    assert.deepEqual((hello.harbor_metadata as { tags: string[] }).tags, ['trivial']);
    const words = rows.find((row) => row.harbor_task === 'word-stats')!;
    assert.match(JSON.stringify(words.responses_create_params), /the work dir \/data;/);
  });

  test('one task directory given alone is one row', () => {
    const rows = harborRows(path.join(DEFAULT_HARBOR_TASKS_DIR, 'hello-world'));
    assert.deepEqual(
      rows.map((row) => row.harbor_task),
      ['hello-world'],
    );
  });
});
