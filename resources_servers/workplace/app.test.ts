import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { placeholderResponse } from '../../src/contract/index.js';
import { serveEnvironment, type RunningEnvironment } from '../../src/environment/index.js';
import { request, type HttpResponse } from '../../src/http/client.js';
import { CookieJar } from '../../src/http/cookies.js';
import { workplaceEnvironment, WORKPLACE_TOOLS } from './app.js';
import type { WorkplaceRow } from './scripts/generate.js';

/**
 * The workplace environment over real HTTP on a loopback port: seed a row's office, drive the tools by hand as an
 * agent would, verify; and every way a request can be wrong answers a status and a sentence naming the field.
 */

const EXAMPLES = fileURLToPath(new URL('../../../resources_servers/workplace/data/example.jsonl', import.meta.url));
const rows = readFileSync(EXAMPLES, 'utf8')
  .split('\n')
  .filter((line) => line.trim() !== '')
  .map((line) => JSON.parse(line) as WorkplaceRow);

describe('workplace environment over HTTP', () => {
  let env: RunningEnvironment;
  before(async () => {
    env = await serveEnvironment(workplaceEnvironment, { port: 0, log: () => {} });
  });
  after(() => env.close());

  const post = (path: string, body: unknown, jar: CookieJar): Promise<HttpResponse> =>
    request(`${env.url}${path}`, { method: 'POST', json: body, jar, timeoutMs: 30_000 });
  const verifyBody = (row: WorkplaceRow, output: unknown[] = []) => ({
    ...row,
    response: { ...placeholderResponse(), output: [...output, ...placeholderResponse().output] },
  });

  /** The first example row: move a 1:1 with a named person and e-mail them the new slot. */
  const row = rows[0]!;
  const [move, tell] = row.expected_changes as [
    { kind: 'event_updated'; event_id: string; fields: { start: string; end: string } },
    { kind: 'email_sent'; recipients: string[] },
  ];

  test('the rows declare exactly the environment’s eleven tools', () => {
    assert.deepEqual(
      WORKPLACE_TOOLS.map((tool) => tool.name),
      [
        'search_emails',
        'read_email',
        'send_email',
        'list_events',
        'create_event',
        'update_event',
        'delete_event',
        'find_contacts',
        'list_tasks',
        'create_task',
        'complete_task',
      ],
    );
    for (const example of rows)
      assert.deepEqual(example.responses_create_params.tools, JSON.parse(JSON.stringify(WORKPLACE_TOOLS)));
  });

  test('seed, act through the tools, verify: reward 1, and the row keeps neither the office nor the answer key', async () => {
    const jar = new CookieJar();
    assert.equal((await post('/seed_session', row, jar)).status, 200);
    const update = await post('/update_event', { event_id: move.event_id, ...move.fields }, jar);
    assert.equal(update.status, 200, update.text());
    const date = move.fields.start.slice(0, 10);
    const time = move.fields.start.slice(11);
    const sent = await post(
      '/send_email',
      { to: tell.recipients, subject: 'New slot', body: `Moved to ${date} at ${time}.` },
      jar,
    );
    assert.equal(sent.status, 200, sent.text());

    const calls = [
      { type: 'function_call', call_id: 'a', name: 'update_event', arguments: '{}', id: 'fc_a', status: 'completed' },
      { type: 'function_call_output', call_id: 'a', output: update.text() },
      { type: 'function_call', call_id: 'b', name: 'delete_event', arguments: '{}', id: 'fc_b', status: 'completed' },
      { type: 'function_call_output', call_id: 'b', output: '{"detail":"no event with id \'x\'"}' },
    ];
    const res = await post('/verify', verifyBody(row, calls), jar);
    assert.equal(res.status, 200, res.text());
    const result = res.json() as Record<string, unknown>;
    assert.equal(result.reward, 1);
    assert.deepEqual(
      [
        result.state_checks_passed,
        result.state_checks_total,
        result.state_check_fraction,
        result.unexpected_changes,
        result.tool_calls,
        result.tool_errors,
      ],
      [2, 2, 1, 0, 2, 1],
    );
    assert.equal(result.task_id, row.task_id);
    assert.equal(result.difficulty, 2);
    assert.equal('office' in result, false);
    assert.equal('expected_changes' in result, false);

    // The session is finished: a second verify has nothing to judge.
    const again = await post('/verify', verifyBody(row), jar);
    assert.equal(again.status, 409);
    assert.match(again.text(), /no state|no office/);
  });

  test('sessions are isolated: one rollout’s changes are not another’s', async () => {
    const a = new CookieJar();
    const b = new CookieJar();
    await post('/seed_session', row, a);
    await post('/seed_session', row, b);
    await post('/update_event', { event_id: move.event_id, ...move.fields }, a);
    const seenByB = (await post('/list_events', {}, b)).json() as { events: Array<{ id: string; start: string }> };
    const original = row.office.events.find((event) => event.id === move.event_id)!;
    assert.equal(seenByB.events.find((event) => event.id === move.event_id)!.start, original.start);
    const verdictB = (await post('/verify', verifyBody(row), b)).json() as Record<string, unknown>;
    assert.deepEqual([verdictB.reward, verdictB.state_checks_passed], [0, 0]);
    const verdictA = (await post('/verify', verifyBody(row), a)).json() as Record<string, unknown>;
    assert.deepEqual([verdictA.reward, verdictA.state_checks_passed], [0, 1]);
  });

  test('a fixable mistake answers 400 with the reason and changes nothing', async () => {
    const jar = new CookieJar();
    await post('/seed_session', row, jar);
    const res = await post('/delete_event', { event_id: 'ev_99' }, jar);
    assert.equal(res.status, 400);
    assert.deepEqual(res.json(), { detail: "no event with id 'ev_99': use an id from list_events" });
    const bad = await post('/create_event', { title: 'x', start: '2026-02-30T10:00', end: '2026-02-30T11:00' }, jar);
    assert.equal(bad.status, 400);
    assert.match(bad.text(), /start '2026-02-30T10:00' is not a date-time/);
    const verdict = (await post('/verify', verifyBody(row), jar)).json() as Record<string, unknown>;
    assert.equal(verdict.unexpected_changes, 0);
  });

  test('arguments that do not fit a tool’s schema answer 422 naming the field', async () => {
    const jar = new CookieJar();
    await post('/seed_session', row, jar);
    const res = await post('/update_event', { start: '2026-03-13T14:00' }, jar);
    assert.equal(res.status, 422);
    assert.match(res.text(), /event_id/);
    const limit = await post('/search_emails', { limit: 500 }, jar);
    assert.equal(limit.status, 422);
    assert.match(limit.text(), /limit/);
  });

  test('a row whose office is malformed is refused at seed with the field named', async () => {
    const broken = structuredClone(row) as unknown as { office: { events: Array<Record<string, unknown>> } };
    broken.office.events[0]!.start = 'next Friday';
    const res = await post('/seed_session', broken, new CookieJar());
    assert.equal(res.status, 422);
    assert.match(res.text(), /office\.events\.0\.start/);
    const missing = await post(
      '/seed_session',
      { responses_create_params: row.responses_create_params },
      new CookieJar(),
    );
    assert.equal(missing.status, 422);
    assert.match(missing.text(), /office/);
  });

  test('tools and verify on a session that was never seeded answer 409, not a reward', async () => {
    const jar = new CookieJar();
    const tool = await post('/list_tasks', {}, jar);
    assert.equal(tool.status, 409);
    assert.match(tool.text(), /never seeded/);
    const verify = await post('/verify', verifyBody(row), jar);
    assert.equal(verify.status, 409);
    assert.match(verify.text(), /no office/);
  });

  test('malformed expected_changes answer 422 naming the entry', async () => {
    const jar = new CookieJar();
    await post('/seed_session', row, jar);
    const res = await post('/verify', { ...verifyBody(row), expected_changes: [{ kind: 'event_moved' }] }, jar);
    assert.equal(res.status, 422);
    assert.match(res.text(), /expected_changes\.0\.kind/);
  });
});
