import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { newTraceSalt, traceIdOf } from './trace-context.js';

test('a trace id is the first 16 bytes of SHA-256 over salt:task:rollout:attempt (what gym eval explain derives)', () => {
  const salt = newTraceSalt();
  for (const [task, rollout, attempt] of [
    [0, 0, 0],
    [7, 3, 2],
    [123456789, 41, 0],
    ['odd', null, 1],
  ] as const) {
    const expected = createHash('sha256')
      .update(`${salt}:${String(task)}:${String(rollout)}:${attempt}`)
      .digest('hex')
      .slice(0, 32);
    assert.equal(traceIdOf(salt, task, rollout, attempt), expected);
  }
  assert.equal(traceIdOf('00'.repeat(16), 1, 0, 0), traceIdOf('00'.repeat(16), 1, 0, 0));
  assert.notEqual(traceIdOf('00'.repeat(16), 1, 0, 0), traceIdOf('00'.repeat(16), 1, 0, 1));
});
