/**
 * The files of `gym new environment NAME`: a small stockroom environment (each rollout gets a shelf seeded from its
 * row; the agent takes items off it and reports what is left; verify checks the final shelf and the answer), its
 * config with a remote agent, a scripted solver that solves the example rows (environment-rows.ts), a test, and a
 * README. Small enough to read in a minute, real enough to show every hook a user edits: seed, state, tools,
 * ToolError, verify with extras.
 */
import { serviceMainBlock } from './service-main.js';

export function environmentApp(name: string): string {
  return `// The ${name} environment: each rollout gets its own shelf, seeded from the row's \`stock\`; the agent takes items off it
// (take_item) and looks them up (check_stock), then answers; verify scores 1.0 when the final shelf equals the row's
// expected_stock AND the last number in the agent's final message is expected_answer.
// gym env start / gym eval run run this file through tsx (configs/${name}.yaml), so there is no build step.
import { defineEnvironment, isMainModule, runEnvironment, ToolError, z, type ResponseObject } from 'tsgym/environment';

const Stock = z.record(z.string(), z.int().nonnegative());

export const environment = defineEnvironment({
  name: '${name}',
  // /seed_session receives the whole row; these are the fields the session's state is built from.
  seedRow: z.looseObject({ stock: Stock }),
  createState: (row) => ({ stock: { ...row.stock } }),
  tools: (tool) => ({
    check_stock: tool({
      description: 'Look up how many of an item are on the shelf. Returns {item, quantity}.',
      input: z.object({ item: z.string().describe('the item name, e.g. apple') }),
      run: ({ item }, { state }) => ({ item, quantity: state.stock[item] ?? 0 }),
    }),
    take_item: tool({
      description: 'Take some of an item off the shelf. Returns {item, taken, remaining}; fails when fewer are in stock.',
      input: z.object({
        item: z.string().describe('the item name, e.g. apple'),
        quantity: z.int().min(1).describe('how many to take'),
      }),
      run: ({ item, quantity }, { state }) => {
        const onShelf = state.stock[item] ?? 0;
        // A ToolError is answered 400 with this text, which the agent reads as the tool's result.
        if (onShelf < quantity) throw new ToolError('only ' + onShelf + ' ' + item + ' on the shelf, cannot take ' + quantity);
        state.stock[item] = onShelf - quantity;
        return { item, taken: quantity, remaining: onShelf - quantity };
      },
    }),
  }),
  // The answer key: validated at /verify (a missing field answers 422 naming it).
  verifyRow: z.looseObject({ expected_stock: Stock, expected_answer: z.int() }),
  verify: ({ row, response, state }) => {
    const stockCorrect = state !== undefined && sameStock(state.stock, row.expected_stock);
    const answerCorrect = lastNumber(finalMessage(response)) === row.expected_answer;
    // reward, plus extras: numbers and booleans become columns of gym eval profile.
    return { reward: stockCorrect && answerCorrect ? 1 : 0, stock_correct: stockCorrect, answer_correct: answerCorrect };
  },
  // The answer key stays out of the verify response, hence out of the rollout rows and the metrics.
  dropFields: ['expected_stock', 'expected_answer'],
});

function sameStock(actual: Record<string, number>, expected: Record<string, number>): boolean {
  const items = new Set([...Object.keys(actual), ...Object.keys(expected)]);
  return [...items].every((item) => (actual[item] ?? 0) === (expected[item] ?? 0));
}

/** The text of the agent's last assistant message ('' when it sent none). */
function finalMessage(response: ResponseObject): string {
  const output: unknown[] = response.output;
  for (let i = output.length - 1; i >= 0; i--) {
    const item = output[i] as { type?: unknown; role?: unknown; content?: unknown };
    if (item.type !== 'message' || item.role !== 'assistant') continue;
    if (typeof item.content === 'string') return item.content;
    if (!Array.isArray(item.content)) return '';
    return item.content.map((part: { text?: unknown }) => (typeof part?.text === 'string' ? part.text : '')).join(' ');
  }
  return '';
}

function lastNumber(text: string): number | undefined {
  const numbers = text.match(/-?\\d+/g);
  return numbers ? Number(numbers[numbers.length - 1]) : undefined;
}

if (isMainModule(import.meta.url)) void runEnvironment(environment);
`;
}

