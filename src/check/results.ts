/**
 * Turning a run's ledger into one verdict per check: the first failure (else the first warning) with a count of
 * the rest, a skip when nothing could be judged, or a pass with the note that says what was seen.
 */
import type { CheckResult, CheckSpec } from './checks.js';
import type { CheckSession } from './session.js';

/** Checks judged only by inspecting responses: with no response at all they are skipped, not passed. */
const INSPECTED_ONLY = new Set([
  'responses-object',
  'next-step',
  'declared-tools',
  'arguments',
  'unique-call-ids',
  'pairing',
  'usage',
]);

export function checkResults(session: CheckSession, checks: readonly CheckSpec[]): CheckResult[] {
  const { ledger } = session;
  return checks.map(({ name, fix }) => {
    const mine = ledger.findingsOf(name);
    const fails = mine.filter((finding) => finding.level === 'fail');
    const warns = mine.filter((finding) => finding.level === 'warn');
    const chosen = fails.length ? fails : warns;
    if (chosen.length > 0) {
      const more = chosen.length > 1 ? ` (+${chosen.length - 1} more)` : '';
      return {
        name,
        status: fails.length ? 'fail' : 'warn',
        detail: `${chosen[0]!.detail}${more}`,
        fix: chosen[0]!.fix ?? fix,
      };
    }
    if (INSPECTED_ONLY.has(name) && ledger.responses === 0) {
      return { name, status: 'skip', detail: 'no response to inspect' };
    }
    const skip = ledger.skipReason(name);
    if (skip) return { name, status: 'skip', detail: skip };
    return { name, status: 'pass', detail: ledger.passNote(name) ?? defaultPassNote(session, name) };
  });
}

/** The verdicts when the service never answered: what failed, and every other check not run. */
export function unreachableResults({ ledger }: CheckSession, checks: readonly CheckSpec[]): CheckResult[] {
  return checks.map(({ name, fix }) => {
    const finding = ledger.findingsOf(name)[0];
    if (finding) return { name, status: 'fail', detail: finding.detail, fix };
    return { name, status: 'skip', detail: 'not run: the service is unreachable' };
  });
}

function defaultPassNote({ client, ledger, timeoutMs }: CheckSession, name: string): string {
  const calls = client.latencies.length;
  switch (name) {
    case 'reachable':
      return `${calls} calls answered within ${timeoutMs / 1000}s`;
    case 'no-redirect':
      return `no 3xx among ${calls} answers`;
    case 'http-reply':
      return 'every answer was HTTP 2xx with a JSON object';
    case 'responses-object':
      return ledger.completed > 0
        ? `${ledger.responses} responses are valid Responses API objects, ${ledger.completed} of them once completed ` +
            'from the request (--fill-echo-fields, as fill_echo_fields: true does)'
        : `${ledger.responses} responses are valid Responses API objects`;
    case 'next-step':
      return 'every response asked for a tool or finished';
    case 'declared-tools':
      return `${ledger.asks} asks, all for declared tools`;
    case 'arguments':
      return 'every arguments field is the JSON text of an object';
    case 'unique-call-ids':
      return 'call_ids are unique within every response';
    case 'pairing':
      return 'no function_call_output without its call';
    case 'usage':
      return 'complete usage on every response';
    default:
      return 'ok';
  }
}
