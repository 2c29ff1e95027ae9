import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { startCounterPlannerService, type StartedService } from '../../../examples/counter-planner/index.js';
import { UsageError } from '../../errors.js';
import path from 'node:path';
import { runGym, tempDir } from '../../../test/support/cli.js';
import { counterTaskReply } from '../../testing/counter-brain.js';
import { makeTestCa, reply, startScriptedService, type ScriptedService } from '../../testing/index.js';
import type { ParsedCommand } from '../argv.js';
import { agentCheck } from './agent-check.js';

const command = (positionals: string[], overrides: string[] = []): ParsedCommand => ({
  command: 'agent check',
  noServe: false,
  positionals,
  overrides,
  help: false,
});

async function run(cmd: ParsedCommand): Promise<{ code: number; out: string }> {
  let out = '';
  const code = await agentCheck(cmd, { stdout: { write: (text: string) => (out += text) } });
  return { code, out };
}

describe('gym agent check <url>', () => {
  let service: StartedService;
  before(async () => {
    service = await startCounterPlannerService({ port: 0 });
  });
  after(() => service.close());

  test('prints one line per check and a summary, exit 0 when nothing fails', async () => {
    const { code, out } = await run(command([`${service.url}/`]));
    assert.equal(code, 0);
    const lines = out.trimEnd().split('\n');
    assert.equal(lines[0], `gym agent check ${service.url}/v1/responses`, 'the trailing slash is dropped');
    const checkLines = lines.slice(1, -2);
    assert.equal(checkLines.length, 15);
    for (const line of checkLines) assert.match(line, /^PASS {2}[a-z-]+ +\S/);
    assert.match(
      lines.at(-2)!,
      /^Summary: 15 passed, 0 warnings, 0 failed\. \d+ calls, p50 [\d.]+ ms, max [\d.]+ ms\.$/,
    );
    assert.equal(lines.at(-1), 'Ready for a run.');
  });

  test('--json (+json=true) prints the machine-readable report', async () => {
    const { code, out } = await run(command([service.url], ['+json=true', '+timeout_secs=60', '+max_steps=6']));
    assert.equal(code, 0);
    const report = JSON.parse(out) as {
      ok: boolean;
      checks: { name: string; status: string }[];
      summary: Record<string, number>;
    };
    assert.equal(report.ok, true);
    assert.deepEqual(report.summary, { pass: 15, warn: 0, fail: 0, skip: 0 });
    assert.equal(report.checks[0]!.name, 'reachable');
  });

  test('exit 1 on a FAIL, with the fix on the failing line', async () => {
    const broken = await startScriptedService(() => reply.status(500, 'kaboom'));
    try {
      const { code, out } = await run(command([broken.url]));
      assert.equal(code, 1);
      assert.match(
        out,
        /^FAIL {2}http-reply +conversation call 1: HTTP 500: kaboom \(\+3 more\)\. Fix: Answer POST \/v1\/responses with HTTP 200/m,
      );
      assert.match(
        out,
        /^FAIL {2}conversation +could not go on after call 1: see http-reply\. Fix: Fix the http-reply failure/m,
      );
      assert.match(out, /^SKIP {2}cookies +no successful conversation to judge\.$/m);
      assert.match(out, /Not ready: fix the FAIL lines above before a big run\.\n$/);
    } finally {
      await broken.close();
    }
  });

  test('usage errors (exit 2): no URL, a bad URL (never echoed), extra arguments, unknown or bad settings', async () => {
    await assert.rejects(
      agentCheck(command([])),
      (err) => err instanceof UsageError && /needs the base URL/.test(err.message),
    );
    await assert.rejects(
      agentCheck(command(['ftp://h:1'])),
      (err) => err instanceof UsageError && /http:\/\/ or https:\/\//.test(err.message),
    );
    await assert.rejects(
      agentCheck(command(['http://user:hunter2@h:1'])),
      (err) => err instanceof UsageError && /embeds credentials/.test(err.message) && !err.message.includes('hunter2'),
    );
    await assert.rejects(
      agentCheck(command([service.url, 'extra'])),
      (err) => err instanceof UsageError && /unexpected: extra/.test(err.message),
    );
    await assert.rejects(
      agentCheck(command([service.url], ['+timout_secs=5'])),
      (err) => err instanceof UsageError && /Did you mean \+timeout_secs\?/.test(err.message),
    );
    await assert.rejects(
      agentCheck(command([service.url], ['+timeout_secs=0'])),
      (err) => err instanceof UsageError && /seconds > 0/.test(err.message),
    );
    await assert.rejects(
      agentCheck(command([service.url], ['+max_steps=2.5'])),
      (err) => err instanceof UsageError && /integer ≥ 1/.test(err.message),
    );
  });

  test('--rows FILE (+rows) probes with the rows; the real command line exits 0 and reports row-probes', async () => {
    const rows = fileURLToPath(
      new URL('../../../../resources_servers/example_session_state_mgmt/data/example.jsonl', import.meta.url),
    );
    const inProcess = await run(command([service.url], [`+rows=${rows}`, '+max_rows=2']));
    assert.equal(inProcess.code, 0, inProcess.out);
    assert.match(
      inProcess.out,
      /^PASS {2}row-probes +2 rows: 2 asked for declared tools with matching arguments, 0 answered\.$/m,
    );

    const gym = fileURLToPath(new URL('../../../../bin/gym.js', import.meta.url));
    const cli = await new Promise<{ code: number; stdout: string }>((resolve) => {
      execFile(process.execPath, [gym, 'agent', 'check', service.url, '--rows', rows], (err, stdout) =>
        resolve({ code: err ? Number((err as { code?: number }).code) : 0, stdout }),
      );
    });
    assert.equal(cli.code, 0, cli.stdout);
    assert.match(cli.stdout, /^PASS {2}row-probes +5 rows: 5 asked/m);
    assert.match(cli.stdout, /^Summary: 14 passed, 0 warnings, 0 failed, 2 skipped\./m);
  });

  test('--rows with a missing file is a config error naming it', async () => {
    await assert.rejects(
      agentCheck(command([service.url], ['+rows=/no/such/rows.jsonl'])),
      /--rows \/no\/such\/rows\.jsonl: no such file/,
    );
  });
});

