import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { usage } from './help.js';

/** The help text is written from the command table: each command shows its own flags and operands. */

describe('usage', () => {
  test('per-command help lists its flags; the top level lists commands', () => {
    assert.match(usage('eval run'), /usage: gym eval run \[flags\][\s\S]*--no-serve[\s\S]*--concurrency N/);
    assert.doesNotMatch(usage('env status'), /--no-serve/);
    assert.match(usage('agent check'), /usage: gym agent check <url>/);
    assert.match(usage(), /env start[\s\S]*eval run[\s\S]*agent check <url>/);
    assert.match(usage('env'), /gym env <action>/);
  });
});
