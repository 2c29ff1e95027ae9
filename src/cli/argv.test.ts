import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { tempDir } from '../../test/support/cli.js';
import { UsageError } from '../errors.js';
import { parseArgv } from './argv.js';
import { usage } from './help.js';

function parse(argv: string[], env: NodeJS.ProcessEnv = {}) {
  return parseArgv(argv, env);
}

function usageError(argv: string[], pattern: RegExp, env: NodeJS.ProcessEnv = {}): void {
  assert.throws(
    () => parse(argv, env),
    (err: unknown) => {
      assert.ok(err instanceof UsageError, `expected UsageError, got ${String(err)}`);
      assert.match(err.message, pattern);
      return true;
    },
  );
}

describe('commands', () => {
  test('gym alone is help (not asked for, so the caller exits 1); --help asks for it', () => {
    assert.deepEqual(parse([]), { command: 'help', noServe: false, positionals: [], overrides: [], help: false });
    assert.equal(parse(['--help']).help, true);
  });

  test('group + action, leaves, --version, help topics', () => {
    assert.equal(parse(['env', 'start']).command, 'env start');
    assert.equal(parse(['eval', 'aggregate']).command, 'eval aggregate');
    assert.equal(parse(['quickstart']).command, 'quickstart');
    assert.deepEqual(parse(['--version', '--json']), {
      command: 'version',
      noServe: false,
      positionals: [],
      overrides: ['+json=true'],
      help: false,
    });
    assert.deepEqual(parse(['help', 'eval', 'run']), {
      command: 'eval run',
      noServe: false,
      positionals: [],
      overrides: [],
      help: true,
    });
    assert.equal(parse(['eval', 'run', '-h']).help, true);
  });

  test('unknown commands and actions are usage errors with a hint', () => {
    usageError(['evl', 'run'], /invalid command: 'evl'.*Did you mean `eval`\?/);
    usageError(['env', 'strat'], /invalid gym env action: 'strat'.*Did you mean `start`\?/);
    usageError(['env'], /gym env needs an action: start, status, stop, resolve/);
  });

  test('agent check takes the URL as a positional; overrides still pass through', () => {
    const parsed = parse(['agent', 'check', 'http://localhost:9000', '++timeout=5']);
    assert.deepEqual(parsed.positionals, ['http://localhost:9000']);
    assert.deepEqual(parsed.overrides, ['++timeout=5']);
    usageError(['agent', 'check'], /required: url/);
  });

  test('view takes the rollouts file as a positional; --port and --host become overrides', () => {
    const parsed = parse(['view', 'results/rollouts.jsonl', '--port', '8080', '--host=::1']);
    assert.equal(parsed.command, 'view');
    assert.deepEqual(parsed.positionals, ['results/rollouts.jsonl']);
    assert.deepEqual(parsed.overrides, ['+port=8080', '+host=::1']);
    assert.deepEqual(parse(['view', 'r.jsonl']).overrides, []);
    assert.equal(parse(['view', '--help']).help, true);
    assert.match(usage('view'), /usage: gym view <rollouts>[\s\S]*--port N[\s\S]*--host HOST/);
    usageError(['view'], /required: rollouts/);
    usageError(['view', 'r.jsonl', '--port', 'eighty'], /invalid int value: 'eighty'/);
  });

  test('worker: --queue and --concurrency become queue_url and worker_concurrency; eval run takes --queue', () => {
    const parsed = parse([
      'worker',
      '--queue',
      'redis://10.0.0.2:6379/1',
      '--concurrency',
      '8',
      '++head_server.port=11001',
    ]);
    assert.equal(parsed.command, 'worker');
    assert.deepEqual(parsed.overrides, [
      '+queue_url=redis://10.0.0.2:6379/1',
      '+worker_concurrency=8',
      '++head_server.port=11001',
    ]);
    assert.match(usage('worker'), /usage: gym worker[\s\S]*--queue REDIS_URL[\s\S]*--concurrency N/);
    assert.ok(
      parse(['eval', 'run', '--queue', 'redis://h:1', '-i', 'a', '-o', 'b']).overrides.includes(
        '+queue_url=redis://h:1',
      ),
    );
    usageError(['worker', '--concurrency', 'many'], /invalid int value: 'many'/);
  });
});

