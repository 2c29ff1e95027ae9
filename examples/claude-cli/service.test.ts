import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { ResponseObject } from '../../src/contract/index.js';
import { request } from '../../src/http/client.js';
import { assertAgentCheckPasses, DIST_EXAMPLES, spawnService } from '../../test/support/examples.js';
import { buildPrompt, parseEnvelope } from './brain.js';

/**
 * The claude-cli service, started with its one command, with a fake `claude` placed first on PATH: a node script
 * that takes the real CLI's arguments and prints its JSON envelope (or fails like it, on stderr).
 */
describe('claude-cli service with a fake claude on PATH', () => {
  let bin: string;
  let log: string;
  before(() => {
    bin = mkdtempSync(path.join(os.tmpdir(), 'fake-claude-'));
    log = path.join(bin, 'calls.jsonl');
    const fake = path.join(DIST_EXAMPLES, '../test/support/fake-claude.js');
    writeFileSync(path.join(bin, 'claude'), `#!/bin/sh\nexec "${process.execPath}" "${fake}" "$@"\n`);
    chmodSync(path.join(bin, 'claude'), 0o755);
  });
  after(() => rmSync(bin, { recursive: true, force: true }));

  const start = (env: Record<string, string> = {}, args: string[] = []) => {
    writeFileSync(log, '');
    const { CLAUDE_MODEL: _unset, ...inherited } = process.env;
    return spawnService(process.execPath, [path.join(DIST_EXAMPLES, 'claude-cli/service.js'), '--port', '0', ...args], {
      env: { ...inherited, PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}`, FAKE_CLAUDE_LOG: log, ...env },
    });
  };
  const invocations = (): string[][] =>
    readFileSync(log, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as string[]);

  test('passes gym agent check, running `claude -p <prompt> --output-format json --model haiku` each call', async () => {
    const service = await start();
    try {
      assert.match(service.output(), /claude-cli service \(model haiku\) listening on/);
      await assertAgentCheckPasses(service.url);
      const calls = invocations();
      assert.ok(calls.length >= 3);
      for (const args of calls) {
        assert.deepEqual([args[0], ...args.slice(2)], ['-p', '--output-format', 'json', '--model', 'haiku']);
      }
      assert.match(calls[0]![1]!, /\[user\] add 1 then add 2 then get the count/);
    } finally {
      await service.close();
    }
  });

  test('tolerates fenced JSON, honours CLAUDE_MODEL, and reports the envelope usage', async () => {
    const service = await start({ FAKE_CLAUDE_MODE: 'fenced', CLAUDE_MODEL: 'sonnet' });
    try {
      const res = await request(`${service.url}/v1/responses`, {
        method: 'POST',
        json: {
          input: 'add 1 then add 2 then get the count',
          tools: [{ type: 'function', name: 'increment_counter', parameters: {}, strict: true }],
        },
        timeoutMs: 60_000,
      });
      assert.equal(res.status, 200, res.text());
      const body = res.json() as ResponseObject;
      const usage = body.usage!;
      assert.equal(invocations()[0]![5], 'sonnet');
      assert.equal(body.model, 'claude-cli (sonnet)');
      assert.deepEqual(
        body.output.map((item: Record<string, unknown>) => [item.type, item.name, item.arguments]),
        [
          ['function_call', 'increment_counter', '{"count":1}'],
          ['function_call', 'increment_counter', '{"count":2}'],
        ],
      );
      assert.equal(usage.input_tokens_details.cached_tokens, 7);
      assert.ok(usage.input_tokens > 7, 'cache reads are part of the input tokens');
      assert.equal(usage.total_tokens, usage.input_tokens + usage.output_tokens);
    } finally {
      await service.close();
    }
  });

  test('a failing claude (non-zero exit) answers HTTP 500 carrying its stderr, so Gym records a retryable failure', async () => {
    const service = await start({ FAKE_CLAUDE_MODE: 'fail' });
    try {
      const res = await request(`${service.url}/v1/responses`, {
        method: 'POST',
        json: { input: [{ role: 'user', content: 'add 1 then add 2 then get the count' }], tools: [] },
        timeoutMs: 60_000,
      });
      assert.equal(res.status, 500);
      assert.equal(
        (res.json() as { detail: string }).detail,
        'decide() failed: claude exited with code 1: Error: Invalid API key · Please run /login',
      );
    } finally {
      await service.close();
    }
  });
});

test('the prompt is the quickstart prompt with the conversation and the tools filled in', () => {
  const prompt = buildPrompt(
    [
      { role: 'user', content: 'add 1 then add 2 then get the count' },
      { type: 'function_call_output', call_id: 'c', output: '{"count":6}' },
    ],
    [{ type: 'function', name: 'get_counter_value', parameters: {} }],
  );
  assert.match(prompt, /^You are an agent solving a task by calling tools\./);
  assert.match(
    prompt,
    /Task conversation so far:\n\[user\] add 1 then add 2 then get the count\n\[tool result\] \{"count":6\}\n/,
  );
  assert.match(
    prompt,
    /Tools you may ask for \(JSON schemas\):\n\[\{"type":"function","name":"get_counter_value","parameters":\{\}\}\]\n/,
  );
});

test('the envelope parser reads result and usage, and names an error envelope or non-JSON output', () => {
  assert.deepEqual(parseEnvelope('{"type":"result","result":"{}","usage":{"input_tokens":10,"output_tokens":3}}'), {
    result: '{}',
    usage: { inputTokens: 10, outputTokens: 3, cachedTokens: 0 },
  });
  assert.throws(
    () => parseEnvelope('{"type":"result","is_error":true,"result":"Credit balance is too low"}'),
    /claude reported an error: Credit balance is too low/,
  );
  assert.throws(() => parseEnvelope('Segmentation fault'), /not its JSON envelope: Segmentation fault/);
});
