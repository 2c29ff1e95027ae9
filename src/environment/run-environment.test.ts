import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';

import { request } from '../http/client.js';
import { tempDir } from '../../test/support/cli.js';
import { KIT_URL, startEnvironmentProcess, waitForOutput } from '../../test/support/environment-process.js';
import { eventually } from '../../test/support/wait.js';

/** An upper bound on one loopback exchange: generous, so a busy machine is never mistaken for a broken server. */
const REQUEST_TIMEOUT_MS = 30_000;

/**
 * `runEnvironment` in a real server process, started the way `gym env start` starts one (the two config env vars):
 * it listens on the configured port, hands the instance's config block to the environment, disposes every live
 * session on SIGTERM before exiting 0, and a definition mistake exits 1 with one sentence and no stack trace.
 */

function appSource(toolName: string): string {
  return `
import { appendFileSync } from 'node:fs';
import { defineEnvironment, runEnvironment, z } from ${JSON.stringify(KIT_URL)};
void runEnvironment((ctx) => defineEnvironment({
  name: 'ledger',
  createState: () => ({}),
  tools: (tool) => ({
    ${JSON.stringify(toolName)}: tool({ description: 'The configured greeting.', input: z.object({}), run: () => ({ greeting: ctx.instance.config.greeting }) }),
  }),
  verify: () => ({ reward: 1 }),
  dispose: async (_state, reason) => {
    await new Promise((resolve) => setTimeout(resolve, 10));
    appendFileSync(String(ctx.instance.config.disposals), reason + '\\n');
  },
}));
`;
}

async function startLedger(toolName: string, config: Record<string, unknown> = {}) {
  const disposals = path.join(tempDir('tsgym-ledger-'), 'disposals.txt');
  writeFileSync(disposals, '');
  const proc = await startEnvironmentProcess(appSource(toolName), 'ledger', {
    greeting: 'hello from the config',
    disposals,
    ...config,
  });
  return { ...proc, disposals };
}

describe('runEnvironment in a server process', () => {
  it('serves the config block to the environment and disposes every live session on SIGTERM', async () => {
    const proc = await startLedger('greet');
    try {
      await waitForOutput(proc, 'ledger listening on');
      const seeded = [];
      for (let i = 0; i < 2; i++)
        seeded.push(
          await request(`${proc.url}/seed_session`, { method: 'POST', json: {}, timeoutMs: REQUEST_TIMEOUT_MS }),
        );
      const cookie = seeded[0]!.setCookies[0]!.split(';')[0]!;
      const greeting = await request(`${proc.url}/greet`, {
        method: 'POST',
        json: {},
        timeoutMs: REQUEST_TIMEOUT_MS,
        headers: { cookie },
      });
      assert.deepEqual(greeting.json(), { greeting: 'hello from the config' });

      proc.child.kill('SIGTERM');
      assert.equal(await proc.exited, 0, proc.output().stderr);
      assert.deepEqual(
        readFileSync(proc.disposals, 'utf8').trim().split('\n'),
        ['shutdown', 'shutdown'],
        'both sessions were disposed before exit',
      );
    } finally {
      proc.child.kill('SIGKILL');
    }
  });

  it('exits 1 with one sentence when the definition names a reserved route', async () => {
    const proc = await startLedger('verify');
    try {
      assert.equal(await proc.exited, 1);
      const { stderr } = proc.output();
      assert.match(stderr, /^Error: environment 'ledger', tool 'verify': the name is reserved by the resources server/);
      assert.doesNotMatch(stderr, /\n\s+at /);
    } finally {
      proc.child.kill('SIGKILL');
    }
  });

  it('expires a session abandoned by a killed collector after the configured session_idle_timeout_secs', async () => {
    const proc = await startLedger('greet', { session_idle_timeout_secs: 0.2 });
    try {
      await waitForOutput(proc, 'ledger listening on');
      await request(`${proc.url}/seed_session`, { method: 'POST', json: {}, timeoutMs: REQUEST_TIMEOUT_MS }); // and never verified
      await eventually(() => readFileSync(proc.disposals, 'utf8') === 'expired\n', {
        what: () =>
          `the idle session is disposed as expired (disposals: ${JSON.stringify(readFileSync(proc.disposals, 'utf8'))})`,
        timeoutMs: 60_000,
      });
    } finally {
      proc.child.kill('SIGKILL');
    }
  });

  it('exits 1 naming the key when max_sessions in the config is not a count', async () => {
    const proc = await startLedger('greet', { max_sessions: 'lots' });
    try {
      assert.equal(await proc.exited, 1);
      assert.match(
        proc.output().stderr,
        /^Error: ledger\.resources_servers\.ledger\.max_sessions must be an integer ≥ 1, got "lots"\./,
      );
    } finally {
      proc.child.kill('SIGKILL');
    }
  });
});