export function environmentSolver(name: string): string {
  return `// A scripted agent service for the ${name} environment, so gym eval run collects at mean reward 1.0 before you bring
// your own agent: no model, it reads the task, asks for take_item for each "take N item", then check_stock, then
// answers. Replace solve with your agent (call a model, run a planner); tsgym/service speaks the HTTP contract.
//   node --import tsx resources_servers/${name}/solver.ts [--port 9000]
import { realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { serve, toolHistory, userMessages, type Decide } from 'tsgym/service';

export const solve: Decide = (conversation) => {
  const task = userMessages(conversation).join('\\n');
  const asked = toolHistory(conversation); // your earlier tool calls, each with Gym's result
  const takes = [...task.matchAll(/take (\\d+) (\\w+)/gi)].map((match) => ({ item: match[2]!, quantity: Number(match[1]) }));
  if (takes.length > 0 && !asked.some((call) => call.name === 'take_item')) {
    return { toolCalls: takes.map((args) => ({ name: 'take_item', arguments: args })) };
  }
  const item = /how many (\\w+)/i.exec(task)?.[1];
  if (item === undefined) return { final: 'I cannot tell which item to count.' };
  const lookup = asked.find((call) => call.name === 'check_stock');
  if (!lookup) return { toolCalls: [{ name: 'check_stock', arguments: { item } }] };
  const { quantity } = JSON.parse(lookup.output ?? '{}') as { quantity?: number };
  return { final: 'There are ' + quantity + ' ' + item + ' left.' };
};

${serviceMainBlock(`${name} solver`, `${name}-scripted-solver`)}`;
}

export function environmentTest(name: string): string {
  return `// The ${name} environment over real HTTP, driven the way Gym's agent drives it: seed a session with a row, call the
// tools with the session's cookie, verify a final answer.
//   node --import tsx --test resources_servers/${name}/app.test.ts
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { serveEnvironment, type RunningEnvironment } from 'tsgym/environment';
import { finalAnswer } from 'tsgym/testing';
import { environment } from './app.js';

const ROW = {
  responses_create_params: { input: 'Take 3 apple, then tell me how many apple are left.', tools: environment.toolSchemas },
  stock: { apple: 5, pear: 2 },
  expected_stock: { apple: 2, pear: 2 },
  expected_answer: 2,
};

let server: RunningEnvironment;
before(async () => {
  server = await serveEnvironment(environment);
});
after(() => server.close());

/** One rollout's client: it sends back the session cookie the environment set, as Gym's agent does. */
function rollout() {
  let cookie: string | undefined;
  return async (path: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> => {
    const res = await fetch(server.url + path, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(cookie ? { cookie } : {}) },
      body: JSON.stringify(body),
    });
    cookie = res.headers.getSetCookie()[0]?.split(';')[0] ?? cookie;
    return { status: res.status, json: (await res.json()) as Record<string, unknown> };
  };
}

test('seed, take, look up, answer: reward 1.0', async () => {
  const call = rollout();
  assert.equal((await call('/seed_session', ROW)).status, 200);
  assert.deepEqual((await call('/take_item', { item: 'apple', quantity: 3 })).json, { item: 'apple', taken: 3, remaining: 2 });
  assert.deepEqual((await call('/check_stock', { item: 'apple' })).json, { item: 'apple', quantity: 2 });
  const verified = await call('/verify', { ...ROW, response: finalAnswer('There are 2 apple left.') });
  assert.equal(verified.json.reward, 1);
  assert.equal(verified.json.stock_correct, true);
  assert.equal(verified.json.answer_correct, true);
});

test('a wrong answer, or a right answer on a wrong shelf, scores 0.0', async () => {
  const wrongAnswer = rollout();
  await wrongAnswer('/seed_session', ROW);
  await wrongAnswer('/take_item', { item: 'apple', quantity: 3 });
  const answered = await wrongAnswer('/verify', { ...ROW, response: finalAnswer('There are 5 apple left.') });
  assert.equal(answered.json.reward, 0);
  assert.equal(answered.json.answer_correct, false);

  const untouched = rollout();
  await untouched('/seed_session', ROW);
  const guessed = await untouched('/verify', { ...ROW, response: finalAnswer('There are 2 apple left.') });
  assert.equal(guessed.json.reward, 0);
  assert.equal(guessed.json.stock_correct, false);
});

test('taking more than the shelf holds fails with a message for the agent', async () => {
  const call = rollout();
  await call('/seed_session', ROW);
  const res = await call('/take_item', { item: 'apple', quantity: 9 });
  assert.equal(res.status, 400);
  assert.match(String(res.json.detail), /only 5 apple/);
});

test("every example row offers exactly the environment's tools", () => {
  const lines = readFileSync(new URL('./data/example.jsonl', import.meta.url), 'utf8').split('\\n');
  for (const line of lines.filter((text) => text.trim() !== '')) {
    const row = JSON.parse(line) as { responses_create_params: { tools?: unknown } };
    assert.deepEqual(
      row.responses_create_params.tools,
      environment.toolSchemas,
      'a row of data/example.jsonl declares other tools than app.ts; its "tools" should be: ' + JSON.stringify(environment.toolSchemas),
    );
  }
});
`;
}

