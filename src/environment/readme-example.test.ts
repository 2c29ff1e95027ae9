import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { placeholderResponse } from '../contract/index.js';

import { request } from '../http/client.js';
import { CookieJar } from '../http/cookies.js';
import { KIT_URL, startEnvironmentProcess, waitForOutput } from '../../test/support/environment-process.js';

/**
 * The README's "Write your own environment" example, exactly as printed (only its import path pointed at the compiled
 * kit), run as a server process: so the example stays complete and runnable, and does what the README says.
 */

const README = fileURLToPath(new URL('../../../README.md', import.meta.url));

function readmeExample(): string {
  const text = readFileSync(README, 'utf8');
  const section = text.indexOf('## Write your own environment');
  assert.ok(section >= 0, 'the README has a "Write your own environment" section');
  const start = text.indexOf('```ts\n', section) + '```ts\n'.length;
  const code = text.slice(start, text.indexOf('```', start));
  assert.match(code, /from 'tsgym\/environment'/);
  return code.replace("'tsgym/environment'", JSON.stringify(KIT_URL));
}

describe('README: write your own environment', () => {
  it('the example runs: seed, list, complete, a ToolError, verify with reward, extras and the answer key dropped', async () => {
    const proc = await startEnvironmentProcess(readmeExample(), 'todo');
    try {
      await waitForOutput(proc, 'todo listening on');
      const jar = new CookieJar();
      const post = async (route: string, body: unknown) => {
        const cookie = jar.header();
        const res = await request(`${proc.url}${route}`, {
          method: 'POST',
          json: body,
          timeoutMs: 30_000, // an upper bound only: generous for a busy machine
          ...(cookie ? { headers: { cookie } } : {}),
        });
        jar.absorb(res.setCookies);
        return res;
      };
      const row = {
        responses_create_params: { input: 'finish the report' },
        tasks: ['write report', 'book flight'],
        expected_done: ['write report'],
      };
      assert.equal((await post('/seed_session', row)).status, 200);
      assert.deepEqual((await post('/list_tasks', {})).json(), { open: ['write report', 'book flight'] });
      assert.deepEqual((await post('/complete_task', { task: 'write report' })).json(), { completed: 'write report' });
      const again = await post('/complete_task', { task: 'write report' });
      assert.equal(again.status, 400);
      assert.deepEqual(again.json(), { detail: 'no open task named "write report"' });
      const missing = await post('/complete_task', {});
      assert.equal(missing.status, 422);

      const verified = (await post('/verify', { ...row, response: placeholderResponse() })).json() as Record<
        string,
        unknown
      >;
      assert.equal(verified.reward, 1);
      assert.equal(verified.tasks_done, 1);
      assert.equal(verified.wrong_tasks, 0);
      assert.equal(verified.expected_done, undefined);
      assert.deepEqual(verified.tasks, row.tasks);
    } finally {
      proc.child.kill('SIGKILL');
    }
  });
});
