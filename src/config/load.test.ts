import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { tempDir } from '../../test/support/cli.js';
import { ConfigError } from '../errors.js';
import { loadGlobalConfig, type LoadOptions } from './load.js';
import { isPortFree } from './ports.js';
import { getServerInstance, listServerInstances, resolveRef } from './servers.js';
import { readServerEnv, serverEnv } from './server-env.js';
import type { GlobalConfig } from './types.js';

/** A temp dir holding `files` (relative path → YAML text), removed when the test process exits. */
function fixture(files: Record<string, string>): string {
  const dir = tempDir('tsgym-config-');
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    writeFileSync(path.join(dir, name), text);
  }
  return dir;
}

function load(cwd: string, overrides: string[], extra: Partial<LoadOptions> = {}): Promise<GlobalConfig> {
  return loadGlobalConfig({ overrides, cwd, env: {}, allocatePorts: false, warn: () => {}, ...extra });
}

async function loadError(cwd: string, overrides: string[], extra: Partial<LoadOptions> = {}): Promise<string> {
  try {
    await load(cwd, overrides, extra);
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected a ConfigError, got ${String(err)}`);
    return err.message;
  }
  assert.fail('expected loadGlobalConfig to fail');
}

const RESOURCES = `
counter_env:
  resources_servers:
    example_session_state_mgmt:
      entrypoint: app.py
      domain: agent
`;
const AGENT = `
remote_agent:
  responses_api_agents:
    remote_agent:
      entrypoint: app.py
      agent_base_url: http://localhost:9000
      resources_server:
        type: resources_servers
        name: counter_env
`;

describe('composition order', () => {
  test('nested config_paths merge post-order: A1, A2, A, B1, B; then env.yaml; then the CLI', async () => {
    const trail = (name: string, includes: string[] = []) =>
      `${includes.length ? `config_paths: [${includes.join(', ')}]\n` : ''}order: ${name}\nset_by_${name}: true\nlast_file: ${name}\n`;
    const dir = fixture({
      'A.yaml': trail('A', ['A1.yaml', 'A2.yaml']).replace('order: A', 'order: A\nshared: A'),
      'A1.yaml': trail('A1') + 'shared: A1\nonly_a1: [1, 2, 3]\n',
      'A2.yaml': trail('A2') + 'only_a1: [9]\n',
      'B.yaml': trail('B', ['B1.yaml']),
      'B1.yaml': trail('B1') + 'shared: B1\nenv_wins: file\ncli_wins: file\n',
      'env.yaml': 'env_wins: env\ncli_wins: env\n',
    });
    const config = await load(dir, ['+config_paths=[A.yaml,B.yaml]', '++cli_wins=cli']);
    assert.equal(config.last_file, 'B', 'the last root merges last');
    assert.equal(config.shared, 'B1', 'B1 (after A and its subtree) overrides A');
    assert.deepEqual(config.only_a1, [9], 'a later list replaces the earlier list wholesale');
    assert.deepEqual(
      config.config_paths,
      ['A.yaml', 'B.yaml', 'A1.yaml', 'A2.yaml', 'B1.yaml'],
      'breadth-first discovery',
    );
    assert.equal(config.env_wins, 'env', 'env.yaml overrides files');
    assert.equal(config.cli_wins, 'cli', 'the CLI overrides env.yaml');
    for (const name of ['A', 'A1', 'A2', 'B', 'B1']) assert.equal(config[`set_by_${name}`], true);
  });

  test("a file's own value beats what it includes", async () => {
    const dir = fixture({
      'parent.yaml': 'config_paths: [child.yaml]\nx: parent\n',
      'child.yaml': 'x: child\ny: child\n',
    });
    const config = await load(dir, ['+config_paths=[parent.yaml]']);
    assert.equal(config.x, 'parent');
    assert.equal(config.y, 'child');
  });

  test('each file is loaded once even when included twice', async () => {
    const dir = fixture({
      'a.yaml': 'config_paths: [common.yaml]\nfrom_a: 1\n',
      'b.yaml': 'config_paths: [common.yaml]\nvalue: b\n',
      'common.yaml': 'value: common\n',
    });
    const notices: string[] = [];
    const config = await load(dir, ['+config_paths=[a.yaml,b.yaml]'], { warn: (m) => notices.push(m) });
    assert.deepEqual(config.config_paths, ['a.yaml', 'b.yaml', 'common.yaml']);
    assert.equal(config.value, 'b');
    assert.equal(notices.length, 1);
    assert.match(notices[0]!, /same source config path.*_inherit_from/);
  });

  test('env.yaml is picked up with no config_paths, and can name config_paths itself', async () => {
    const dir = fixture({
      'env.yaml': 'config_paths: [x.yaml]\npolicy_api_key: sk-1\n',
      'x.yaml': 'from_x: yes-really\n',
    });
    const config = await load(dir, []);
    assert.equal(config.policy_api_key, 'sk-1');
    assert.equal(config.from_x, 'yes-really');
  });

  test("the CLI config_paths replaces env.yaml's list", async () => {
    const dir = fixture({ 'env.yaml': 'config_paths: [x.yaml]\n', 'x.yaml': 'from_x: 1\n', 'y.yaml': 'from_y: 1\n' });
    const config = await load(dir, ['+config_paths=[y.yaml]']);
    assert.equal(config.from_y, 1);
    assert.equal(config.from_x, undefined);
  });

  test('relative paths are searched under NEMO_GYM_EXTRA_ROOTS before cwd', async () => {
    const extra = fixture({ 'c.yaml': 'where: extra\n' });
    const dir = fixture({ 'c.yaml': 'where: cwd\n' });
    const config = await load(dir, ['+config_paths=[c.yaml]'], { env: { NEMO_GYM_EXTRA_ROOTS: extra } });
    assert.equal(config.where, 'extra');
  });

  test('a missing path lists every root looked in', async () => {
    const dir = fixture({});
    const message = await loadError(dir, ['+config_paths=[nope/x.yaml]']);
    assert.match(message, /config_paths entry 'nope\/x\.yaml'/);
    assert.ok(message.includes(path.join(dir, 'nope/x.yaml')), message);
    assert.match(message, /NEMO_GYM_EXTRA_ROOTS/);
  });

  test('config_paths that is not a list is rejected', async () => {
    const message = await loadError(fixture({}), ['+config_paths=a.yaml']);
    assert.match(message, /'config_paths' must be a list of paths\. Got: "a\.yaml"/);
  });

  test('YAML syntax errors give file, line and column', async () => {
    const dir = fixture({ 'bad.yaml': 'ok: 1\nlist: [1, 2\nnext: 3\n' });
    const message = await loadError(dir, ['+config_paths=[bad.yaml]']);
    assert.match(message, /Malformed YAML in '.*bad\.yaml' at line \d+, column \d+: /);
    const dup = fixture({ 'dup.yaml': 'a: 1\nb: 2\na: 3\n' });
    assert.match(await loadError(dup, ['+config_paths=[dup.yaml]']), /at line 3, column 1: .*[Uu]nique/);
  });
});

describe('merge semantics', () => {
  test('a later ??? never overwrites; an earlier ??? is filled; null overwrites', async () => {
    const dir = fixture({ 'a.yaml': 'x: concrete\ny: ???\nz: 5\n', 'b.yaml': 'x: ???\ny: filled\nz: null\n' });
    const config = await load(dir, ['+config_paths=[a.yaml,b.yaml]']);
    assert.equal(config.x, 'concrete');
    assert.equal(config.y, 'filled');
    assert.equal(config.z, null);
  });

  test('every ??? leaf is reported together, with [i] paths and at most 3 examples', async () => {
    const dir = fixture({ 'a.yaml': 'one: ???\nnested:\n  two: ???\nitems:\n  - {three: ???}\nfour: ???\nfine: 1\n' });
    const message = await loadError(dir, ['+config_paths=[a.yaml]']);
    assert.match(message, /^4 required config value\(s\) are unset \(still '\?\?\?'\) after merging:/);
    for (const key of ['one', 'nested.two', 'items[0].three', 'four'])
      assert.ok(message.includes(`  - ${key}`), `${key} listed`);
    assert.ok(message.includes('++one=<value> ++nested.two=<value> ++items[0].three=<value>'));
    assert.ok(!message.includes('++four='), 'only the first 3 as examples');
    assert.match(message, /a\.yaml' at line 1/);
  });

  test('a ??? removed by _delete_key is not reported', async () => {
    const dir = fixture({ 'a.yaml': 'block:\n  _delete_key: "gone"\n  gone: ???\n  kept: 1\n' });
    const config = await load(dir, ['+config_paths=[a.yaml]']);
    assert.deepEqual(config.block, { kept: 1 });
  });
});

describe('structural directives', () => {
  test('_inherit_from moves the source (deleted) and merges local keys on top', async () => {
    const dir = fixture({
      'a.yaml':
        `math_with_judge:\n  resources_servers:\n    math:\n      entrypoint: app.py\n      domain: math\n      judge: small\n` +
        `aime_resources_server:\n  _inherit_from: math_with_judge\n  resources_servers:\n    math:\n      judge: big\n`,
    });
    const config = await load(dir, ['+config_paths=[a.yaml]']);
    assert.equal(config.math_with_judge, undefined);
    assert.deepEqual(config.aime_resources_server, {
      resources_servers: { math: { entrypoint: 'app.py', domain: 'math', judge: 'big', host: '127.0.0.1' } },
    });
  });

  test('string forms ${copy:…} (source kept) and ${inherit_from:…} (source deleted)', async () => {
    const dir = fixture({
      'a.yaml': 'base: {k: 1}\nmoved_src: {m: 2}\ncopy: ${copy:base}\nmove: ${inherit_from:moved_src}\n',
    });
    const config = await load(dir, ['+config_paths=[a.yaml]']);
    assert.deepEqual(config.base, { k: 1 });
    assert.deepEqual(config.copy, { k: 1 });
    assert.deepEqual(config.move, { m: 2 });
    assert.equal(config.moved_src, undefined);
  });

  test('_delete_key with _copy deletes from the merged result, and the key must exist there', async () => {
    const dir = fixture({
      'a.yaml': 'base: {a: 1, b: 2, c: 3}\nderived: {_copy: base, _delete_key: "b, c", c: 30, d: 4}\n',
    });
    const config = await load(dir, ['+config_paths=[a.yaml]']);
    // c is local, so only the local c goes; b is deleted from the merged result.
    assert.deepEqual(config.derived, { a: 1, c: 3, d: 4 });
    const bad = fixture({ 'a.yaml': 'base: {a: 1}\nderived: {_copy: base, _delete_key: "zz"}\n' });
    assert.match(await loadError(bad, ['+config_paths=[a.yaml]']), /_delete_key.*'zz'/);
  });

  test('chained inheritance resolves (A from B, B from C)', async () => {
    const dir = fixture({ 'a.yaml': 'c: {x: 1, y: 1}\nb: {_inherit_from: c, y: 2}\na: {_inherit_from: b, z: 3}\n' });
    const config = await load(dir, ['+config_paths=[a.yaml]']);
    assert.deepEqual(config.a, { x: 1, y: 2, z: 3 });
  });

  test('a missing source path is an error naming the path', async () => {
    const dir = fixture({ 'a.yaml': 'x: {_inherit_from: no.such}\n' });
    assert.match(
      await loadError(dir, ['+config_paths=[a.yaml]']),
      /Path specified does not exist in config: \['no', 'such'\]/,
    );
  });
});

describe('interpolation', () => {
  test('${a.b}, relative, list index, embedded and typed values', async () => {
    const dir = fixture({
      'a.yaml': [
        'policy_base_url: http://model:8000/v1',
        'port_number: 8080',
        'block: {url: "${policy_base_url}", sibling: "${.url}", port: "${port_number}", text: "p=${port_number} ok=${flag}", first: "${items[0]}"}',
        'flag: true',
        'items: [zero, one]',
        'escaped: "\\\\${not_a_ref}"',
      ].join('\n'),
    });
    const config = await load(dir, ['+config_paths=[a.yaml]']);
    assert.deepEqual(config.block, {
      url: 'http://model:8000/v1',
      sibling: 'http://model:8000/v1',
      port: 8080,
      text: 'p=8080 ok=True',
      first: 'zero',
    });
    assert.equal(config.escaped, '${not_a_ref}');
  });

  test('${oc.env:VAR} and ${oc.env:VAR,default}', async () => {
    const dir = fixture({
      'a.yaml':
        'key: ${oc.env:MY_KEY}\nwith_default: ${oc.env:UNSET_VAR,fallback}\nnull_default: ${oc.env:UNSET_VAR,null}\nselected: ${oc.select:nowhere,dflt}\n',
    });
    const config = await load(dir, ['+config_paths=[a.yaml]'], { env: { MY_KEY: 'secret-value' } });
    assert.equal(config.key, 'secret-value');
    assert.equal(config.with_default, 'fallback');
    assert.equal(config.null_default, null);
    assert.equal(config.selected, 'dflt');
  });

  test('a missing env var without default names the var and the key', async () => {
    const dir = fixture({ 'a.yaml': 'model:\n  api_key: ${oc.env:OPENAI_API_KEY}\n' });
    const message = await loadError(dir, ['+config_paths=[a.yaml]']);
    assert.match(message, /'model\.api_key'.*'OPENAI_API_KEY'.*not set/);
  });

  test('a reference to a missing key gives the reference interpolation message', async () => {
    const dir = fixture({ 'a.yaml': 'model:\n  base_url: ${policy_base_url}\n' });
    const message = await loadError(dir, ['+config_paths=[a.yaml]']);
    assert.match(
      message,
      /Config value 'model\.base_url' \(in '.*a\.yaml' at line 2\) references 'policy_base_url', which is not set after merging\. Provide it via a CLI override, in env\.yaml, or in a config you pass via config_paths\. For example, on the command line: \+\+policy_base_url=<value>/,
    );
  });

  test('the reference is satisfied by the CLI', async () => {
    const dir = fixture({ 'a.yaml': 'model:\n  base_url: ${policy_base_url}\n' });
    const config = await load(dir, ['+config_paths=[a.yaml]', '+policy_base_url=http://x/v1']);
    assert.deepEqual(config.model, { base_url: 'http://x/v1' });
  });

  test('cycles are reported', async () => {
    const dir = fixture({ 'a.yaml': 'a: ${b}\nb: ${a}\n' });
    assert.match(await loadError(dir, ['+config_paths=[a.yaml]']), /cycle/);
  });

  test('an interpolation can read a port assigned at load time', async () => {
    const dir = fixture({
      'a.yaml':
        RESOURCES + 'counter_url: http://127.0.0.1:${counter_env.resources_servers.example_session_state_mgmt.port}\n',
    });
    const config = await load(dir, ['+config_paths=[a.yaml]'], { allocatePorts: true });
    const port = getServerInstance(config, 'counter_env').port;
    assert.equal(config.counter_url, `http://127.0.0.1:${port}`);
  });
});

