import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { seededRandom } from '../seeded-random.js';
import { MAX_ENVELOPED_JSON_DEPTH, parseBoundedJson } from './index.js';
import { finiteNumberMember } from './member.js';

/** What the agent's full parse concludes: the member when the text parses to an object with a finite number there. */
function byParsing(bytes: Buffer, limit: number): number | undefined {
  let parsed: unknown;
  try {
    parsed = parseBoundedJson(bytes.toString('utf8'), limit);
  } catch {
    return undefined;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return undefined;
  const reward = (parsed as Record<string, unknown>).reward;
  return typeof reward === 'number' && Number.isFinite(reward) ? reward : undefined;
}

const scan = (text: string | Buffer, limit = MAX_ENVELOPED_JSON_DEPTH): number | undefined =>
  finiteNumberMember(typeof text === 'string' ? Buffer.from(text) : text, 'reward', limit);

/** Random JSON with the member somewhere, spaced and escaped in every legal way. */
function generator(random: () => number) {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
  const space = (): string => (random() < 0.7 ? '' : pick([' ', '\n', '\t', '\r', '  \n ']));
  const numbers = ['0', '-0', '1', '0.5', '-12.25e3', '1E-7', '3e+2', '1e400', '123456789012345678901234567890', '-1'];
  const strings = ['""', '"a"', '"\\"\\\\\\/\\b\\f\\n\\r\\t"', '"\\u00e9\\uD83D\\uDE00"', '"é€😀"', '"reward"', '"}]"'];
  const value = (depth: number): string => {
    const r = random();
    if (depth > 4 || r < 0.35) return pick([...numbers, ...strings, 'true', 'false', 'null']);
    if (r < 0.65) {
      const n = Math.floor(random() * 4);
      return `[${space()}${Array.from({ length: n }, () => value(depth + 1)).join(`${space()},${space()}`)}${space()}]`;
    }
    return object(depth + 1, false);
  };
  const object = (depth: number, top: boolean): string => {
    const keys = ['"a"', '"reward"', '"response"', '"re\\u0077ard"', '"rewards"', '""'];
    const members = Array.from({ length: Math.floor(random() * 5) + (top ? 1 : 0) }, () => {
      const key = top && random() < 0.4 ? '"reward"' : pick(keys);
      const v = key === '"reward"' && random() < 0.7 ? pick(numbers) : value(depth);
      return `${space()}${key}${space()}:${space()}${v}${space()}`;
    });
    return `{${members.join(',')}}`;
  };
  return { top: () => `${space()}${object(1, true)}${space()}` };
}

/** Single-byte damage of the kinds that matter to a JSON scanner. */
const DAMAGE = [...'"\\{}[],:0123456789-+.eEtfnrul x']
  .map((c) => c.charCodeAt(0))
  .concat([0x00, 0x1f, 0x7f, 0x80, 0xc0, 0xef, 0xff]);

function damaged(text: string, random: () => number): Buffer {
  const bytes = [...Buffer.from(text)];
  const at = Math.floor(random() * (bytes.length + 1));
  const byte = DAMAGE[Math.floor(random() * DAMAGE.length)]!;
  const r = random();
  if (r < 0.33) bytes.splice(at, 1);
  else if (r < 0.66) bytes.splice(at, 0, byte);
  else bytes[Math.min(at, bytes.length - 1)] = byte;
  return Buffer.from(bytes);
}

/** A member name with an escape in it (the backslash and the character it escapes), anywhere in the text. */
const KEY_WITH_ESCAPES = /"(?:[^"\\]|\\.)*\\.(?:[^"\\]|\\.)*"\s*:/;

describe('finiteNumberMember: the reward of a /verify answer read from its bytes', () => {
  it('reads the member of ordinary objects, the last of repeated ones, at any spacing', () => {
    assert.equal(scan('{"reward":1}'), 1);
    assert.equal(scan(' \n{ "a" : [1, {"reward": 2}], "reward" : -0.5e1 }\t'), -5);
    assert.equal(scan('{"reward":1,"reward":0.25}'), 0.25);
    assert.ok(Object.is(scan('{"reward":-0}'), -0));
    assert.equal(scan(`{"response":{"output":["${'r'.repeat(300_000)}"]},"reward":1}`), 1);
  });

  it('answers undefined whenever it cannot be sure, so the caller parses', () => {
    for (const text of [
      '',
      '[1]',
      '{"reward":"1"}',
      '{"reward":null}',
      '{"reward":1e400}',
      '{"reward":1,"reward":true}',
      '{"re\\u0077ard":1}',
      '{"reward":1,"x":"\\u00e9","re\\u0077ard":2}',
      '{"reward":01}',
      '{"reward":1.}',
      '{"reward":1}x',
      '{"reward":1,}',
      '{"a":"\u0001","reward":1}',
      '{"a":"\\x","reward":1}',
      '\ufeff{"reward":1}',
      '{"a":tru,"reward":1}',
      '{"reward":1',
    ])
      assert.equal(scan(text), undefined, text);
  });

  it('bounds nesting as parseBoundedJson does: at the limit it reads, one level more it does not', () => {
    const nested = (depth: number): string => `{"a":${'['.repeat(depth - 1)}${']'.repeat(depth - 1)},"reward":1}`;
    assert.equal(scan(nested(10), 10), 1);
    assert.equal(scan(nested(11), 10), undefined);
    assert.equal(byParsing(Buffer.from(nested(11)), 10), undefined);
  });

  it('never disagrees with the full parse, and is never unsure of an answer the parse finds (seeded fuzz)', () => {
    const seed = Number(process.env.TSGYM_TEST_SEED ?? Date.now() % 1_000_000);
    const random = seededRandom(seed);
    const { top } = generator(random);
    let read = 0;
    for (let i = 0; i < 20_000; i++) {
      const text = top();
      const bytes = i % 2 === 0 ? Buffer.from(text) : damaged(text, random);
      const expected = byParsing(bytes, 6);
      const got = finiteNumberMember(bytes, 'reward', 6);
      const context = `seed ${seed} (TSGYM_TEST_SEED), case ${i}: ${JSON.stringify(bytes.toString('latin1'))}`;
      if (got !== undefined) {
        assert.ok(Object.is(got, expected), `${context}: scanned ${got}, parsed ${expected}`);
        read++;
      } else if (expected !== undefined && !KEY_WITH_ESCAPES.test(bytes.toString('latin1'))) {
        // Unsure is allowed only where a key is written with escapes (a top-level one might spell the name).
        assert.fail(`${context}: unsure, but the parse found ${expected}`);
      }
    }
    assert.ok(read > 2_000, `only ${read} answers read by the scan`);
  });
});
