/**
 * `gym agent check --rows FILE`: each dataset row's first call, sent as a rollout would send it and judged against
 * the row's own tools; then a plain-string variant of one row and a cookie-less repeat of the first. The rows'
 * tools run in their environment, which the check does not start, so the whole-conversation checks are skipped.
 */
import { CookieJar } from '../http/cookies.js';
import { CHECKS, ROW_PROBES_CHECK, type CheckResult } from './checks.js';
import { cookieNames, firstAnswerWithoutCookies, judgeCookies } from './cookies.js';
import type { Reading } from './inspect.js';
import { judgeLatency } from './latency.js';
import { checkResults, unreachableResults } from './results.js';
import { argumentsProblem, type RowProbe } from './row-probes.js';
import type { CheckSession } from './session.js';

const ROW_CHECKS = [...CHECKS, ROW_PROBES_CHECK];

/** The conversation checks that need the rows' environment to run tools, so `--rows` cannot judge them. */
const CONVERSATION_ONLY = ['conversation', 'tool-subset'];

/** Each row's first call, judged; then a string-input variant and a cookie-less repeat of the first row. */
export async function checkWithRows(session: CheckSession, rows: readonly RowProbe[]): Promise<CheckResult[]> {
  const { client, ledger } = session;
  const ends: string[] = [];
  const problems: string[] = [];
  let first: { reading: Reading; cookiesSet: string[]; probe: RowProbe } | undefined;
  for (const probe of rows) {
    const reply = await client.call(probe.params, new CookieJar(), probe.label);
    if (!reply.ok) {
      if (reply.unreachable) return unreachableResults(session, ROW_CHECKS);
      problems.push(`${probe.label}: no usable answer (see ${reply.check})`);
      continue;
    }
    const reading = ledger.judgeAnswer(reply.body, probe.params, probe.declared, probe.label);
    first ??= { reading, cookiesSet: reply.setCookies, probe };
    if (!reading.valid) problems.push(`${probe.label}: invalid Responses object (see responses-object)`);
    else if (reading.asks.length > 0) ends.push('asked');
    else if (reading.hasAssistantMessage || reading.incomplete) ends.push('answered');
    else problems.push(`${probe.label}: neither asked for a tool nor answered (see next-step)`);
    for (const ask of reading.asks) {
      const problem = probe.declared.includes(ask.name) ? argumentsProblem(probe, ask.name, ask.arguments) : undefined;
      if (problem) {
        ledger.add(
          'arguments',
          'fail',
          `${probe.label}: ${ask.name} arguments do not match its parameters: ${problem}`,
        );
        problems.push(`${probe.label}: ${ask.name} arguments do not match its parameters`);
      }
    }
  }
  await probeStringInput(session, rows);
  for (const name of CONVERSATION_ONLY) {
    ledger.skip(
      name,
      "not run with --rows (the rows' tools live in their environment; gym eval run plays whole rollouts)",
    );
  }
  if (first) {
    const fresh = await firstAnswerWithoutCookies(session, first.probe.params, first.probe.declared);
    judgeCookies(session, { firstReading: first.reading, cookiesSet: first.cookiesSet }, fresh);
    // Each row is one call, so no cookie was ever sent back: say only what was seen.
    if (ledger.passNote('cookies') !== undefined) {
      const names = cookieNames(first.cookiesSet);
      ledger.notePass(
        'cookies',
        `${names.length ? `sets ${names.join(', ')}; ` : 'sets no cookies; '}the first row again without cookies got the same first answer`,
      );
    }
  } else {
    ledger.skip('cookies', 'no successful answer to judge');
  }
  judgeLatency(session);
  const asked = ends.filter((end) => end === 'asked').length;
  if (problems.length > 0) {
    const more = problems.length > 1 ? ` (+${problems.length - 1} more)` : '';
    ledger.add(ROW_PROBES_CHECK.name, 'fail', `${problems.length} of ${rows.length} rows: ${problems[0]}${more}`);
  } else {
    ledger.notePass(
      ROW_PROBES_CHECK.name,
      `${rows.length} rows: ${asked} asked for declared tools with matching arguments, ${rows.length - asked} answered`,
    );
  }
  return checkResults(session, ROW_CHECKS);
}

/** The first row whose prompt is one user message, sent with that text as a plain-string `input`. */
async function probeStringInput({ client, ledger }: CheckSession, rows: readonly RowProbe[]): Promise<void> {
  const candidate = rows.find((probe) => singleUserText(probe.params.input) !== undefined);
  if (!candidate) {
    ledger.skip('string-input', 'no row whose input is a single user message to send as a string');
    return;
  }
  const where = `${candidate.label} as a string input`;
  const body: Record<string, unknown> = { ...candidate.params, input: singleUserText(candidate.params.input) };
  const reply = await client.call(body, new CookieJar(), where, 'string-input');
  if (!reply.ok) return;
  const reading = ledger.judgeAnswer(reply.body, body, candidate.declared, where);
  if (reading.valid)
    ledger.notePass('string-input', `${candidate.label} with its prompt as a plain string got a valid answer`);
}

/** The text of an input that is exactly one user message (string content or one text part), else undefined. */
function singleUserText(input: unknown): string | undefined {
  if (typeof input === 'string') return input;
  if (!Array.isArray(input) || input.length !== 1) return undefined;
  const item = input[0] as Record<string, unknown> | null;
  if (item === null || typeof item !== 'object' || item.role !== 'user') return undefined;
  if (typeof item.content === 'string') return item.content;
  if (Array.isArray(item.content) && item.content.length === 1) {
    const part = item.content[0] as Record<string, unknown> | null;
    if (part && part.type === 'input_text' && typeof part.text === 'string') return part.text;
  }
  return undefined;
}
