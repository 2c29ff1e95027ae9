import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createCounterPlanner } from '../../examples/counter-planner/planner.js';
import { checkDecision } from '../service/decision.js';
import { functionTools, normalizeInput, type DecideContext } from '../service/index.js';
import { buildResponse } from '../service/response.js';
import {
  functionCall,
  functionCallOutput,
  reply,
  startScriptedService,
  type ServiceCall,
  type ServiceHandler,
} from '../testing/index.js';
import { runAgentCheck, type AgentCheckOptions, type AgentCheckReport } from './agent-check.js';
import { assertCheck } from '../../test/support/report-assertions.js';

/** The bound on each call of a check that must answer: generous, so a busy machine is not a failing service. */
const CALL_TIMEOUT_MS = 60_000;

/**
 * `gym agent check` against scripted services: a correct one (the counter planner's answers), then one deliberate
 * mistake each. Every broken service must fail (or warn) under the check that names its mistake.
 */

/** An output item as these tests build and then deliberately break it (e.g. `arguments` turned into an object). */
interface Item {
  type?: string;
  name?: string;
  call_id?: string;
  arguments?: unknown;
  content?: { text: string; [key: string]: unknown }[];
  [key: string]: unknown;
}

/** A Responses object as these tests build and break it: `output` and `usage` are what they edit. */
interface Body {
  output: Item[];
  usage: Record<string, unknown>;
  [key: string]: unknown;
}
const planner = createCounterPlanner();

/** What a correct service answers: the counter planner's decision in the kit's shapes. */
async function correct(call: ServiceCall): Promise<Body> {
  const tools = functionTools(call.body.tools);
  const decision = await planner(normalizeInput(call.body.input), tools, {} as DecideContext);
  return buildResponse(checkDecision(decision, new Set(tools.map((t) => t.name))), {
    brainName: 'scripted',
    tools,
    parallelToolCalls: true,
  }) as unknown as Body;
}

const isFirstCall = (call: ServiceCall): boolean =>
  Array.isArray(call.body.input) ? !call.body.input.some((item) => item.type === 'function_call_output') : true;

async function check(handler: ServiceHandler, options: AgentCheckOptions = {}): Promise<AgentCheckReport> {
  const service = await startScriptedService(handler);
  try {
    return await runAgentCheck(service.url, { timeoutMs: CALL_TIMEOUT_MS, ...options });
  } finally {
    await service.close();
  }
}

function failing(report: AgentCheckReport): string[] {
  return report.checks.filter((c) => c.status === 'fail').map((c) => c.name);
}

