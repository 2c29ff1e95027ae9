/**
 * The files of `gym new service NAME`: an agent service that solves tsgym's counter tasks ("add 1 then add 2 then
 * get the count") — in TypeScript on `tsgym/service` with a test that plays Gym's side of the loop, or with
 * `--python` the standard-library Python example tsgym ships — plus a config that wires the built-in counter
 * environment to a remote agent at the service's URL, and a README. The example rows are tsgym's own counter rows.
 */
import { serviceMainBlock } from './service-main.js';

export function counterService(name: string): string {
  return `// ${name}: an agent service for tsgym's counter tasks ("add 1 then add 2 then get the count"). Its brain is a rule,
// not a model: ask increment_counter for each "add N", then get_counter_value, then answer the count. Replace solve
// with your agent (call a model, run a planner); tsgym/service speaks the HTTP contract.
//   node --import tsx ${name}/service.ts [--port 9000]
import { realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { serve, toolHistory, userMessages, type Decide } from 'tsgym/service';

export const solve: Decide = (conversation, tools) => {
  const task = userMessages(conversation).join(' ');
  const asked = toolHistory(conversation); // your earlier tool calls, each with Gym's result
  const adds = [...task.matchAll(/add (-?\\d+)/g)].map((match) => Number(match[1]));
  const todo = adds.slice(asked.filter((call) => call.name === 'increment_counter').length);
  if (todo.length > 0 && tools.some((tool) => tool.name === 'increment_counter')) {
    return { toolCalls: todo.map((count) => ({ name: 'increment_counter', arguments: { count } })) };
  }
  const read = asked.find((call) => call.name === 'get_counter_value');
  if (!read) return { toolCalls: [{ name: 'get_counter_value', arguments: {} }] };
  return { final: String((JSON.parse(read.output ?? '{}') as { count?: number }).count) };
};

${serviceMainBlock(name, name)}`;
}

export function counterServiceTest(name: string): string {
  return `// ${name}/service.ts over real HTTP, each example row played the way Gym plays it: send the task, run the tools the
// service asks for on a local counter, send the results back, until the service answers; the answer must be the row's
// expected_count.
//   node --import tsx --test ${name}/service.test.ts
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { serve, type RunningService } from 'tsgym/service';
import { solve } from './service.js';

interface CounterRow {
  responses_create_params: { input: unknown[]; tools: unknown[] };
  initial_count: number;
  expected_count: number;
}
interface OutputItem {
  type: string;
  call_id?: string;
  name?: string;
  arguments?: string;
  content?: Array<{ text?: string }>;
}

const rows = readFileSync(new URL('./data/example.jsonl', import.meta.url), 'utf8')
  .split('\\n')
  .filter((line) => line.trim() !== '')
  .map((line) => JSON.parse(line) as CounterRow);

let service: RunningService;
before(async () => {
  service = await serve(solve, { port: 0 });
});
after(() => service.close());

for (const [index, row] of rows.entries()) {
  test('example row ' + index + ' ends with the expected count', async () => {
    let count = row.initial_count;
    const runTool = (name: string, args: { count?: number }): unknown => {
      if (name === 'increment_counter') count += args.count ?? 0;
      return name === 'increment_counter' ? { success: true } : { count };
    };
    const input = [...row.responses_create_params.input];
    let cookie: string | undefined;
    for (let step = 1; step <= 8; step++) {
      const res = await fetch(service.url + '/v1/responses', {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(cookie ? { cookie } : {}) },
        body: JSON.stringify({ ...row.responses_create_params, input }),
      });
      assert.equal(res.status, 200, await res.clone().text());
      cookie = res.headers.getSetCookie()[0]?.split(';')[0] ?? cookie;
      const output = ((await res.json()) as { output: OutputItem[] }).output;
      const calls = output.filter((item) => item.type === 'function_call');
      if (calls.length === 0) {
        const answer = output.find((item) => item.type === 'message')?.content?.[0]?.text;
        assert.equal(answer, String(row.expected_count));
        return;
      }
      input.push(...output);
      for (const call of calls) {
        const result = runTool(call.name ?? '', JSON.parse(call.arguments ?? '{}') as { count?: number });
        input.push({ type: 'function_call_output', call_id: call.call_id, output: JSON.stringify(result) });
      }
    }
    assert.fail('the service did not answer within 8 steps');
  });
}
`;
}

