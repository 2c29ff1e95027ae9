import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import { runAgentCheck } from '../../src/check/agent-check.js';
import { loadRowProbes } from '../../src/check/row-probes.js';
import { request } from '../../src/http/client.js';
import type { ConversationItem, DecideContext, FunctionTool } from '../../src/service/index.js';
import { calculate } from '../../resources_servers/math/calculator.js';
import { DEFAULT_MATH_CONFIG } from '../../resources_servers/math/config.js';
import { mathRows } from '../../resources_servers/math/scripts/generate.js';
import { CALCULATOR_TOOL } from '../../resources_servers/math/tools.js';
import { verifyMath } from '../../resources_servers/math/verify.js';
import { AGENT_CHECK_DEADLINES, DIST_EXAMPLES, REPO_ROOT, spawnService } from '../../test/support/examples.js';
import { createMathSolver, MATH_SOLVER_BRAIN, planMathTask, startMathSolver } from './index.js';

const ctx = {} as DecideContext;
const SEED = 21;
const EXAMPLE_ROWS = path.join(REPO_ROOT, 'resources_servers/math/data/example.jsonl');

/**
 * Play one rollout in process: the solver decides, the environment's own calculator runs the asks, and the
 * environment's verifier scores the final message. Returns the verdict and how many calls the solver made.
 */
async function playRollout(question: string, tools: FunctionTool[]) {
  const solve = createMathSolver();
  const conversation: ConversationItem[] = [{ role: 'user', content: question }];
  const output: unknown[] = [];
  for (let step = 0; step < 4; step++) {
    const decision = await solve(conversation, tools, ctx);
    if ('final' in decision) {
      output.push({
        type: 'message',
        id: `m${step}`,
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: decision.final, annotations: [] }],
      });
      return { verdict: verifyMath(output, expectedOf(question), DEFAULT_MATH_CONFIG), steps: step + 1, output };
    }
    for (const [index, call] of decision.toolCalls.entries()) {
      const callId = `c${step}_${index}`;
      const args = call.arguments as { expression: string };
      const ask = { type: 'function_call', call_id: callId, name: call.name, arguments: JSON.stringify(args) };
      const result = {
        type: 'function_call_output',
        call_id: callId,
        output: JSON.stringify(calculate(args.expression)),
      };
      conversation.push(ask, result);
      output.push(ask, result);
    }
  }
  throw new Error(`the solver did not finish: ${question}`);
}

let expectedByQuestion = new Map<string, string>();
const expectedOf = (question: string): string => expectedByQuestion.get(question)!;

describe('math solver (deterministic, no model)', () => {
  for (const calculator of [true, false]) {
    it(`solves 600 generated rows (seed ${SEED}, calculator ${calculator ? 'declared' : 'not declared'}) and the verifier agrees on every one`, async () => {
      const rows = [...mathRows(600, SEED, { calculator })];
      expectedByQuestion = new Map(
        rows.map((row) => [row.responses_create_params.input[0]!.content, row.expected_answer]),
      );
      const reasons = new Set<string>();
      for (const row of rows) {
        const question = row.responses_create_params.input[0]!.content;
        const tools = (row.responses_create_params.tools ?? []) as FunctionTool[];
        const { verdict, steps } = await playRollout(question, tools);
        assert.equal(
          verdict.reward,
          1,
          `${row.task_type}: ${question} → ${verdict.extracted_answer} (${verdict.match_reason}), expected ${row.expected_answer}`,
        );
        const usesCalculator = calculator && ['arithmetic', 'percent', 'word'].includes(row.task_type);
        assert.equal(verdict.calculator_calls, usesCalculator ? 1 : 0, question);
        assert.equal(steps, usesCalculator ? 2 : 1);
        reasons.add(`${verdict.extraction_strategy}/${verdict.match_reason}`);
      }
      // The answer formats vary on purpose: the run covers every extraction strategy it uses and every match kind.
      for (const expected of [
        'boxed/string_equal',
        'boxed/symbolic_equal',
        'answer_line/string_equal',
        'hashes/numeric_equal',
      ]) {
        assert.ok(reasons.has(expected), `${expected} in ${[...reasons].join(', ')}`);
      }
    });
  }

  it('asks only for a declared calculator, and answers a question it does not know with a message', async () => {
    const question = 'Compute (1 + 2) * 3 - 4.';
    const solve = createMathSolver();
    assert.deepEqual(await solve([{ role: 'user', content: question }], [CALCULATOR_TOOL as FunctionTool], ctx), {
      toolCalls: [{ name: 'calculator', arguments: { expression: '(1 + 2) * 3 - 4' } }],
    });
    assert.deepEqual(await solve([{ role: 'user', content: question }], [], ctx), {
      final: '(1 + 2) * 3 - 4 = 5, so the answer is \\boxed{5}.',
    });
    const unknown = await solve([{ role: 'user', content: 'Prove Fermat’s last theorem.' }], [], ctx);
    assert.match((unknown as { final: string }).final, /cannot solve this question/);
    assert.equal(planMathTask('What is the airspeed of a swallow?'), undefined);
  });

  it('computes the value itself when the calculator reports an error', async () => {
    const question = 'What is 15% of 240?';
    const conversation: ConversationItem[] = [
      { role: 'user', content: question },
      { type: 'function_call', call_id: 'c1', name: 'calculator', arguments: '{"expression":"15 / 100 * 240"}' },
      { type: 'function_call_output', call_id: 'c1', output: '{"error":"busy"}' },
    ];
    assert.deepEqual(await createMathSolver()(conversation, [CALCULATOR_TOOL as FunctionTool], ctx), {
      final: '15% of 240 is 36.\n\nAnswer: 36',
    });
  });
});

describe('math solver service', () => {
  it('passes gym agent check with the example rows as probes', async () => {
    const service = await startMathSolver({ port: 0 });
    try {
      const report = await runAgentCheck(service.url, {
        ...AGENT_CHECK_DEADLINES,
        rows: await loadRowProbes(EXAMPLE_ROWS),
      });
      const failing = report.checks.filter((check) => check.status === 'fail' || check.status === 'warn');
      assert.deepEqual(
        failing.map((check) => `${check.name}: ${check.detail}`),
        [],
      );
      assert.ok(report.checks.some((check) => check.name === 'row-probes' && check.status === 'pass'));
    } finally {
      await service.close();
    }
  });

  it('runs with one command: node dist/examples/math-solver/service.js --port 0', async () => {
    const service = await spawnService(process.execPath, [`${DIST_EXAMPLES}math-solver/service.js`, '--port', '0']);
    try {
      assert.match(service.output(), new RegExp(`${MATH_SOLVER_BRAIN.replace(/[()]/g, '\\$&')} listening on`));
      const res = await request(`${service.url}/v1/responses`, {
        method: 'POST',
        json: { input: [{ role: 'user', content: 'Expand (x + 1)(x - 1). Put your final answer in \\boxed{}.' }] },
        timeoutMs: 30_000,
      });
      assert.equal(res.status, 200);
      const body = res.json() as { model: string; output: Array<{ type: string; content?: Array<{ text: string }> }> };
      assert.equal(body.model, MATH_SOLVER_BRAIN);
      assert.equal(body.output.at(-1)?.content?.[0]?.text, 'Multiplying out term by term gives \\boxed{x ^ 2 - 1}.');
    } finally {
      await service.close();
    }
  });
});
