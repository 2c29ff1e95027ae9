import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { tempDir } from '../../test/support/cli.js';
import { ConfigError } from '../errors.js';
import { resolveLaunch, resolveServerDir } from './entrypoint.js';

/** An install root with `files` (relative path → contents) created empty-or-given; removed when the test process exits. */
function tree(files: string[]): string {
  const dir = tempDir('tsgym-entry-');
  for (const file of files) {
    mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    writeFileSync(path.join(dir, file), '');
  }
  return dir;
}

describe('resolveServerDir', () => {
  test('the first root holding <serverType>/<impl>/ wins', () => {
    const first = tree(['resources_servers/counter/app.ts']);
    const second = tree(['resources_servers/counter/app.ts', 'resources_servers/other/app.ts']);
    assert.equal(
      resolveServerDir('resources_servers', 'counter', [first, second]),
      path.join(first, 'resources_servers/counter'),
    );
    assert.equal(
      resolveServerDir('resources_servers', 'other', [first, second]),
      path.join(second, 'resources_servers/other'),
    );
  });

  test('a missing directory lists where it looked', () => {
    const root = tree([]);
    assert.throws(
      () => resolveServerDir('responses_api_agents', 'nope', [root]),
      (err: unknown) =>
        err instanceof ConfigError &&
        err.message.includes(path.join(root, 'responses_api_agents/nope')) &&
        /--search-dir/.test(err.message),
    );
  });
});

describe('resolveLaunch', () => {
  test('entrypoint app.py with an app.ts inside the install root runs the compiled twin under dist/', () => {
    const root = tree(['resources_servers/counter/app.ts', 'dist/resources_servers/counter/app.js']);
    const dir = path.join(root, 'resources_servers/counter');
    assert.deepEqual(resolveLaunch(dir, 'app.py', root), {
      command: process.execPath,
      args: [path.join(root, 'dist/resources_servers/counter/app.js')],
      cwd: dir,
    });
  });

  test('an app.ts whose twin is not built asks for a build', () => {
    const root = tree(['resources_servers/counter/app.ts']);
    assert.throws(
      () => resolveLaunch(path.join(root, 'resources_servers/counter'), 'app.py', root),
      /compiled twin.*npm run build/,
    );
  });

  test('app.js runs directly, whether named or a sibling of the named app.py', () => {
    const root = tree(['dist/x']);
    const outside = tree(['agents/mine/app.js']);
    const dir = path.join(outside, 'agents/mine');
    const expected = { command: process.execPath, args: [path.join(dir, 'app.js')], cwd: dir };
    assert.deepEqual(resolveLaunch(dir, 'app.js', root), expected);
    assert.deepEqual(resolveLaunch(dir, 'app.py', root), expected);
  });

  test('an installed package runs the compiled twin though it ships no TypeScript source', () => {
    const root = tree(['resources_servers/counter/configs/counter.yaml', 'dist/resources_servers/counter/app.js']);
    const dir = path.join(root, 'resources_servers/counter');
    assert.deepEqual(resolveLaunch(dir, 'app.py', root), {
      command: process.execPath,
      args: [path.join(root, 'dist/resources_servers/counter/app.js')],
      cwd: dir,
    });
  });

  test("a .ts outside the install root (the user's own server) runs through tsx's loader", () => {
    const root = tree(['dist/x']);
    const outside = tree(['agents/mine/app.ts']);
    const dir = path.join(outside, 'agents/mine');
    const launch = resolveLaunch(dir, 'app.py', root);
    assert.equal(launch.command, process.execPath);
    assert.equal(launch.args[0], '--import');
    assert.match(launch.args[1] ?? '', /^file:.*\/tsx\//);
    assert.deepEqual(launch.args.slice(2), [path.join(dir, 'app.ts')]);
  });

  test('a real .py with no TS/JS sibling runs with python3', () => {
    const root = tree(['dist/x']);
    const outside = tree(['servers/py/app.py']);
    const dir = path.join(outside, 'servers/py');
    assert.deepEqual(resolveLaunch(dir, 'app.py', root), {
      command: 'python3',
      args: [path.join(dir, 'app.py')],
      cwd: dir,
    });
  });

  test('nothing found names the directory and every name tried', () => {
    const root = tree(['servers/empty/README.md']);
    const dir = path.join(root, 'servers/empty');
    assert.throws(
      () => resolveLaunch(dir, 'app.py', root),
      (err: unknown) =>
        err instanceof ConfigError && err.message.includes(dir) && /Tried: app\.js, app\.ts, app\.py/.test(err.message),
    );
  });
});
