import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { JsonTooDeep, MAX_JSON_DEPTH, nestedDeeperThan, parseBoundedJson } from './index.js';

const nest = (depth: number, open = '[', close = ']'): string => open.repeat(depth) + close.repeat(depth);

describe('bounded JSON (D19)', () => {
  it('accepts nesting up to the limit and refuses one level more, for arrays, objects and mixes', () => {
    assert.equal(nestedDeeperThan(nest(MAX_JSON_DEPTH)), false);
    assert.equal(nestedDeeperThan(nest(MAX_JSON_DEPTH + 1)), true);
    const objects = '{"a":'.repeat(MAX_JSON_DEPTH + 1) + '1' + '}'.repeat(MAX_JSON_DEPTH + 1);
    assert.equal(nestedDeeperThan(objects), true);
    const mixed = '{"a":['.repeat(257) + '1' + ']}'.repeat(257);
    assert.equal(nestedDeeperThan(mixed), true);
    assert.equal(nestedDeeperThan(mixed, 514), false);
  });

  it('counts only brackets outside strings, escaped quotes included', () => {
    const inString = JSON.stringify({ s: '['.repeat(10_000) + '\\"' + '{'.repeat(10_000) });
    assert.equal(nestedDeeperThan(inString), false);
    const trailingBackslash = JSON.stringify(['a\\', '['.repeat(1_000)]);
    assert.equal(nestedDeeperThan(trailingBackslash), false);
    assert.equal(nestedDeeperThan(`["\\\\"${'['.repeat(600)}`), true);
  });

  it('depth is the deepest point, not the number of brackets', () => {
    const wide = `[${Array.from({ length: 10_000 }, () => '[[1]]').join(',')}]`;
    assert.equal(nestedDeeperThan(wide), false);
  });

  it('parseBoundedJson throws JsonTooDeep with the documented text, and the parser error for malformed text', () => {
    assert.throws(
      () => parseBoundedJson(nest(100_000)),
      (err: unknown) => err instanceof JsonTooDeep && /nested deeper than 512 levels/.test(err.message),
    );
    assert.throws(() => parseBoundedJson('{"a":'), SyntaxError);
    assert.throws(() => parseBoundedJson('"unterminated'), SyntaxError);
    assert.deepEqual(parseBoundedJson('{"a":[1,{"b":"]"}]}'), { a: [1, { b: ']' }] });
  });
});
