import assert from 'node:assert/strict';
import { test } from 'node:test';
import { seededRandom } from '../seeded-random.js';
import { verifyReplyParts } from './verify-reply.js';

/** A `/verify` request as tsgym's agent writes it, big enough to be spliced. */
function request(random: () => number): Record<string, unknown> {
  const text = (n: number): string => Array.from({ length: n }, () => 'aé"\\\n😀x'[Math.floor(random() * 7)]).join('');
  return {
    responses_create_params: { input: [{ role: 'user', content: text(20) }], tools: [] },
    expected_count: Math.floor(random() * 10),
    ...(random() < 0.5 ? { reward: 0.5, extra: [1, { deep: [null, true, -1.5e-7] }] } : {}),
    response: {
      id: 'resp_1',
      output: Array.from({ length: 1 + Math.floor(random() * 4) }, () => ({ type: 'reasoning', text: text(30_000) })),
      usage: null,
    },
  };
}

/** What the kit's verify answers: the body's members (the same objects), the verdict, extras. */
function replyTo(body: Record<string, unknown>, random: () => number): Record<string, unknown> {
  const result: Record<string, unknown> = {};
  for (const key of Object.keys(body)) if (key !== 'reward') result[key] = body[key];
  result.reward = random() < 0.5 ? 1 : 0;
  if (random() < 0.5) result.response = { ...(body.response as object), replaced: true }; // a new object: encoded
  if (random() < 0.5) result.final_count = undefined; // left out, as JSON.stringify does
  return { responses_create_params: body.responses_create_params, response: body.response, ...result };
}

const joined = (parts: Buffer[] | undefined): string | undefined => parts && Buffer.concat(parts).toString('utf8');

test("the reply is exactly JSON.stringify's, echoed members taken from the request's bytes (seeded)", () => {
  const seed = Number(process.env.TSGYM_TEST_SEED ?? Date.now() % 1_000_000);
  const random = seededRandom(seed);
  for (let i = 0; i < 50; i++) {
    const sent = request(random);
    const bytes = Buffer.from(JSON.stringify(sent));
    const parsed = JSON.parse(bytes.toString('utf8')) as Record<string, unknown>;
    const reply = replyTo(parsed, random);
    const parts = verifyReplyParts(bytes, parsed, reply);
    assert.ok(parts, `seed ${seed} (TSGYM_TEST_SEED), case ${i}: spliced`);
    assert.equal(joined(parts), JSON.stringify(reply), `seed ${seed} (TSGYM_TEST_SEED), case ${i}`);
    if (reply.response === parsed.response) {
      const response = parts.find((part) => part.length > 60_000);
      assert.ok(response && response.buffer === bytes.buffer, 'the trajectory is the request bytes, not a copy');
    }
  }
});

test("another writer's request is echoed as it was spelled: the same JSON", () => {
  const body = `{ "responses_create_params" : {"input": []},\n "response": {"output": [{"text": "${'\\u00e9'.repeat(20_000)}", "n": 1.50}]} }`;
  const parsed = JSON.parse(body) as Record<string, unknown>;
  const reply = { ...parsed, reward: 1 };
  const text = joined(verifyReplyParts(Buffer.from(body), parsed, reply))!;
  assert.ok(text.includes('"\\u00e9\\u00e9'), 'its escapes kept');
  assert.deepEqual(JSON.parse(text), reply);
});

test('encoded whole where the members are not certain, or an echoed part is not UTF-8', () => {
  const big = `"${'r'.repeat(70_000)}"`;
  for (const body of [
    `{"response":{"output":[${big}]},"re\\u0073ponse":{"output":[]}}`,
    `{"response":{"output":[${big}]},"response":{"output":[]}}`,
  ]) {
    const parsed = JSON.parse(body) as Record<string, unknown>;
    assert.equal(verifyReplyParts(Buffer.from(body), parsed, { ...parsed, reward: 1 }), undefined, body.slice(0, 40));
  }
  const invalid = Buffer.concat([
    Buffer.from(`{"response":{"output":["${'r'.repeat(70_000)}`),
    Buffer.from([0xff]),
    Buffer.from('"]}}'),
  ]);
  const parsed = JSON.parse(invalid.toString('utf8')) as Record<string, unknown>;
  assert.equal(verifyReplyParts(invalid, parsed, { ...parsed, reward: 1 }), undefined);
  const small = Buffer.from('{"response":{"output":[]}}');
  assert.equal(verifyReplyParts(small, JSON.parse(small.toString()) as Record<string, unknown>, {}), undefined);
});

test('a reply that cannot be encoded is left to the whole encoding (which answers its usual error)', () => {
  const body = `{"response":{"output":["${'r'.repeat(70_000)}"]}}`;
  const parsed = JSON.parse(body) as Record<string, unknown>;
  assert.equal(verifyReplyParts(Buffer.from(body), parsed, { ...parsed, reward: 1, count: 1n }), undefined);
});