describe('flags become overrides', () => {
  test('eval run flags translate as in the reference table, in declaration order', () => {
    const parsed = parse([
      'eval',
      'run',
      '--no-serve',
      '--output',
      'results/out.jsonl',
      '-a',
      'remote_agent',
      '-i',
      'data/in.jsonl',
      '--limit',
      '5',
      '--num-repeats',
      '{a: 4, _default: 1}',
      '--concurrency',
      '8',
      '--resume',
      '--temperature',
      '0.7',
      '--top-p=0.9',
      '--max-output-tokens',
      '256',
      '--disable-aggregation',
      '--overwrite',
      '-m',
      'gpt-x',
      '--model-url',
      'http://m:8000/v1',
      '--model-api-key',
      'sk-1',
    ]);
    assert.equal(parsed.noServe, true);
    assert.deepEqual(parsed.overrides, [
      '+policy_model_name=gpt-x',
      '+policy_base_url=http://m:8000/v1',
      '+policy_api_key=sk-1',
      '+resume_from_cache=true',
      '+overwrite=true',
      '+agent_name=remote_agent',
      '+input_jsonl_fpath=data/in.jsonl',
      '+output_jsonl_fpath=results/out.jsonl',
      '+limit=5',
      '+num_repeats={a: 4, _default: 1}',
      '+num_samples_in_parallel=8',
      '+responses_create_params.temperature=0.7',
      '+responses_create_params.top_p=0.9',
      '+responses_create_params.max_output_tokens=256',
      '+disable_aggregation=true',
    ]);
  });

  test('reporting and profile flags', () => {
    assert.deepEqual(parse(['eval', 'profile', '--inputs', 'm.jsonl', '--rollouts=r.jsonl', '--json']).overrides, [
      '+materialized_inputs_jsonl_fpath=m.jsonl',
      '+rollouts_jsonl_fpath=r.jsonl',
      '+json=true',
    ]);
    assert.deepEqual(parse(['eval', 'aggregate', '-i', 'a/*.jsonl,b/*.jsonl', '-o', 'm.jsonl']).overrides, [
      "+input_glob='a/*.jsonl,b/*.jsonl'",
      '+output_jsonl_fpath=m.jsonl',
    ]);
    assert.deepEqual(parse(['quickstart', '--brain', 'echo']).overrides, ['+brain=echo']);
    assert.deepEqual(parse(['env', 'status', '--json']).overrides, ['+json=true']);
  });

  test('final order: verbose, one coalesced config_paths, translated flags, raw overrides', () => {
    const parsed = parse([
      'env',
      'start',
      '+config_paths=[raw1.yaml]',
      '--config',
      'a.yaml',
      '++head_server.port=11001',
      '-m',
      'mdl',
      '--config=b.yaml',
      '+config_paths=[raw2.yaml,raw3.yaml]',
      '-v',
    ]);
    assert.deepEqual(parsed.overrides, [
      '+verbose=true',
      '+config_paths=[a.yaml,b.yaml,raw1.yaml,raw2.yaml,raw3.yaml]',
      '+policy_model_name=mdl',
      '++head_server.port=11001',
    ]);
  });

  test('-v before the command counts too', () => {
    assert.deepEqual(parse(['-v', 'env', 'status']).overrides, ['+verbose=true']);
  });

  test('values that would not survive the override grammar are quoted', () => {
    assert.deepEqual(
      parse(['env', 'start', '--config', 'dir,with,commas/x.yaml', '--model-url', 'http://h/v1?x=1']).overrides,
      ["+config_paths=['dir,with,commas/x.yaml']", "+policy_base_url='http://h/v1?x=1'"],
    );
  });

  test('--resources-server NAME[/FLAVOR] resolves to resources_servers/NAME/configs/FLAVOR.yaml under the roots', () => {
    const root = tempDir('tsgym-argv-');
    for (const file of [
      'resources_servers/counter/configs/counter.yaml',
      'resources_servers/counter/configs/hard.yaml',
    ]) {
      mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
      writeFileSync(path.join(root, file), '');
    }
    const env: NodeJS.ProcessEnv = {};
    const parsed = parse(
      ['eval', 'run', '--search-dir', root, '--resources-server', 'counter', '--resources-server', 'counter/hard'],
      env,
    );
    assert.deepEqual(parsed.overrides, [
      '+config_paths=[resources_servers/counter/configs/counter.yaml,resources_servers/counter/configs/hard.yaml]',
    ]);
    assert.equal(env.NEMO_GYM_EXTRA_ROOTS, root, '--search-dir is prepended to NEMO_GYM_EXTRA_ROOTS');
    usageError(
      ['env', 'start', '--search-dir', root, '--resources-server', 'countr'],
      /implies config `resources_servers\/countr\/configs\/countr\.yaml`, which does not exist\. Did you mean `counter`\?/,
    );
  });

  test('--search-dir keeps existing extra roots after the new ones', () => {
    const env: NodeJS.ProcessEnv = { NEMO_GYM_EXTRA_ROOTS: '/old' };
    parse(['env', 'status', '--search-dir', '/new1', '--search-dir=/new2'], env);
    assert.equal(env.NEMO_GYM_EXTRA_ROOTS, ['/new1', '/new2', '/old'].join(path.delimiter));
  });
});

describe('flag errors', () => {
  test('unknown flags are usage errors with a did-you-mean', () => {
    usageError(['eval', 'run', '--limt', '5'], /unrecognized arguments: --limt.*Did you mean `--limit`\?/);
    usageError(['eval', 'run', '--outptu=x'], /Did you mean `--output`\?/);
    usageError(['env', 'start', '--no-serve'], /unrecognized arguments: --no-serve/);
  });

  test('missing and malformed values', () => {
    usageError(['eval', 'run', '--limit'], /argument --limit: expected one argument/);
    usageError(['eval', 'run', '--limit', 'five'], /invalid int value: 'five'/);
    usageError(['eval', 'run', '--temperature', 'hot'], /invalid float value: 'hot'/);
    usageError(['eval', 'run', '--resume=yes'], /--resume is a switch/);
  });

  test('negative numbers are values, not flags', () => {
    assert.deepEqual(parse(['eval', 'run', '--temperature', '-0.5']).overrides, [
      '+responses_create_params.temperature=-0.5',
    ]);
  });
});
