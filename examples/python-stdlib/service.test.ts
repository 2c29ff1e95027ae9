import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { request } from '../../src/http/client.js';
import {
  assertAgentCheckPasses,
  REPO_ROOT,
  runCounterRollouts,
  spawnService,
  trajectoryTypes,
  type SpawnedService,
} from '../../test/support/examples.js';

const SCRIPT = path.join(REPO_ROOT, 'examples/python-stdlib/service.py');
const hasPython = spawnSync('python3', ['--version']).status === 0;

describe(
  'python-stdlib service (plain Python 3, standard library only)',
  { skip: hasPython ? false : 'python3 is not installed' },
  () => {
    let service: SpawnedService;
    before(async () => {
      service = await spawnService('python3', [SCRIPT, '--port', '0']);
    });
    after(() => service.close());

    test('scores 5/5 on the counter dataset through the remote agent, or else passes gym agent check', async (t) => {
      assert.match(service.output(), /counter-planner \(python stdlib, deterministic, no model\) listening on/);
      const results = await runCounterRollouts(service.url);
      if ('unavailable' in results) {
        t.diagnostic(`${results.unavailable}; checked with gym agent check instead`);
        await assertAgentCheckPasses(service.url);
        return;
      }
      assert.deepEqual(results.rewards, [1, 1, 1, 1, 1]);
      assert.equal(trajectoryTypes(results.rows[0]!).at(-1), 'message');
    });

    test('passes gym agent check', async () => {
      await assertAgentCheckPasses(service.url);
    });

    test('passes gym agent check with --incremental', async () => {
      const incremental = await spawnService('python3', [SCRIPT, '--port', '0', '--incremental']);
      try {
        await assertAgentCheckPasses(incremental.url);
      } finally {
        await incremental.close();
      }
    });

    test('bad requests get a 400/422 with a one-line reason', async () => {
      const cases: [string, number, RegExp][] = [
        ['{nope', 400, /request body is not valid JSON/],
        ['[1]', 422, /must be a JSON object/],
        ['{"tools": []}', 422, /^input: required/],
      ];
      for (const [body, status, pattern] of cases) {
        const res = await request(`${service.url}/v1/responses`, { method: 'POST', jsonText: body, timeoutMs: 30_000 });
        assert.equal(res.status, status, body);
        assert.match((res.json() as { detail: string }).detail, pattern);
      }
    });
  },
);