/** tsgym's standard-library Python service, with its usage line pointing at where it now lives. */
export function pythonService(name: string, shippedSource: string): string {
  return shippedSource.replaceAll('examples/python-stdlib/service.py', `${name}/service.py`);
}

export function counterServiceConfig(name: string, language: 'typescript' | 'python'): string {
  const start =
    language === 'python' ? `python3 ${name}/service.py --port 9000` : `node --import tsx ${name}/service.ts`;
  return `# tsgym's counter environment (it ships with tsgym) and ${name}_agent, the remote agent that drives your service
# through it. agent_base_url is where the service listens by default:
#   ${start}
#   npx gym eval run "+config_paths=[${name}/configs/${name}.yaml]" +agent_name=${name}_agent \\
#     +input_jsonl_fpath=${name}/data/example.jsonl +output_jsonl_fpath=results/${name}.jsonl
example_session_state_mgmt_resources_server:
  resources_servers:
    example_session_state_mgmt:
      entrypoint: app.py
      domain: agent

${name}_agent:
  responses_api_agents:
    remote_agent:
      entrypoint: app.py
      # Your service's address: another machine, a container, or this one.
      agent_base_url: http://127.0.0.1:9000
      resources_server:
        type: resources_servers
        name: example_session_state_mgmt_resources_server   # the top-level key above
      concurrency: 4
      max_steps: 8
`;
}

export function counterServiceReadme(name: string, language: 'typescript' | 'python'): string {
  const python = language === 'python';
  const files = python
    ? `| \`service.py\` | the service: \`decide\` is the brain, the rest is the HTTP contract (Python 3 standard library only) |`
    : `| \`service.ts\` | the service: \`solve\` is the brain; \`tsgym/service\` does the HTTP contract |
| \`service.test.ts\` | each example row played over real HTTP the way Gym plays it |
| \`package.json\` | marks this folder's \`.ts\` files as ES modules |`;
  const start = python ? `python3 ${name}/service.py --port 9000` : `node --import tsx ${name}/service.ts`;
  const test = python ? '' : `node --import tsx --test ${name}/service.test.ts\n`;
  return `# ${name}

An agent service for tsgym's remote agent. As generated it solves the counter tasks ("add 1 then add 2 then get the
count") with a rule instead of a model, so a first run scores mean reward 1.0.

| file | what it is |
|---|---|
${files}
| \`configs/${name}.yaml\` | tsgym's counter environment and \`${name}_agent\`, the remote agent that calls this service |
| \`data/example.jsonl\` | five counter tasks (tsgym's own example rows) |

Run it, from the project root:

\`\`\`bash
${start}        # terminal 1: the service on :9000
npx gym eval run "+config_paths=[${name}/configs/${name}.yaml]" +agent_name=${name}_agent \\
  +input_jsonl_fpath=${name}/data/example.jsonl +output_jsonl_fpath=results/${name}.jsonl
npx gym eval profile --rollouts results/${name}.jsonl     # or: npx gym view results/${name}.jsonl
${test}\`\`\`

\`gym eval run\` starts the counter environment and the remote agent itself and stops them at the end; the rollouts land
in \`results/${name}.jsonl\`, failed attempts in \`results/${name}_failures.jsonl\`, metrics in
\`results/${name}_aggregate_metrics.json\`.

Edit next:

1. The brain (\`${python ? 'decide' : 'solve'}\` in \`service.${python ? 'py' : 'ts'}\`): call your model or planner with the conversation and tools.
2. Check the service against the contract: \`npx gym agent check http://127.0.0.1:9000\`.
3. Another environment: change the resources-server block and its ref in \`configs/${name}.yaml\`, and \`-i\` to its rows.
`;
}
