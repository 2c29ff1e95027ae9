import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CookieJar, parseCookieHeader, parseSetCookie, serializeSetCookie, SessionSigner } from './cookies.js';

describe('cookie jar', () => {
  it('merges: a later value for a name wins and other cookies stay', () => {
    const jar = new CookieJar();
    jar.absorb(['a=1; Path=/', 'b=2; HttpOnly']);
    jar.absorb(['b=3']);
    assert.deepEqual(jar.toJSON(), { a: '1', b: '3' });
    assert.equal(jar.header(), 'a=1; b=3');
  });

  it('keeps the jar as it was when a response sets no cookie', () => {
    const jar = new CookieJar();
    jar.absorb('s=abc');
    jar.absorb([]);
    jar.absorb(undefined);
    assert.deepEqual(jar.toJSON(), { s: 'abc' });
  });

  it('deletes a cookie on Max-Age=0', () => {
    const jar = new CookieJar();
    jar.absorb(['s=abc', 't=keep']);
    jar.absorb('s=; Max-Age=0; Path=/');
    assert.deepEqual(jar.toJSON(), { t: 'keep' });
  });

  it('deletes a cookie on an Expires in the past, keeps one expiring in the future', () => {
    const now = Date.parse('2030-01-01T00:00:00Z');
    const jar = new CookieJar();
    jar.absorb(['s=abc', 'u=1'], now);
    jar.absorb(['s=gone; Expires=Thu, 01 Jan 1970 00:00:00 GMT', 'u=2; Expires=Fri, 01 Jan 2100 00:00:00 GMT'], now);
    assert.deepEqual(jar.toJSON(), { u: '2' });
  });

  it('has no Cookie header when empty', () => {
    assert.equal(new CookieJar().header(), undefined);
  });

  it('ignores malformed Set-Cookie lines', () => {
    assert.equal(parseSetCookie('no-equals-sign'), undefined);
    assert.equal(parseSetCookie('=value'), undefined);
  });

  it('parses a Cookie header, first occurrence winning', () => {
    assert.deepEqual(parseCookieHeader('a=1; b=2; a=3'), { a: '1', b: '2' });
    assert.deepEqual(parseCookieHeader(undefined), {});
  });

  it('serialises a session cookie with path, max-age, httponly and samesite', () => {
    assert.equal(
      serializeSetCookie('n', 'v', { maxAgeSeconds: 1_209_600 }),
      'n=v; Path=/; Max-Age=1209600; HttpOnly; SameSite=lax',
    );
  });
});

describe('session signer', () => {
  const signer = new SessionSigner('secret-one');

  it('round-trips a signed id', () => {
    assert.equal(signer.verify(signer.sign('session-123')), 'session-123');
  });

  it('rejects a forged value: another id carrying a valid signature', () => {
    const signed = signer.sign('session-123');
    const mac = signed.slice(signed.lastIndexOf('.') + 1);
    assert.equal(signer.verify(`session-456.${mac}`), undefined);
  });

  it('rejects a value signed with another secret', () => {
    assert.equal(signer.verify(new SessionSigner('secret-two').sign('session-123')), undefined);
  });

  it('rejects unsigned, empty and truncated values', () => {
    assert.equal(signer.verify('session-123'), undefined);
    assert.equal(signer.verify(''), undefined);
    assert.equal(signer.verify(undefined), undefined);
    const signed = signer.sign('session-123');
    assert.equal(signer.verify(signed.slice(0, -2)), undefined);
  });
});
