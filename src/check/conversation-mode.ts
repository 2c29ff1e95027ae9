/**
 * `gym agent check` without `--rows`: short conversations modelled on the counter tasks, driven the way the remote
 * agent drives a rollout (call, run the asks on a local counter simulation, append their outputs, call again), then
 * judged: each conversation under its own check, and the cookie and latency checks over all of them.
 */
import { normalizeInput } from '../contract/index.js';
import { CounterSimulation } from '../counter/simulation.js';
import { GET_COUNTER_VALUE_TOOL, INCREMENT_COUNTER_TOOL } from '../counter/tools.js';
import { CookieJar } from '../http/cookies.js';
import { CHECKS, type CheckResult } from './checks.js';
import { firstAnswerWithoutCookies, judgeCookies, type CookieEvidence } from './cookies.js';
import { excerpt } from './excerpt.js';
import { askText } from './inspect.js';
import { judgeLatency } from './latency.js';
import type { CheckLedger } from './ledger.js';
import { checkResults, unreachableResults } from './results.js';
import type { CheckSession } from './session.js';

interface Conversation {
  /** The check that judges this conversation. */
  check: 'conversation' | 'string-input' | 'tool-subset';
  input: string | Record<string, unknown>[];
  tools: Record<string, unknown>[];
  initialCount: number;
  expectedCount: number;
}

const CONVERSATIONS: Conversation[] = [
  {
    check: 'conversation',
    input: [{ role: 'user', content: 'add 1 then add 2 then get the count' }],
    tools: [INCREMENT_COUNTER_TOOL, GET_COUNTER_VALUE_TOOL],
    initialCount: 3,
    expectedCount: 6,
  },
  {
    check: 'string-input',
    input: 'add 4 then add 5 then get the count',
    tools: [INCREMENT_COUNTER_TOOL, GET_COUNTER_VALUE_TOOL],
    initialCount: 6,
    expectedCount: 15,
  },
  {
    check: 'tool-subset',
    input: [{ role: 'user', content: 'get the count' }],
    tools: [GET_COUNTER_VALUE_TOOL],
    initialCount: 5,
    expectedCount: 5,
  },
];

interface ConversationOutcome extends CookieEvidence {
  conversation: Conversation;
  calls: number;
  /** How the conversation ended. */
  end: 'finished' | 'incomplete' | 'exhausted' | 'stopped' | 'refused';
  stoppedBy?: string;
  finalText?: string;
  trace: string[];
  counter: number;
}

/** Every conversation in turn (stopping at once if the service cannot be reached), then the verdicts. */
export async function checkWithConversations(session: CheckSession): Promise<CheckResult[]> {
  const outcomes: ConversationOutcome[] = [];
  for (const conversation of CONVERSATIONS) {
    const outcome = await drive(session, conversation);
    outcomes.push(outcome);
    if (outcome.stoppedBy === 'unreachable') return unreachableResults(session, CHECKS);
  }
  const first = CONVERSATIONS[0]!;
  const fresh = await firstAnswerWithoutCookies(
    session,
    { input: first.input, tools: first.tools },
    declaredTools(first),
  );
  for (const outcome of outcomes) judgeConversation(session.ledger, outcome);
  judgeCookies(session, outcomes[0]!, fresh);
  judgeLatency(session);
  return checkResults(session, CHECKS);
}

function declaredTools(conversation: Conversation): string[] {
  return conversation.tools.map((tool) => String(tool.name));
}

