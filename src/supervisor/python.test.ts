import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import type { ServerInstance } from '../config/index.js';
import { ConfigError } from '../errors.js';
import { locateServer } from './plan.js';
import { choosePython, venvOf } from './python.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'tsgym-python-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function executable(file: string): string {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, '#!/bin/sh\n');
  chmodSync(file, 0o755);
  return file;
}

const bin = path.join(dir, 'bin');
const python3 = executable(path.join(bin, 'python3'));
const custom = executable(path.join(dir, 'custom', 'python'));
const env = { PATH: bin, PYTHONPATH: '/existing' };

function instance(config: Record<string, unknown> = {}): ServerInstance {
  return {
    name: 'env_a',
    serverType: 'resources_servers',
    impl: 'impl_a',
    config: { entrypoint: 'app.py', ...config },
    host: '127.0.0.1',
    port: 1,
    url: 'http://127.0.0.1:1',
  };
}
const choose = (config: Record<string, unknown>, inner: Record<string, unknown> = {}) =>
  choosePython({ instance: instance(inner), dirPath: '/srv/impl_a', config, cwd: dir, env });

describe('choosePython', () => {
  const venvs = path.join(dir, 'venvs');
  const venvPython = executable(path.join(venvs, 'resources_servers', 'impl_a', '.venv', 'bin', 'python'));

  test('default: python3 on PATH, with the server dir first on PYTHONPATH', () => {
    const choice = choose({});
    assert.equal(choice.executable, python3);
    assert.equal(choice.reason, 'python3 on PATH, the default');
    assert.deepEqual(choice.env, { PYTHONPATH: `/srv/impl_a${path.delimiter}/existing` });
  });

  test('skip_venv_if_present uses <uv_venv_dir>/<server_type>/<impl>/.venv/bin/python, activated', () => {
    const choice = choose({ skip_venv_if_present: true, uv_venv_dir: venvs });
    assert.equal(choice.executable, venvPython);
    assert.equal(choice.env.VIRTUAL_ENV, path.dirname(path.dirname(venvPython)));
    assert.equal(choice.env.PATH, `${path.dirname(venvPython)}${path.delimiter}${bin}`);
    assert.equal(
      choose({ uv_venv_dir: venvs }).executable,
      python3,
      'without skip_venv_if_present the venv is not used',
    );
  });

  test('uv_venv_dir defaults to the working directory, as in the reference', () => {
    assert.equal(venvOf(instance(), {}, dir), path.join(dir, 'resources_servers', 'impl_a', '.venv'));
  });

  test("precedence: the server's python_executable, the venv, the top-level python_executable, python3", () => {
    assert.equal(
      choose(
        { skip_venv_if_present: true, uv_venv_dir: venvs, python_executable: python3 },
        { python_executable: custom },
      ).executable,
      custom,
    );
    assert.equal(
      choose({ skip_venv_if_present: true, uv_venv_dir: venvs, python_executable: custom }).executable,
      venvPython,
    );
    const missing = choose({
      skip_venv_if_present: true,
      uv_venv_dir: path.join(dir, 'none'),
      python_executable: 'custom/python',
    });
    assert.equal(missing.executable, custom, 'relative paths resolve against the working directory');
    assert.match(
      missing.reason,
      /^python_executable; no venv at .*none\/resources_servers\/impl_a\/\.venv \(tsgym never builds one\)$/,
    );
  });

  test('an interpreter that does not exist is a config error naming the key', () => {
    assert.throws(
      () => choose({}, { python_executable: '/no/python' }),
      (err: unknown) =>
        err instanceof ConfigError &&
        /env_a\.resources_servers\.impl_a\.python_executable = \/no\/python is not an executable file/.test(
          err.message,
        ),
    );
    assert.throws(() => choose({ python_executable: 'python9.9' }), /python_executable = python9\.9 is not on PATH/);
    assert.throws(
      () => choosePython({ instance: instance(), dirPath: '/srv', config: {}, cwd: dir, env: { PATH: '' } }),
      /python3 \(the default interpreter for Python servers\) is not on PATH/,
    );
  });
});

describe('locateServer', () => {
  const install = path.join(dir, 'install');
  const extra = path.join(dir, 'extra');
  for (const root of [install, extra]) mkdirSync(path.join(root, 'resources_servers', 'impl_a'), { recursive: true });
  mkdirSync(path.join(extra, 'resources_servers', 'only_extra'), { recursive: true });
  const ctx = { config: {}, roots: [extra, install], installRoot: install, cwd: dir, env: {} };

  test("tsgym's own server wins over an extra root's, which is reported as not used", () => {
    assert.deepEqual(locateServer(instance(), ctx), {
      dirPath: path.join(install, 'resources_servers', 'impl_a'),
      origin: "tsgym's own",
      shadowed: [path.join(extra, 'resources_servers', 'impl_a')],
    });
  });

  test('server_dir points elsewhere explicitly; names tsgym does not ship come from the search roots', () => {
    assert.equal(
      locateServer(instance({ server_dir: 'extra/resources_servers/impl_a' }), ctx).dirPath,
      path.join(extra, 'resources_servers', 'impl_a'),
    );
    const other = { ...instance(), impl: 'only_extra' };
    assert.equal(locateServer(other, ctx).origin, `found under ${extra}`);
    assert.throws(
      () => locateServer(instance({ server_dir: '/no/dir' }), ctx),
      /server_dir = \/no\/dir is not a directory/,
    );
  });
});
