/**
 * The `cookies` check. A service may keep per-rollout state only behind a cookie it sets, because that cookie is
 * all that tells one rollout from another: a second conversation sent without cookies must not be handed the
 * first one's cookie, and should get the same first answer the first conversation got.
 */
import { CookieJar } from '../http/cookies.js';
import { askText, type Reading } from './inspect.js';
import type { CheckSession } from './session.js';

/** The first answer of a conversation that carried no cookies. */
interface FreshAnswer {
  reading?: Reading;
  setCookies: string[];
}

/** What the first conversation showed about cookies. */
export interface CookieEvidence {
  firstReading?: Reading;
  cookiesSet: string[];
  /** Set when a call carrying the service's cookies failed and the same call without them succeeded. */
  cookieRejectedAt?: string;
}

/** A second conversation's first call, without cookies: a service must treat it as a new rollout. */
export async function firstAnswerWithoutCookies(
  { client, ledger }: CheckSession,
  body: Record<string, unknown>,
  declared: readonly string[],
): Promise<FreshAnswer> {
  const where = 'second conversation (no cookies) call 1';
  const reply = await client.call(body, new CookieJar(), where);
  if (!reply.ok) return { setCookies: [] };
  return { reading: ledger.judgeAnswer(reply.body, body, declared, where), setCookies: reply.setCookies };
}

export function judgeCookies({ ledger }: CheckSession, main: CookieEvidence, fresh: FreshAnswer): void {
  if (!main.firstReading && !main.cookieRejectedAt) {
    ledger.skip('cookies', 'no successful conversation to judge');
    return;
  }
  if (main.cookieRejectedAt) {
    ledger.add(
      'cookies',
      'fail',
      `${main.cookieRejectedAt} carried the cookies the service set and failed; the same call without them succeeded`,
    );
    return;
  }
  const shared = fresh.setCookies.filter((line) =>
    main.cookiesSet.some((mine) => cookiePair(mine) === cookiePair(line)),
  );
  if (shared.length > 0) {
    ledger.add(
      'cookies',
      'warn',
      `a second conversation was given the same cookie as the first (${cookiePair(shared[0]!)}): rollouts would share state`,
    );
  }
  const first = main.firstReading ? signature(main.firstReading) : undefined;
  const again = fresh.reading ? signature(fresh.reading) : undefined;
  if (first !== undefined && again !== undefined && first !== again) {
    ledger.add(
      'cookies',
      'warn',
      `a second conversation without cookies got a different first answer (${again}) than the first conversation ` +
        `(${first}): the service may keep rollout state outside its cookie (a non-deterministic brain can also cause this)`,
    );
  }
  const names = cookieNames(main.cookiesSet);
  ledger.notePass(
    'cookies',
    names.length
      ? `sets ${names.join(', ')} and accepts it back; a conversation without cookies starts clean`
      : 'sets no cookies; a conversation without cookies starts clean',
  );
}

/** The names of the cookies these `Set-Cookie` lines set, each once. */
export function cookieNames(setCookies: readonly string[]): string[] {
  return [...new Set(setCookies.map((line) => cookiePair(line).split('=')[0] ?? ''))];
}

function cookiePair(setCookie: string): string {
  return (setCookie.split(';', 1)[0] ?? '').trim();
}

/** What a first answer decided, comparable across conversations: the asks with their arguments, or "final". */
function signature(reading: Reading): string {
  if (reading.asks.length === 0) return reading.hasAssistantMessage ? 'a final answer' : 'nothing';
  return reading.asks.map(askText).join(', ');
}
