import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ConfigError } from '../errors.js';
import { formatOverrideString, parseOverrideValue } from './override-grammar.js';
import { parseOverrides } from './overrides.js';

function value(text: string): unknown {
  return parseOverrides([`+v=${text}`]).v;
}

function rejects(tokens: string[], pattern: RegExp): void {
  assert.throws(
    () => parseOverrides(tokens),
    (err: unknown) => {
      assert.ok(err instanceof ConfigError, `expected ConfigError, got ${String(err)}`);
      assert.match(err.message, pattern);
      return true;
    },
  );
}

describe('override values', () => {
  test('null and booleans in any case', () => {
    assert.equal(value('null'), null);
    assert.equal(value('NULL'), null);
    assert.equal(value('true'), true);
    assert.equal(value('TrUe'), true);
    assert.equal(value('False'), false);
  });

  test('ints and floats, including exponents, inf and nan', () => {
    assert.equal(value('42'), 42);
    assert.equal(value('-7'), -7);
    assert.equal(value('1_000'), 1000);
    assert.equal(value('0.5'), 0.5);
    assert.equal(value('1e-3'), 0.001);
    assert.equal(value('.5'), 0.5);
    assert.equal(value('inf'), Infinity);
    assert.equal(value('-inf'), -Infinity);
    assert.ok(Number.isNaN(value('nan')));
  });

  test('unquoted strings keep allowed punctuation and inner spaces, trim outer whitespace', () => {
    assert.equal(value('results/rollouts.jsonl'), 'results/rollouts.jsonl');
    assert.equal(value('http://localhost:9000/v1'), 'http://localhost:9000/v1');
    assert.equal(value('a-b+c.d$e%f*g@h?i|j'), 'a-b+c.d$e%f*g@h?i|j');
    assert.equal(value('  hello world  '), 'hello world');
    assert.equal(value('007'), '007');
    assert.equal(value('1.2.3'), '1.2.3');
    assert.equal(value('a\\,b'), 'a,b');
  });

  test('an empty value is the empty string', () => {
    assert.equal(value(''), '');
  });

  test('quoted strings stay strings, with escaped quotes', () => {
    assert.equal(value("'true'"), 'true');
    assert.equal(value('"1,2"'), '1,2');
    assert.equal(value("'it\\'s'"), "it's");
    assert.equal(value("'C:\\path'"), 'C:\\path');
    assert.equal(value('"a=b"'), 'a=b');
  });

  test('lists, dicts, and nesting', () => {
    assert.deepEqual(value('[a.yaml,b.yaml]'), ['a.yaml', 'b.yaml']);
    assert.deepEqual(value('[]'), []);
    assert.deepEqual(value('[1, 2.5, true, null, x]'), [1, 2.5, true, null, 'x']);
    assert.deepEqual(value('{a: 4, _default: 1}'), { a: 4, _default: 1 });
    assert.deepEqual(value('{url: http://h:9/v1, xs: [1, {k: v}]}'), { url: 'http://h:9/v1', xs: [1, { k: 'v' }] });
    assert.deepEqual(value('[\'a,b\', "c"]'), ['a,b', 'c']);
  });

  test('interpolations are kept verbatim, braces and commas included', () => {
    assert.equal(value('${policy_base_url}'), '${policy_base_url}');
    assert.equal(value('${oc.env:HOME,/tmp}'), '${oc.env:HOME,/tmp}');
    assert.equal(value('http://${host}:${port}/v1'), 'http://${host}:${port}/v1');
    assert.deepEqual(value('[${a.b}, c]'), ['${a.b}', 'c']);
  });
});

describe('override tokens', () => {
  test('+ adds nested keys from dotted paths', () => {
    assert.deepEqual(parseOverrides(['+a.b.c=1', '+a.b.d=x']), { a: { b: { c: 1, d: 'x' } } });
  });

  test('++ adds or replaces', () => {
    assert.deepEqual(parseOverrides(['+a=1', '++a=2']), { a: 2 });
    assert.deepEqual(parseOverrides(['++head_server.port=11001']), { head_server: { port: 11001 } });
  });

  test('~ deletes a key set earlier', () => {
    assert.deepEqual(parseOverrides(['+a.b=1', '+a.c=2', '~a.b']), { a: { c: 2 } });
    rejects(['~nothing'], /Could not delete from config\. 'nothing' does not exist/);
  });

  test('a plain key=value is rejected with the Hydra advice', () => {
    rejects(['a=v'], /Could not override 'a'\. To append to your config use \+a=v/);
    rejects(['a=v'], /'a=v'/);
  });

  test('a second + on a scalar is rejected; on a dict or list it merges', () => {
    rejects(['+a=1', '+a=2'], /Could not append to config\. An item is already at 'a'\./);
    assert.deepEqual(parseOverrides(['+d={x: 1}', '+d={y: 2}']), { d: { x: 1, y: 2 } });
    assert.deepEqual(parseOverrides(['+l=[1]', '+l=[2,3]']), { l: [2, 3] });
  });

  test('a bare comma list is a sweep and is rejected with advice', () => {
    rejects(['+a=1,2'], /\+a=1,2.*sweep.*a=\[1,2\].*a='1,2'/);
  });

  test('syntax errors name the token', () => {
    rejects(['+a=[1,2'], /'\+a=\[1,2'.*unclosed '\['/);
    rejects(['+a=x(y)'], /'\+a=x\(y\)'.*'\(' is not allowed/);
    rejects(["+a='open"], /unclosed ' quote/);
    rejects(['+a'], /no '='/);
    rejects(['+=1'], /key is empty/);
    rejects(['+a..b=1'], /not a valid key/);
    rejects(['+a=b=c'], /'=' is not allowed/);
  });
});

describe('formatOverrideString', () => {
  test('round-trips through the value parser, quoting only when needed', () => {
    for (const text of [
      'plain/path.yaml',
      'a,b',
      "it's",
      'true',
      '12',
      'x=y',
      'back\\',
      "q\\'",
      '[x]',
      'has space',
      '',
    ]) {
      assert.equal(parseOverrideValue(formatOverrideString(text)), text, `round trip of ${JSON.stringify(text)}`);
    }
    assert.equal(formatOverrideString('plain/path.yaml'), 'plain/path.yaml');
    assert.equal(formatOverrideString('a,b'), "'a,b'");
  });
});
