import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';
import { ConfigError } from '../../src/errors.js';
import { FifoSemaphore } from '../../src/server/agent-server.js';
import { createRemoteAgent } from './app.js';
import { normalizeAgentBaseUrl } from '../../src/http/service-url.js';
import { parseRemoteAgentConfig } from './config.js';
import { pyFloat } from '../../src/rollout/settings.js';

const REF = { type: 'resources_servers', name: 'counter_env' };
const parse = (extra: Record<string, unknown>) =>
  parseRemoteAgentConfig({ agent_base_url: 'http://localhost:9000', resources_server: REF, ...extra }, 'my_agent');

function configError(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected a ConfigError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected a ConfigError');
}

describe('A. configuration and URL validation', () => {
  test('defaults — concurrency 32, per-call 1800 s, run 2100 s, max_steps unset, 64 MiB bodies', () => {
    const config = parse({});
    assert.equal(config.concurrency, 32);
    assert.equal(config.remoteResponsesTimeoutSecs, 1800);
    assert.equal(config.runTimeoutSecs, 2100);
    assert.equal(config.maxSteps, null);
    assert.equal(config.maxResponseBytes, 64 * 1024 * 1024);
    assert.deepEqual(config.resourcesServer, REF);
    assert.deepEqual(config.warnings, []);
  });

  test('the limiter admits exactly `concurrency` rollouts (7 → 7)', async () => {
    const agent = createRemoteAgent({
      config: parse({ concurrency: 7 }),
      resourcesServer: { name: 'counter_env', url: 'http://127.0.0.1:1' },
      log: () => undefined,
    });
    const releases = await Promise.all(Array.from({ length: 7 }, () => agent.limiter.acquire()));
    assert.equal(agent.limiter.available, 0);
    let eighthAdmitted = false;
    const eighth = agent.limiter.acquire().then((release) => {
      eighthAdmitted = true;
      return release;
    });
    await Promise.resolve();
    assert.equal(eighthAdmitted, false);
    assert.equal(agent.limiter.waiting, 1);
    releases[0]!();
    (await eighth)();
    for (const release of releases.slice(1)) release();
    assert.equal(agent.limiter.available, 7);
  });

  test('trailing slashes and surrounding whitespace are stripped', () => {
    assert.equal(normalizeAgentBaseUrl('http://localhost:9000/', 'k'), 'http://localhost:9000');
    assert.equal(normalizeAgentBaseUrl('  http://localhost:9000///  ', 'k'), 'http://localhost:9000');
    assert.equal(normalizeAgentBaseUrl('\thttps://host.example\n', 'k'), 'https://host.example');
  });

  test('a path prefix is kept', () => {
    assert.equal(normalizeAgentBaseUrl('https://host/base', 'k'), 'https://host/base');
    assert.equal(normalizeAgentBaseUrl('https://host/base/', 'k'), 'https://host/base');
  });

  const rejected: Array<[string, string, RegExp]> = [
    ['non-http scheme', 'ftp://h:1', /http:\/\/ or https:\/\//],
    ['scheme-less', 'localhost:9000', /http:\/\/ or https:\/\//],
    ['query string', 'http://h:1?token=abc', /query string/],
    ['bare ?', 'http://h:1/?', /query string/],
    ['fragment', 'http://h:1#frag', /fragment/],
    ['bare #', 'http://h:1#', /fragment/],
    [';params on the path', 'http://h:1/api;jsessionid=1', /";" parameters/],
    ['user:pass credentials', 'http://user:pass@h:1', /credentials/],
    ['user-only credentials', 'http://user@h:1', /credentials/],
    ['non-numeric port', 'http://h:abc', /not a valid URL/],
  ];
  for (const [label, url, reason] of rejected) {
    test(`rejected at config load — ${label}`, () => {
      const err = configError(() => parse({ agent_base_url: url }));
      assert.match(err.message, reason);
      assert.match(err.message, /my_agent\.responses_api_agents\.remote_agent\.agent_base_url/);
    });
  }

  test('D16: the error never echoes the URL or its secret (credentials, user-only, query token)', () => {
    for (const url of ['http://user:s3cr3t-value@h:1', 'http://s3cr3t-value@h:1', 'http://h:1/?token=s3cr3t-value']) {
      const err = configError(() => parse({ agent_base_url: url }));
      assert.doesNotMatch(err.message, /s3cr3t-value/);
      assert.ok(!err.message.includes(url));
    }
  });

  test('agent_base_url and resources_server are required (??? counts as unset)', () => {
    assert.match(configError(() => parse({ agent_base_url: '???' })).message, /agent_base_url is required/);
    assert.match(configError(() => parse({ agent_base_url: '   ' })).message, /agent_base_url is required/);
    const missingRef = configError(() =>
      parseRemoteAgentConfig(
        { agent_base_url: 'http://h:1', resources_server: { type: 'resources_servers', name: '???' } },
        'a',
      ),
    );
    assert.match(missingRef.message, /resources_server\.name/);
    const wrongType = configError(() =>
      parseRemoteAgentConfig(
        { agent_base_url: 'http://h:1', resources_server: { type: 'responses_api_models', name: 'x' } },
        'a',
      ),
    );
    assert.match(wrongType.message, /resources_server\.type must be 'resources_servers'/);
  });
});

describe('D18 / U26: config sanity, checked at start-up', () => {
  const invalid: Array<[string, unknown, RegExp]> = [
    ['concurrency', 0, /integer ≥ 1/],
    ['concurrency', -1, /integer ≥ 1/],
    ['concurrency', 1.5, /integer ≥ 1/],
    ['concurrency', '4', /integer ≥ 1/],
    ['max_steps', 0, /integer ≥ 1 or unset/],
    ['max_steps', -3, /integer ≥ 1 or unset/],
    ['remote_responses_timeout_secs', 0, /seconds > 0/],
    ['remote_responses_timeout_secs', -5, /seconds > 0/],
    ['run_timeout_secs', 0, /seconds > 0/],
    ['max_response_bytes', 0, /integer ≥ 1/],
  ];
  for (const [key, value, rule] of invalid) {
    test(`${key} = ${JSON.stringify(value)} is a config error naming the key, the value and the rule`, () => {
      const err = configError(() => parse({ [key]: value }));
      assert.ok(err.message.includes(`remote_agent.${key} = ${JSON.stringify(value)}`), err.message);
      assert.match(err.message, rule);
    });
  }

  test('max_steps unset (absent or null) means no step bound; 1 is the smallest bound', () => {
    assert.equal(parse({ max_steps: null }).maxSteps, null);
    assert.equal(parse({ max_steps: 1 }).maxSteps, 1);
  });

  test('fractional timeouts are fine; a per-call timeout ≥ the run timeout warns', () => {
    assert.deepEqual(parse({ remote_responses_timeout_secs: 0.2, run_timeout_secs: 0.5 }).warnings, []);
    const config = parse({ remote_responses_timeout_secs: 3000 });
    assert.equal(config.warnings.length, 1);
    assert.match(
      config.warnings[0]!,
      /remote_responses_timeout_secs \(3000\.0\) is not below run_timeout_secs \(2100\.0\)/,
    );
  });

  test('the start-up warning is printed once by the agent', () => {
    const lines: string[] = [];
    createRemoteAgent({
      config: parse({ remote_responses_timeout_secs: 10, run_timeout_secs: 10 }),
      resourcesServer: { name: 'counter_env', url: 'http://127.0.0.1:1' },
      log: (line) => lines.push(line),
    });
    assert.equal(lines.length, 1);
    assert.match(lines[0]!, /^WARNING: \[remote_agent\] .*per-call bound never applies/);
  });

  test('seconds print like a Python float', () => {
    assert.equal(pyFloat(1800), '1800.0');
    assert.equal(pyFloat(0.25), '0.25');
    assert.equal(pyFloat(0.2), '0.2');
  });
});

describe('D13: the FIFO semaphore', () => {
  test('admission is first-come-first-served and a release hands the slot to the oldest waiter', async () => {
    const semaphore = new FifoSemaphore(1);
    const first = await semaphore.acquire();
    const order: string[] = [];
    const waiters = ['b', 'c', 'd'].map((name) =>
      semaphore.acquire().then((release) => {
        order.push(name);
        return release;
      }),
    );
    assert.equal(semaphore.waiting, 3);
    first();
    first(); // releasing twice is harmless
    (await waiters[0]!)();
    (await waiters[1]!)();
    (await waiters[2]!)();
    assert.deepEqual(order, ['b', 'c', 'd']);
    assert.equal(semaphore.available, 1);
  });

  test('a waiter whose signal fires leaves the queue without taking a slot', async () => {
    const semaphore = new FifoSemaphore(1);
    const held = await semaphore.acquire();
    const controller = new AbortController();
    const gone = semaphore.acquire(controller.signal);
    controller.abort(new Error('caller left'));
    await assert.rejects(gone, /caller left/);
    assert.equal(semaphore.waiting, 0);
    held();
    assert.equal(semaphore.available, 1);
  });

  test('use() releases on failure', async () => {
    const semaphore = new FifoSemaphore(2);
    await assert.rejects(
      semaphore.use(async () => Promise.reject(new Error('boom'))),
      /boom/,
    );
    assert.equal(semaphore.available, 2);
  });
});

describe('credentials and CA (D21): agent_api_key_env, agent_headers, agent_ca_file', () => {
  const SECRET = 'sk-config-test-s3cr3t';
  const withEnv = (extra: Record<string, unknown>, env: NodeJS.ProcessEnv) =>
    parseRemoteAgentConfig(
      { agent_base_url: 'https://agent.example:9000', resources_server: REF, ...extra },
      'my_agent',
      env,
    );

  test('agent_api_key_env becomes Authorization: Bearer <value>; the value is kept for redaction only', () => {
    const config = withEnv({ agent_api_key_env: 'MY_TOKEN' }, { MY_TOKEN: ` ${SECRET} ` });
    assert.deepEqual(config.auth.headers, { authorization: `Bearer ${SECRET}` });
    assert.deepEqual(config.auth.secrets, [SECRET]);
    assert.equal(config.auth.apiKeyEnv, 'MY_TOKEN');
    assert.deepEqual(parse({}).auth.headers, {}, 'no credential by default');
  });

  test('an unset or empty variable is a config error naming the variable, never a value', () => {
    assert.match(
      configError(() => withEnv({ agent_api_key_env: 'MY_TOKEN' }, {})).message,
      /my_agent\.responses_api_agents\.remote_agent\.agent_api_key_env names the environment variable MY_TOKEN, which is not set/,
    );
    assert.match(
      configError(() => withEnv({ agent_api_key_env: 'MY_TOKEN' }, { MY_TOKEN: '  ' })).message,
      /MY_TOKEN, which is empty/,
    );
    const pasted = configError(() => withEnv({ agent_api_key_env: SECRET }, {}));
    assert.match(pasted.message, /must be the name of an environment variable/);
    assert.ok(!pasted.message.includes(SECRET), 'a token pasted in place of the name is not echoed');
    const newline = configError(() => withEnv({ agent_api_key_env: 'MY_TOKEN' }, { MY_TOKEN: `${SECRET}\nX-Evil: 1` }));
    assert.match(newline.message, /line break/);
    assert.ok(!newline.message.includes(SECRET));
  });

  test('agent_headers: values kept, reserved and hop-by-hop names rejected, empty values rejected without echo', () => {
    const config = withEnv({ agent_headers: { 'X-Api-Key': SECRET, 'X-Tenant': 'acme' } }, {});
    assert.deepEqual(config.auth.headers, { 'x-api-key': SECRET, 'x-tenant': 'acme' });
    for (const name of [
      'Host',
      'Content-Length',
      'Cookie',
      'Content-Type',
      'Connection',
      'Transfer-Encoding',
      'proxy-authorization',
    ]) {
      assert.match(
        configError(() => withEnv({ agent_headers: { [name]: 'v' } }, {})).message,
        new RegExp(`agent_headers\\.${name} is not allowed`),
      );
    }
    assert.match(
      configError(() => withEnv({ agent_headers: { 'Bad Name': 'v' } }, {})).message,
      /not a valid HTTP header name/,
    );
    assert.match(
      configError(() => withEnv({ agent_headers: { 'X-Key': '' } }, {})).message,
      /X-Key must be a non-empty string/,
    );
    assert.match(
      configError(() => withEnv({ agent_headers: 'Authorization: Bearer x' }, {})).message,
      /must be a mapping/,
    );
    const both = configError(() =>
      withEnv({ agent_api_key_env: 'T', agent_headers: { authorization: SECRET } }, { T: 'x' }),
    );
    assert.match(both.message, /sets Authorization, and .*agent_api_key_env sets it too/);
    assert.ok(!both.message.includes(SECRET));
  });

  test('agent_ca_file: missing, a directory, or not PEM is a config error naming the key and the path', () => {
    assert.match(
      configError(() => withEnv({ agent_ca_file: '/nonexistent/ca.pem' }, {})).message,
      /agent_ca_file = \/nonexistent\/ca\.pem does not exist/,
    );
    assert.match(configError(() => withEnv({ agent_ca_file: '/' }, {})).message, /agent_ca_file = \/ is a directory/);
    assert.match(
      configError(() => withEnv({ agent_ca_file: fileURLToPath(import.meta.url) }, {})).message,
      /holds no PEM certificate/,
    );
  });

  test('warnings: a credential over plain http to another host; a CA file with an http:// URL', () => {
    const remote = parseRemoteAgentConfig(
      { agent_base_url: 'http://agent.example:9000', resources_server: REF, agent_api_key_env: 'T' },
      'a',
      { T: SECRET },
    );
    assert.match(remote.warnings.join('\n'), /sent to agent\.example:9000 over plain http/);
    const local = parseRemoteAgentConfig(
      { agent_base_url: 'http://127.0.0.1:9000', resources_server: REF, agent_api_key_env: 'T' },
      'a',
      { T: SECRET },
    );
    assert.deepEqual(local.warnings, []);
    assert.ok(!remote.warnings.join('\n').includes(SECRET));
  });
});