export function environmentConfig(name: string): string {
  return `# The ${name} environment (app.ts, run through tsx) and ${name}_agent, the remote agent that drives your agent service
# through it. agent_base_url is where the scripted solver listens by default:
#   node --import tsx resources_servers/${name}/solver.ts
#   npx gym eval run "+config_paths=[resources_servers/${name}/configs/${name}.yaml]" +agent_name=${name}_agent \\
#     +input_jsonl_fpath=resources_servers/${name}/data/example.jsonl +output_jsonl_fpath=results/${name}.jsonl
${name}_resources_server:
  resources_servers:
    ${name}:
      entrypoint: app.ts
      domain: agent
      verified: false
      description: Take items off a seeded shelf and report what is left (state and answer verified)

${name}_agent:
  responses_api_agents:
    remote_agent:
      entrypoint: app.py
      # Your agent service's address (solver.ts listens here by default).
      agent_base_url: http://127.0.0.1:9000
      resources_server:
        type: resources_servers
        name: ${name}_resources_server   # the top-level key above
      concurrency: 4
      max_steps: 8
`;
}

export function environmentReadme(name: string): string {
  return `# ${name}

A tsgym environment written with \`tsgym/environment\`. As generated it is a small stockroom: each rollout gets a shelf
seeded from its row, the agent takes items off it and reports what is left, and \`/verify\` scores 1.0 when both the
final shelf and the answer are right.

| file | what it is |
|---|---|
| \`app.ts\` | the environment: seed → state, the tools, verify (reward plus the extras \`stock_correct\`, \`answer_correct\`) |
| \`configs/${name}.yaml\` | the environment and \`${name}_agent\`, the remote agent that calls your agent service |
| \`data/example.jsonl\` | three tasks: the prompt and tools (\`responses_create_params\`), \`stock\`, \`expected_stock\`, \`expected_answer\` |
| \`solver.ts\` | a scripted agent service (no model) that solves every example row |
| \`app.test.ts\` | the environment over real HTTP: seed → tools → verify |
| \`package.json\` | marks this folder's \`.ts\` files as ES modules |

Run it, from the project root:

\`\`\`bash
node --import tsx resources_servers/${name}/solver.ts        # terminal 1: the agent service on :9000
npx gym eval run "+config_paths=[resources_servers/${name}/configs/${name}.yaml]" +agent_name=${name}_agent \\
  +input_jsonl_fpath=resources_servers/${name}/data/example.jsonl +output_jsonl_fpath=results/${name}.jsonl
npx gym eval profile --rollouts results/${name}.jsonl     # or: npx gym view results/${name}.jsonl
node --import tsx --test resources_servers/${name}/app.test.ts
\`\`\`

\`gym eval run\` starts this environment and the remote agent itself and stops them at the end; the rollouts land in
\`results/${name}.jsonl\`, failed attempts in \`results/${name}_failures.jsonl\`, metrics in
\`results/${name}_aggregate_metrics.json\`.

Edit next:

1. \`app.ts\`: your task's state (\`seedRow\`, \`createState\`), tools and \`verify\`.
2. \`data/example.jsonl\`: your tasks. Each row's \`responses_create_params.tools\` must equal \`environment.toolSchemas\`;
   \`app.test.ts\` fails with the expected JSON when they differ.
3. Your agent: point \`agent_base_url\` in \`configs/${name}.yaml\` at it, or grow \`solve\` in \`solver.ts\`. Check a
   service first with \`npx gym agent check http://127.0.0.1:9000 --rows resources_servers/${name}/data/example.jsonl\`.
`;
}