describe('gym agent check', () => {
  test('a correct service passes every check', async () => {
    const report = await check(correct);
    assert.deepEqual(
      report.checks.filter((c) => c.status !== 'pass'),
      [],
    );
    assert.equal(report.ok, true);
    assertCheck(
      report,
      'conversation',
      'pass',
      /increment_counter\(\{"count":1\}\), increment_counter\(\{"count":2\}\), get_counter_value\(\{\}\) → final answer "6" after 3 calls/,
    );
    assertCheck(report, 'cookies', 'pass', /sets no cookies/);
    assert.ok(report.latency.calls >= 9 && report.latency.p50_ms !== null);
  });

  test('missing required field → responses-object FAIL naming the field', async () => {
    const report = await check(async (call) => {
      const { created_at: _dropped, ...rest } = await correct(call);
      return rest;
    });
    assertCheck(
      report,
      'responses-object',
      'fail',
      /conversation call 1: invalid Responses API object: created_at: required/,
    );
    assertCheck(report, 'conversation', 'fail', /see responses-object/);
    assert.equal(report.ok, false);
  });

  test('arguments sent as an object → arguments FAIL naming the item', async () => {
    const report = await check(async (call) => {
      const body = await correct(call);
      for (const item of body.output)
        if (item.type === 'function_call') item.arguments = JSON.parse(item.arguments as string);
      return body;
    });
    assertCheck(report, 'arguments', 'fail', /output\[0\]\.arguments is an object, not JSON text/);
    assertCheck(report, 'responses-object', 'fail', /output\[0\]\.arguments/);
  });

  test('arguments that are JSON but not an object → arguments FAIL', async () => {
    const report = await check(async (call) => {
      const body = await correct(call);
      if (isFirstCall(call)) body.output[0]!.arguments = '[1]';
      return body;
    });
    assertCheck(report, 'arguments', 'fail', /output\[0\]\.arguments is JSON an array, not an object/);
    assertCheck(report, 'responses-object', 'pass');
  });

  test('an ask for an undeclared tool → declared-tools FAIL naming the tool', async () => {
    const report = await check(async (call) => {
      const body = await correct(call);
      if (isFirstCall(call)) body.output.unshift(functionCall('web_search', { q: 'counter' }));
      return body;
    });
    assertCheck(
      report,
      'declared-tools',
      'fail',
      /asks for 'web_search', which the request did not declare \(declared: increment_counter, get_counter_value\)/,
    );
    assertCheck(report, 'conversation', 'pass');
  });

  test('an undeclared tool in a tool-subset request → declared-tools FAIL under tool-subset', async () => {
    const report = await check(async (call) => {
      const body = await correct(call);
      if (isFirstCall(call) && call.body.tools.length === 1)
        body.output.unshift(functionCall('increment_counter', { count: 1 }));
      return body;
    });
    assertCheck(
      report,
      'declared-tools',
      'fail',
      /^tool-subset call 1: output\[0\] asks for 'increment_counter'.*\(declared: get_counter_value\)/,
    );
  });

  test('duplicate call_ids in one response → unique-call-ids FAIL', async () => {
    const report = await check(async (call) => {
      const body = await correct(call);
      for (const item of body.output) if (item.type === 'function_call') item.call_id = 'dup';
      return body;
    });
    assertCheck(report, 'unique-call-ids', 'fail', /call_id "dup" is used by output\[0\] and output\[1\]/);
    // Gym runs only the last duplicate, so the counter ends short: the conversation says so.
    assertCheck(report, 'conversation', 'warn', /counter ended at 5 \(task expects 6/);
  });

  test('partial usage → usage FAIL (and only usage), absent usage → WARN', async () => {
    const partial = await check(async (call) => {
      const body = await correct(call);
      delete body.usage.output_tokens_details;
      return body;
    });
    assertCheck(partial, 'usage', 'fail', /partial usage.*usage\.output_tokens_details: required/);
    assertCheck(partial, 'responses-object', 'pass');

    const absent = await check(async (call) => {
      const { usage: _none, ...body } = await correct(call);
      return body;
    });
    assertCheck(absent, 'usage', 'warn', /no usage reported/);
    assert.equal(absent.ok, true);
  });

  test('a redirect → no-redirect FAIL showing the Location', async () => {
    const report = await check(() =>
      reply.json({}, { status: 307, headers: { location: 'https://agent.example.com/v1/responses' } }),
    );
    assertCheck(report, 'no-redirect', 'fail', /HTTP 307 redirect to https:\/\/agent\.example\.com\/v1\/responses/);
    assertCheck(report, 'responses-object', 'skip');
  });

  test('a service that never finishes → conversation FAIL after max steps', async () => {
    const report = await check(() => ({ ...correctShell(), output: [functionCall('get_counter_value', {})] }), {
      maxSteps: 4,
    });
    assertCheck(
      report,
      'conversation',
      'fail',
      /no final assistant message after 4 calls \(asked: get_counter_value\(\{\}\), /,
    );
    assertCheck(report, 'tool-subset', 'fail');
    assertCheck(report, 'declared-tools', 'pass');
  });

  test('an unpaired call next to an output for another call_id (a tool it says it ran) → pairing FAIL', async () => {
    const report = await check(async (call) => {
      const body = await correct(call);
      if (isFirstCall(call) && body.output[0]!.name === 'increment_counter') {
        body.output.push(functionCallOutput('call_ran_myself', '{"success":true}'));
      }
      return body;
    });
    assertCheck(
      report,
      'pairing',
      'fail',
      /function_call_output for call_id "call_ran_myself".*unpaired call output\[0\] \('increment_counter'.*Gym will run that tool again/,
    );
  });

  test('paired internal records for undeclared tools are fine', async () => {
    const report = await check(async (call) => {
      const body = await correct(call);
      body.output.unshift(functionCall('web_search', { q: 'x' }, 'own_1'), functionCallOutput('own_1', 'results'));
      return body;
    });
    assert.deepEqual(failing(report), []);
    assertCheck(report, 'pairing', 'pass');
    assertCheck(report, 'declared-tools', 'pass');
  });

  test('a response with neither an ask nor a message → next-step FAIL', async () => {
    const report = await check(() => ({ ...correctShell(), output: [] }));
    assertCheck(report, 'next-step', 'fail', /neither an unpaired function_call nor an assistant message/);
  });

  test('HTTP 500 and non-JSON bodies → http-reply FAIL with the body excerpt', async () => {
    const report500 = await check(() => reply.status(500, 'kaboom: model backend down'));
    assertCheck(report500, 'http-reply', 'fail', /conversation call 1: HTTP 500: kaboom: model backend down/);
    const notJson = await check(() => reply.raw('<html>oops</html>', { contentType: 'text/html' }));
    assertCheck(notJson, 'http-reply', 'fail', /not valid JSON: <html>oops<\/html>/);
    const list = await check(() => [1, 2]);
    assertCheck(list, 'http-reply', 'fail', /expected a JSON object from \/v1\/responses, got a list/);
  });

  test('a service that refuses string input → string-input WARN only', async () => {
    const report = await check(async (call) =>
      typeof call.body.input === 'string'
        ? reply.json({ detail: 'input must be a list' }, { status: 422 })
        : correct(call),
    );
    assertCheck(report, 'string-input', 'warn', /HTTP 422/);
    assertCheck(report, 'http-reply', 'pass');
    assert.equal(report.ok, true);
  });

  test('a service that sets a cookie and then rejects it → cookies FAIL', async () => {
    const report = await check(async (call) => {
      if (call.cookies.sid) return reply.status(400, 'bad session');
      return reply.json(await correct(call), { setCookies: [`sid=${call.index}; Path=/`] });
    });
    assertCheck(
      report,
      'cookies',
      'fail',
      /conversation call 2 carried the cookies the service set and failed; the same call without them succeeded/,
    );
  });

  test('a service that keeps rollout state outside its cookie → cookies WARN', async () => {
    const solved = new Map<string, string>();
    const report = await check(async (call) => {
      const input = normalizeInput(call.body.input);
      const task = String(input[0]!.content);
      const remembered = solved.get(task);
      if (remembered && isFirstCall(call)) return { ...correctShell(), output: [assistant(remembered)] };
      const body = await correct(call);
      const final = body.output.find((item) => item.type === 'message');
      if (final) solved.set(task, final.content![0]!.text);
      return reply.json(body, { setCookies: ['sid=fixed; Path=/'] });
    });
    assertCheck(
      report,
      'cookies',
      'warn',
      /different first answer \(a final answer\) than the first conversation \(increment_counter/,
    );
    assert.equal(report.ok, true);
  });

  test('one cookie value handed to every conversation → cookies WARN', async () => {
    const report = await check(async (call) =>
      reply.json(await correct(call), { setCookies: ['sid=same-for-all; Path=/'] }),
    );
    assertCheck(report, 'cookies', 'warn', /same cookie as the first \(sid=same-for-all\)/);
  });

  test('a call that never answers → reachable FAIL naming the timeout', async () => {
    const report = await check(() => reply.hang(), { timeoutMs: 150 });
    assertCheck(report, 'reachable', 'fail', /conversation call 1: no answer within 0\.15s \(\+timeout_secs\)/);
  });

  test('a slow service → latency WARN with p50 and max', async () => {
    const report = await check(
      async (call) => {
        await new Promise((resolve) => setTimeout(resolve, 25));
        return correct(call);
      },
      { slowCallMs: 10 },
    );
    // A figure of a second or more is written in seconds (a busy machine can make a call that slow).
    assertCheck(
      report,
      'latency',
      'warn',
      /^p50 (\d+ ms|\d+\.\d s), max (\d+ ms|\d+\.\d s) over \d+ calls: slowest call above 0\.01s/,
    );
    assert.ok((report.latency.p50_ms ?? 0) >= 25);
  });

  test('nothing listening → reachable FAIL, every other check SKIP', async () => {
    const service = await startScriptedService(() => ({}));
    const url = service.url;
    await service.close();
    const report = await runAgentCheck(url, { timeoutMs: CALL_TIMEOUT_MS });
    assertCheck(report, 'reachable', 'fail', new RegExp(`Is your service running at ${url.replace(/\./g, '\\.')}\\?`));
    assert.deepEqual(
      new Set(report.checks.filter((c) => c.name !== 'reachable').map((c) => c.status)),
      new Set(['skip']),
    );
    assert.equal(report.ok, false);
  });
});

/** The top level of a valid response, for services that script their own `output`. */
function correctShell(): Body {
  return {
    id: 'resp_x',
    object: 'response',
    created_at: 0,
    model: 'scripted',
    output: [],
    parallel_tool_calls: true,
    tool_choice: 'auto',
    tools: [],
    usage: {
      input_tokens: 0,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: 0,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 0,
    },
  };
}

function assistant(text: string): Item {
  return {
    type: 'message',
    id: 'msg_x',
    role: 'assistant',
    status: 'completed',
    content: [{ type: 'output_text', text, annotations: [] }],
  };
}