describe('server instances', () => {
  test('instances are listed with type, impl, inner config and address; reserved keys never are', async () => {
    const dir = fixture({
      'a.yaml':
        RESOURCES +
        AGENT +
        'head_server: {host: 127.0.0.1, port: 11555}\nresponses_create_params: {temperature: 0.5}\n',
    });
    const config = await load(dir, [
      '+config_paths=[a.yaml]',
      '++counter_env.resources_servers.example_session_state_mgmt.port=12001',
      '++remote_agent.responses_api_agents.remote_agent.port=12002',
    ]);
    const instances = listServerInstances(config);
    assert.deepEqual(
      instances.map((i) => [i.name, i.serverType, i.impl, i.url]),
      [
        ['counter_env', 'resources_servers', 'example_session_state_mgmt', 'http://127.0.0.1:12001'],
        ['remote_agent', 'responses_api_agents', 'remote_agent', 'http://127.0.0.1:12002'],
      ],
    );
    assert.equal(instances[1]!.config.agent_base_url, 'http://localhost:9000');
  });

  test('a reserved top-level key with a server shape is not a server', async () => {
    const dir = fixture({
      'a.yaml': 'head_server:\n  host: 127.0.0.1\n  port: 11000\nquery:\n  resources_servers:\n    x: {}\n',
    });
    const config = await load(dir, ['+config_paths=[a.yaml]']);
    assert.deepEqual(listServerInstances(config), []);
  });

  test('domain is required for resources servers, and must be in the enum', async () => {
    const dir = fixture({ 'a.yaml': 'env:\n  resources_servers:\n    impl:\n      entrypoint: app.py\n' });
    const message = await loadError(dir, ['+config_paths=[a.yaml]']);
    assert.match(message, /almost-server.*'env'.*a\.yaml' at line 1.*A domain is required for resources servers\./);
    const bad = fixture({ 'a.yaml': 'env:\n  resources_servers:\n    impl: {entrypoint: app.py, domain: cooking}\n' });
    assert.match(
      await loadError(bad, ['+config_paths=[a.yaml]']),
      /domain "cooking" is not one of math, coding, agent/,
    );
  });

  test('almost-servers fail the load unless error_on_almost_servers=false', async () => {
    const dir = fixture({
      'a.yaml':
        RESOURCES +
        'two_impls:\n  responses_api_models:\n    a: {entrypoint: app.py}\n    b: {entrypoint: app.py}\nno_entry:\n  responses_api_agents:\n    x: {foo: 1}\n',
    });
    const message = await loadError(dir, ['+config_paths=[a.yaml]']);
    assert.match(message, /^Found 2 almost-server\(s\) with validation errors/);
    assert.match(message, /'two_impls'.*exactly one impl key, found 2 \(a, b\)/);
    assert.match(message, /'no_entry'.*entrypoint is required/);
    assert.match(message, /error_on_almost_servers=false/);
    const warnings: string[] = [];
    const config = await load(dir, ['+config_paths=[a.yaml]', '+error_on_almost_servers=false'], {
      warn: (m) => warnings.push(m),
      allocatePorts: true,
    });
    assert.deepEqual(
      listServerInstances(config).map((i) => i.name),
      ['counter_env'],
      'almost-servers are not instances',
    );
    assert.equal(warnings.length, 2);
    assert.match(warnings[0]!, /Almost-Server Detected: 'two_impls'.*will NOT be started/);
  });

  test('refs must name an instance of that type, with did-you-mean', async () => {
    const dir = fixture({ 'a.yaml': RESOURCES + AGENT.replace('name: counter_env', 'name: countr_env') });
    const message = await loadError(dir, ['+config_paths=[a.yaml]']);
    assert.match(
      message,
      /In server instance 'remote_agent', field 'resources_server' \(in '.*a\.yaml' at line \d+\) references resources_servers\/'countr_env', which is not defined in the merged config\. Did you mean: 'counter_env'\?/,
    );
  });

  test('refs with no close match list the available instances of that type', async () => {
    const dir = fixture({ 'a.yaml': RESOURCES + AGENT.replace('name: counter_env', 'name: zzz') });
    assert.match(await loadError(dir, ['+config_paths=[a.yaml]']), /Available resources_servers: 'counter_env'/);
    const wrongType = fixture({
      'a.yaml': AGENT.replace('type: resources_servers', 'type: responses_api_models').replace(
        'name: counter_env',
        'name: remote_agent',
      ),
    });
    assert.match(await loadError(wrongType, ['+config_paths=[a.yaml]']), /Available responses_api_models: \(none\)/);
  });

  test('resolveRef and getServerInstance look up by name, with did-you-mean', async () => {
    const dir = fixture({ 'a.yaml': RESOURCES + AGENT });
    const config = await load(dir, ['+config_paths=[a.yaml]'], { allocatePorts: true });
    assert.equal(
      resolveRef(config, { type: 'responses_api_agents', name: 'remote_agent' }, "Row 0's agent_ref").impl,
      'remote_agent',
    );
    assert.equal(resolveRef(config, { name: 'remote_agent' }, "Row 0's agent_ref").serverType, 'responses_api_agents');
    assert.throws(
      () => resolveRef(config, { name: 'remote_agnt' }, "Row 0's agent_ref"),
      /Row 0's agent_ref references server\/'remote_agnt'.*Did you mean: 'remote_agent'\?/,
    );
    assert.throws(() => resolveRef(config, 'remote_agent', "Row 0's agent_ref"), /must be a server reference/);
    assert.throws(
      () => getServerInstance(config, 'counter'),
      /no server instance named 'counter'.*Did you mean: 'counter_env'\?/,
    );
  });
});

describe('host and port assignment', () => {
  test('head_server defaults to 127.0.0.1:11000; a lone ++head_server.port fills the host', async () => {
    const dir = fixture({});
    assert.deepEqual((await load(dir, [])).head_server, { host: '127.0.0.1', port: 11000 });
    assert.deepEqual((await load(dir, ['++head_server.port=11001'])).head_server, { host: '127.0.0.1', port: 11001 });
    assert.deepEqual((await load(dir, ['+default_host=0.0.0.0'])).head_server, { host: '0.0.0.0', port: 11000 });
  });

  test('allocated ports are distinct, free, in range, and never the head port or an explicit one', async () => {
    const many = Array.from(
      { length: 6 },
      (_, i) => `m${i}:\n  responses_api_models:\n    impl: {entrypoint: app.py}\n`,
    ).join('');
    const dir = fixture({
      'a.yaml': many + 'fixed:\n  responses_api_models:\n    impl: {entrypoint: app.py, port: 15003}\n',
    });
    // A narrow range that contains the head port and the explicit port forces the exclusions to matter.
    const config = await load(
      dir,
      ['+config_paths=[a.yaml]', '++head_server.port=15000', '+port_range_low=15000', '+port_range_high=15010'],
      { allocatePorts: true },
    );
    const instances = listServerInstances(config);
    const ports = instances.map((i) => i.port);
    assert.equal(new Set(ports).size, ports.length, 'distinct');
    for (const instance of instances.filter((i) => i.name !== 'fixed')) {
      assert.ok(instance.port >= 15000 && instance.port <= 15010, 'in range');
      assert.notEqual(instance.port, 15000, 'not the head port');
      assert.notEqual(instance.port, 15003, 'not the explicit port');
      assert.ok(await isPortFree(instance.port), 'free');
      assert.equal(instance.host, '127.0.0.1');
    }
    assert.deepEqual((config.disallowed_ports as number[]).slice(0, 2), [15000, 15003]);
  });

  test('allocatePorts:false leaves ports unset', async () => {
    const dir = fixture({ 'a.yaml': RESOURCES });
    const config = await load(dir, ['+config_paths=[a.yaml]']);
    const inner = ((config.counter_env as GlobalConfig).resources_servers as GlobalConfig)
      .example_session_state_mgmt as GlobalConfig;
    assert.equal(inner.port, undefined);
    assert.equal(inner.host, '127.0.0.1');
    assert.throws(() => listServerInstances(config), /no port/);
  });

  test('two instances asking for the same address are rejected', async () => {
    const dir = fixture({
      'a.yaml':
        'a:\n  responses_api_models:\n    i: {entrypoint: app.py, port: 12345}\nb:\n  responses_api_models:\n    i: {entrypoint: app.py, port: 12345}\n',
    });
    assert.match(await loadError(dir, ['+config_paths=[a.yaml]']), /'b'.*127\.0\.0\.1:12345.*'a' also asks for/);
  });
});

describe('server env contract', () => {
  test('readServerEnv reads NEMO_GYM_CONFIG_DICT and NEMO_GYM_CONFIG_PATH', async () => {
    const dir = fixture({ 'a.yaml': RESOURCES + AGENT });
    const config = await load(dir, ['+config_paths=[a.yaml]'], { allocatePorts: true });
    const { global, instance } = readServerEnv(serverEnv(config, 'remote_agent'));
    assert.deepEqual(global, config);
    assert.equal(instance.name, 'remote_agent');
    assert.equal(instance.url, getServerInstance(config, 'remote_agent').url);
    assert.throws(() => readServerEnv({}), /NEMO_GYM_CONFIG_DICT and NEMO_GYM_CONFIG_PATH are not set/);
  });
});