describe('gym agent check --api-key-env / --ca-file (through the CLI)', () => {
  const TOKEN = `check-${process.pid}-s3cr3t`;
  const dir = tempDir('tsgym-check-tls-');
  const ca = makeTestCa(dir, 'check');
  let service: ScriptedService;
  before(async () => {
    service = await startScriptedService(
      (call) =>
        call.headers.authorization === `Bearer ${TOKEN}`
          ? counterTaskReply(call)
          : reply.status(401, `no: ${String(call.headers.authorization)}`),
      { tls: { key: ca.key, cert: ca.cert } },
    );
  });
  after(() => service.close());
  const env = { CHECK_TOKEN: TOKEN };

  test('with the CA and the token every check passes', async () => {
    const res = await runGym(['agent', 'check', service.url, '--ca-file', ca.caFile, '--api-key-env', 'CHECK_TOKEN'], {
      cwd: dir,
      env,
    });
    assert.equal(res.code, 0, res.stdout + res.stderr);
    assert.match(res.stdout, /Summary: 15 passed/);
    assert.ok(service.calls.every((call) => call.headers.authorization === `Bearer ${TOKEN}`));
  });

  test('without the CA: reachable fails naming --ca-file; with a wrong token: 401 naming --api-key-env, value masked', async () => {
    const noCa = await runGym(['agent', 'check', service.url, '--api-key-env', 'CHECK_TOKEN'], { cwd: dir, env });
    assert.equal(noCa.code, 1);
    assert.match(noCa.stdout, /^FAIL {2}reachable .*TLS failed .*pass --ca-file PATH/m);
    const wrong = await runGym(
      ['agent', 'check', service.url, '--ca-file', ca.caFile, '--api-key-env', 'CHECK_TOKEN'],
      {
        cwd: dir,
        env: { CHECK_TOKEN: `${TOKEN}-old` },
      },
    );
    assert.equal(wrong.code, 1);
    assert.match(
      wrong.stdout,
      /HTTP 401 \(the service refused the credential from --api-key-env CHECK_TOKEN\): no: Bearer \*\*\*\*/,
    );
    assert.ok(!wrong.stdout.includes(`${TOKEN}-old`));
  });

  test('an unset variable or a missing CA file is a usage error (exit 2) naming it', async () => {
    const unset = await runGym(['agent', 'check', service.url, '--api-key-env', 'TSGYM_CHECK_UNSET'], {
      cwd: dir,
      env: { TSGYM_CHECK_UNSET: undefined },
    });
    assert.equal(unset.code, 2);
    assert.match(unset.stderr, /--api-key-env names the environment variable TSGYM_CHECK_UNSET, which is not set/);
    const missing = await runGym(['agent', 'check', service.url, '--ca-file', path.join(dir, 'none.pem')], {
      cwd: dir,
    });
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /--ca-file = .*none\.pem does not exist/);
  });
});