/** One conversation, the way the remote agent drives a rollout: call, run the asks, append, call again. */
async function drive(
  { client, ledger, maxSteps }: CheckSession,
  conversation: Conversation,
): Promise<ConversationOutcome> {
  const jar = new CookieJar();
  const counter = new CounterSimulation(conversation.initialCount);
  const declared = declaredTools(conversation);
  const history = normalizeInput(conversation.input);
  const outcome: ConversationOutcome = {
    conversation,
    calls: 0,
    end: 'exhausted',
    trace: [],
    counter: counter.value,
    cookiesSet: [],
  };
  for (let step = 1; step <= maxSteps; step++) {
    const where = `${conversation.check} call ${step}`;
    const body = { input: step === 1 ? conversation.input : history, tools: conversation.tools };
    // Gym always sends a list, so an answer refused only because the input was a string is a warning.
    const demoteTo = step === 1 && typeof conversation.input === 'string' ? 'string-input' : undefined;
    const hadCookies = jar.size > 0;
    const reply = await client.call(body, jar, where, demoteTo);
    outcome.calls = step;
    if (!reply.ok) {
      if (hadCookies && !reply.unreachable && (await client.succeedsWithoutCookies(body)))
        outcome.cookieRejectedAt = where;
      if (reply.refused) return { ...outcome, end: 'refused' }; // already reported as a warning
      return { ...outcome, end: 'stopped', stoppedBy: reply.unreachable ? 'unreachable' : reply.check };
    }
    outcome.cookiesSet.push(...reply.setCookies);
    const reading = ledger.judgeAnswer(reply.body, body, declared, where);
    if (step === 1) outcome.firstReading = reading;
    if (!reading.valid) {
      const blocking = reading.findings.find((f) => f.level === 'fail')?.check ?? 'responses-object';
      return { ...outcome, end: 'stopped', stoppedBy: blocking };
    }
    if (reading.incomplete) return { ...outcome, end: 'incomplete' };
    if (reading.asks.length === 0) {
      if (!reading.hasAssistantMessage) return { ...outcome, end: 'stopped', stoppedBy: 'next-step' };
      return { ...outcome, end: 'finished', finalText: reading.finalText ?? '', counter: counter.value };
    }
    history.push(...(reply.body.output as unknown[]));
    for (const ask of reading.asks) {
      const result = counter.execute(ask.name, ask.arguments);
      outcome.trace.push(askText(ask));
      history.push({ type: 'function_call_output', call_id: ask.callId, output: result });
    }
    outcome.counter = counter.value;
  }
  return outcome;
}

/** A finished conversation passes when the counter ended where the task expects and the answer states it. */
function judgeConversation(ledger: CheckLedger, outcome: ConversationOutcome): void {
  const { conversation } = outcome;
  const steps = outcome.trace.length ? `${outcome.trace.join(', ')} → ` : '';
  switch (outcome.end) {
    case 'finished': {
      const answer = JSON.stringify(excerpt(outcome.finalText ?? '', 60));
      const summary = `${steps}final answer ${answer} after ${outcome.calls} call${outcome.calls === 1 ? '' : 's'}`;
      if (outcome.counter !== conversation.expectedCount) {
        ledger.add(
          conversation.check,
          'warn',
          `${summary}, but the counter ended at ${outcome.counter} (task expects ${conversation.expectedCount}: reward would be 0)`,
        );
      } else if (!(outcome.finalText ?? '').includes(String(conversation.expectedCount))) {
        ledger.add(
          conversation.check,
          'warn',
          `${summary}, which does not state the count ${conversation.expectedCount}`,
        );
      } else {
        ledger.notePass(conversation.check, summary);
      }
      return;
    }
    case 'incomplete':
      ledger.add(
        conversation.check,
        'warn',
        `call ${outcome.calls} set incomplete_details, so Gym stops and verifies the trajectory so far`,
      );
      return;
    case 'exhausted':
      ledger.add(
        conversation.check,
        'fail',
        `no final assistant message after ${outcome.calls} calls (asked: ${outcome.trace.join(', ') || 'nothing'})`,
      );
      return;
    case 'stopped':
      ledger.add(
        conversation.check,
        'fail',
        `could not go on after call ${outcome.calls}: see ${outcome.stoppedBy}`,
        `Fix the ${outcome.stoppedBy} failure; the conversation could not continue past it.`,
      );
      return;
    case 'refused':
      return;
  }
}
