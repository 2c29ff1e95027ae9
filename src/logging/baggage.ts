/**
 * The rollout keys on the wire, as W3C Baggage (`baggage: gym.task_index=3,gym.rollout_index=0,gym.attempt=0`): the
 * remote agent adds the header to each hop of a rollout when it logs json, so an environment's request events can
 * name the rollout they served. The parser reads only tsgym's three keys and only as small non-negative integers.
 * It is bounded for a hostile caller: it never throws, looks at no more than the first 8192 characters (the W3C
 * limit) and 64 members, and keeps nothing but the three numbers.
 */

export interface RolloutKeys {
  task_index?: number;
  rollout_index?: number;
  attempt?: number;
}

// A Map, not an object: a member named `__proto__` or `constructor` must find nothing.
const KEYS = new Map<string, keyof RolloutKeys>([
  ['gym.task_index', 'task_index'],
  ['gym.rollout_index', 'rollout_index'],
  ['gym.attempt', 'attempt'],
]);
const MAX_CHARS = 8192;
const MAX_MEMBERS = 64;
const INDEX = /^[0-9]{1,15}$/;

/** The header value for one rollout (keys that are not non-negative integers are left out). */
export function rolloutBaggage(keys: RolloutKeys): string {
  const members: string[] = [];
  for (const [wire, field] of KEYS) {
    const value = keys[field];
    if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) members.push(`${wire}=${value}`);
  }
  return members.join(',');
}

/** The rollout keys a received `baggage` header names; `{}` for anything absent, malformed or oversized. */
export function parseRolloutBaggage(header: unknown): RolloutKeys {
  const keys: RolloutKeys = {};
  const text = Array.isArray(header) ? (typeof header[0] === 'string' ? header[0] : undefined) : header;
  if (typeof text !== 'string' || text === '') return keys;
  let start = 0;
  const end = Math.min(text.length, MAX_CHARS);
  for (let members = 0; start < end && members < MAX_MEMBERS; members++) {
    let comma = text.indexOf(',', start);
    if (comma < 0 || comma > end) comma = end;
    const member = text.slice(start, comma);
    start = comma + 1;
    const eq = member.indexOf('=');
    if (eq < 0) continue;
    const field = KEYS.get(member.slice(0, eq).trim());
    if (!field) continue;
    // A member's properties (`;prop`) are ignored.
    const semicolon = member.indexOf(';', eq);
    const value = member.slice(eq + 1, semicolon < 0 ? undefined : semicolon).trim();
    if (INDEX.test(value)) keys[field] = Number(value);
  }
  return keys;
}
