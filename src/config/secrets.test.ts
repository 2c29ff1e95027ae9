import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { closeMatches, similarityRatio } from './did-you-mean.js';
import { describeConfig, maskSecrets, withForeignHeadersMasked } from './secrets.js';
import { parseConfigYaml } from './yaml-io.js';

describe('maskSecrets', () => {
  test('values under key/token/secret/password keys become ****, lists become lists of ****', () => {
    const config = {
      policy_api_key: 'sk-live',
      hf_token: 'hf_x',
      nested: { Client_Secret: 'shh', DB_PASSWORD: 'pw', plain: 'visible', api_keys: ['a', 'b'] },
      max_output_tokens: 100,
    };
    assert.deepEqual(maskSecrets(config), {
      policy_api_key: '****',
      hf_token: '****',
      nested: { Client_Secret: '****', DB_PASSWORD: '****', plain: 'visible', api_keys: ['****', '****'] },
      max_output_tokens: '****',
    });
  });

  test('mappings under a matching key are walked, so instance names containing "key" keep their address', () => {
    const config = { keyword_env: { resources_servers: { kw: { host: '127.0.0.1', port: 1234, auth_token: 't' } } } };
    assert.deepEqual(maskSecrets(config), {
      keyword_env: { resources_servers: { kw: { host: '127.0.0.1', port: 1234, auth_token: '****' } } },
    });
  });

  test('every agent_headers value is masked whatever the header is called; the names stay (D21)', () => {
    const config = {
      agent: {
        responses_api_agents: {
          remote_agent: {
            agent_headers: { Authorization: 'Basic dXNlcjpwdw==', 'X-Tenant': 'acme' },
            agent_base_url: 'https://h',
          },
        },
      },
      other: { agent_headers: 'Authorization: Bearer raw' },
    };
    assert.deepEqual(maskSecrets(config), {
      agent: {
        responses_api_agents: {
          remote_agent: { agent_headers: { Authorization: '****', 'X-Tenant': '****' }, agent_base_url: 'https://h' },
        },
      },
      other: { agent_headers: '****' },
    });
  });

  test("a spawned server gets other instances' agent_headers masked, its own intact, other keys untouched", () => {
    const agent = (value: string) => ({
      responses_api_agents: { remote_agent: { agent_headers: { 'X-Key': value }, policy_api_key: 'pk' } },
    });
    const config = {
      agent_a: agent('a-secret'),
      agent_b: agent('b-secret'),
      env: { resources_servers: { e: { port: 1 } } },
    };
    const forA = withForeignHeadersMasked(config, 'agent_a');
    assert.deepEqual(forA.agent_a, config.agent_a);
    assert.deepEqual(forA.agent_b, {
      responses_api_agents: { remote_agent: { agent_headers: { 'X-Key': '****' }, policy_api_key: 'pk' } },
    });
    assert.equal(forA.env, config.env);
    assert.equal(
      withForeignHeadersMasked({ env: config.env }, 'env').env,
      config.env,
      'no header map: the same object',
    );
  });

  test('the input is never modified', () => {
    const config = { api_key: 'sk', list: [{ token: 'x' }] };
    const before = structuredClone(config);
    maskSecrets(config);
    assert.deepEqual(config, before);
  });
});

test('describeConfig is the masked config as YAML', () => {
  const config = { policy_api_key: 'sk-live', shared: { a: 1 }, again: { a: 1 } };
  const yaml = describeConfig(config);
  assert.ok(!yaml.includes('sk-live'));
  assert.ok(!yaml.includes('&'), 'no YAML anchors');
  assert.deepEqual(parseConfigYaml(yaml, 'test'), { policy_api_key: '****', shared: { a: 1 }, again: { a: 1 } });
});

describe('did-you-mean (difflib)', () => {
  test('ratio matches difflib', () => {
    assert.equal(similarityRatio('abcd', 'bcde'), 0.75);
    assert.equal(similarityRatio('', ''), 1);
    assert.equal(similarityRatio('counter_env', 'countr_env'), (2 * 10) / 21);
  });

  test('close matches: cutoff 0.6, best first, at most n', () => {
    assert.deepEqual(closeMatches('appel', ['ape', 'apple', 'peach', 'puppy']), ['apple', 'ape']);
    assert.deepEqual(closeMatches('zzz', ['apple']), []);
    assert.deepEqual(closeMatches('--limt', ['--limit', '--list', '--config'], 1), ['--limit']);
  });
});
