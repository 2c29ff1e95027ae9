/**
 * Credentials and TLS on the service hop (decision D21): `agent_api_key_env`, `agent_headers` and
 * `agent_ca_file`, through a real agent, a real scripted service (plain and https with a CA made by openssl here)
 * and the recording environment. The secret values never show up in a row, whatever the service echoes.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import {
  finalAnswer,
  functionCall,
  makeTestCa,
  toolAsk,
  reply,
  startScriptedService,
  type ServiceCall,
} from '../../src/testing/index.js';
import { basicRow, startHarness } from '../../test/support/remote-agent.js';

const TOKEN = `tok-${process.pid}-s3cr3t-value`;
const KEY_ENV = 'TSGYM_AUTH_TEST_TOKEN';
const WRONG_ENV = 'TSGYM_AUTH_TEST_WRONG_TOKEN';
const WRONG = `wrong-${process.pid}-token-value`;
process.env[KEY_ENV] = TOKEN;
process.env[WRONG_ENV] = WRONG;

const dir = mkdtempSync(path.join(os.tmpdir(), 'tsgym-auth-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** A service that wants `Bearer TOKEN`; otherwise 401 echoing what it got (as careless services do). */
function guarded(then: (call: ServiceCall) => unknown = () => finalAnswer('done')) {
  return (call: ServiceCall) => {
    const got = call.headers.authorization;
    if (got !== `Bearer ${TOKEN}`)
      return reply.status(401, `unauthorized: you sent ${got ?? 'no Authorization header'}`);
    return then(call);
  };
}

describe('agent_api_key_env', () => {
  test('without a credential a 401 fails the rollout, and the row says 401 and names agent_api_key_env', async () => {
    const h = await startHarness({ service: guarded() });
    try {
      const row = await h.run(basicRow());
      assert.equal(row.reward, 0);
      assert.match(row.error!, /HTTP 401/);
      assert.match(row.error!, /agent_api_key_env/);
      assert.equal(h.service.calls[0]!.headers.authorization, undefined, 'no credential by default');
    } finally {
      await h.close();
    }
  });

  test('with the right token the rollout succeeds: Authorization: Bearer <value> on every call', async () => {
    const h = await startHarness({
      service: guarded(),
      config: { agent_api_key_env: KEY_ENV },
    });
    try {
      const row = await h.run(basicRow());
      assert.equal(row.error, undefined, row.error);
      assert.equal(row.reward, 1);
      assert.equal(h.service.calls[0]!.headers.authorization, `Bearer ${TOKEN}`);
    } finally {
      await h.close();
    }
  });

  test('a wrong token: the row says the credential from agent_api_key_env was refused, and never holds its value', async () => {
    const h = await startHarness({ service: guarded(), config: { agent_api_key_env: WRONG_ENV } });
    try {
      const row = await h.run(basicRow());
      assert.match(
        row.error!,
        /HTTP 401 \(the service refused the credential sent from agent_api_key_env \(TSGYM_AUTH_TEST_WRONG_TOKEN\)/,
      );
      assert.match(row.error!, /you sent Bearer \*\*\*\*/, 'the echoed token is masked');
      assert.ok(!JSON.stringify(row).includes(WRONG));
      assert.ok(!h.logs.join('\n').includes(WRONG));
    } finally {
      await h.close();
    }
  });

  test("the service's cookies round-trip beside the token, which is never a cookie", async () => {
    const h = await startHarness({
      service: [
        guarded(() =>
          reply.json(toolAsk(functionCall('get_counter_value', {}, 'c1')), { setCookies: ['svc_session=abc; Path=/'] }),
        ),
        guarded(() => finalAnswer('3')),
      ],
      config: { agent_api_key_env: KEY_ENV },
    });
    try {
      const row = await h.run(basicRow());
      assert.equal(row.reward, 1, row.error);
      const second = h.service.calls[1]!;
      assert.equal(second.headers.authorization, `Bearer ${TOKEN}`);
      assert.deepEqual(second.cookies, { svc_session: 'abc' });
      assert.ok(!String(second.headers.cookie).includes(TOKEN));
      // The environment never sees the service's credential.
      for (const request of h.env.requests) assert.ok(!JSON.stringify(request).includes(TOKEN));
    } finally {
      await h.close();
    }
  });

  test('a redirect is not followed: the token never reaches the Location', async () => {
    const elsewhere = await startScriptedService(() => finalAnswer('should never be called'));
    const h = await startHarness({
      service: () => reply.status(307, '', { headers: { location: `${elsewhere.url}/v1/responses` } }),
      config: { agent_api_key_env: KEY_ENV },
    });
    try {
      const row = await h.run(basicRow());
      assert.match(row.error!, /HTTP 307 \(redirect to .*; fix agent_base_url/);
      assert.equal(elsewhere.calls.length, 0);
    } finally {
      await h.close();
      await elsewhere.close();
    }
  });
});

describe('agent_headers', () => {
  test('custom headers are sent as configured; an echoed value is masked in the row', async () => {
    const h = await startHarness({
      service: (call) =>
        call.headers['x-api-key'] === TOKEN
          ? reply.status(
              403,
              `key ${String(call.headers['x-api-key'])} may not run tenant ${String(call.headers['x-tenant'])}`,
            )
          : finalAnswer('no'),
      config: { agent_headers: { 'X-Api-Key': TOKEN, 'X-Tenant': 'acme' } },
    });
    try {
      const row = await h.run(basicRow());
      const call = h.service.calls[0]!;
      assert.equal(call.headers['x-api-key'], TOKEN);
      assert.equal(call.headers['x-tenant'], 'acme');
      assert.equal(call.headers.authorization, undefined);
      assert.match(row.error!, /HTTP 403 \(the service accepted no access with the credential sent from agent_headers/);
      assert.match(row.error!, /key \*\*\*\* may not run tenant \*\*\*\*/);
      assert.ok(!JSON.stringify(row).includes(TOKEN));
    } finally {
      await h.close();
    }
  });
});

describe('agent_ca_file (https with a private CA)', () => {
  const ca = makeTestCa(dir, 'trusted');
  const stranger = makeTestCa(dir, 'stranger');

  test('trusting the CA that signed the service certificate: the rollout succeeds over https, token included', async () => {
    const service = await startScriptedService(guarded(), { tls: { key: ca.key, cert: ca.cert } });
    const h = await startHarness({ service, config: { agent_api_key_env: KEY_ENV, agent_ca_file: ca.caFile } });
    try {
      assert.match(service.url, /^https:/);
      const row = await h.run(basicRow());
      assert.equal(row.error, undefined, row.error);
      assert.equal(row.reward, 1);
    } finally {
      await h.close();
    }
  });

  test('without agent_ca_file (or with another CA) the certificate is refused, naming agent_ca_file; never retried', async () => {
    for (const caFile of [undefined, stranger.caFile]) {
      const service = await startScriptedService(guarded(), { tls: { key: ca.key, cert: ca.cert } });
      const h = await startHarness({
        service,
        config: { agent_api_key_env: KEY_ENV, ...(caFile ? { agent_ca_file: caFile } : {}) },
      });
      try {
        const row = await h.run(basicRow());
        assert.equal(row.reward, 0);
        assert.match(row.error!, /TLS with the remote service failed/);
        assert.match(row.error!, caFile ? /agent_ca_file \(.*stranger-ca\.pem\) is trusted/ : /set agent_ca_file/);
        assert.equal(service.calls.length, 0, 'no request got through');
      } finally {
        await h.close();
      }
    }
  });
});
