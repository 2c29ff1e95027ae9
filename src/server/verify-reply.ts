/**
 * The `/verify` reply of a large request, written from the request's own bytes. The reply echoes the request body
 * (the trajectory above all) with the verdict added; encoding that echo again cost a second text of the whole
 * trajectory per verify, megabytes each with big trajectories, and in a co-located process those strings pile up
 * while every rollout of a wave verifies at once (bench scenario 3). So each member the reply echoes unchanged — the
 * very object the parse of the request made — is sent as the request's bytes of it; everything else is encoded.
 *
 * What this means for the bytes: a request written by `JSON.stringify` (as tsgym's agent writes every `/verify` body)
 * gets exactly the reply `JSON.stringify` would write. Any other request gets its echoed members as it sent them
 * (its spacing, escapes and number spellings), which is the same JSON. An environment that changes an echoed object
 * in place, instead of returning a new one, is echoed the request as received. Where the request's members cannot
 * be told apart for certain (names written with escapes, repeated names) or an echoed part is not valid UTF-8, the
 * reply is encoded whole, as before.
 */
import { isUtf8 } from 'node:buffer';
import { MAX_ENVELOPED_JSON_DEPTH } from '../bounded-json/index.js';
import { objectMembers, type Member } from '../bounded-json/member.js';

/** Below this a request's members are not worth locating: encoding the reply whole is as cheap. */
const SPLICE_FROM_BYTES = 64 * 1024;

/**
 * `JSON.stringify(reply)` as parts, with each member of `reply` that is the same object as the member of that name in
 * `parsed` (the parse of `request`) taken from `request`'s bytes; undefined when the reply is better encoded whole.
 */
export function verifyReplyParts(
  request: Buffer,
  parsed: Record<string, unknown>,
  reply: Record<string, unknown>,
): Buffer[] | undefined {
  if (request.length < SPLICE_FROM_BYTES) return undefined;
  const members = objectMembers(request, MAX_ENVELOPED_JSON_DEPTH);
  if (!members) return undefined;
  const byName = new Map<string, Member>();
  for (const member of members) {
    if (member.name === undefined || byName.has(member.name)) return undefined;
    byName.set(member.name, member);
  }
  const parts: Buffer[] = [];
  let text = '{';
  for (const key of Object.keys(reply)) {
    const value = reply[key];
    const member = byName.get(key);
    const separator = text === '{' && parts.length === 0 ? '' : ',';
    if (member && value !== null && typeof value === 'object' && value === parsed[key]) {
      const bytes = request.subarray(member.valueStart, member.end);
      if (!isUtf8(bytes)) return undefined;
      parts.push(Buffer.from(`${text}${separator}${JSON.stringify(key)}:`), bytes);
      text = '';
      continue;
    }
    let encoded: string | undefined;
    try {
      encoded = JSON.stringify(value);
    } catch {
      return undefined; // a cycle or a BigInt: encoding the reply whole fails the same way, with the usual answer
    }
    if (encoded === undefined) continue; // left out, as JSON.stringify leaves out undefined and functions
    text += `${separator}${JSON.stringify(key)}:${encoded}`;
  }
  parts.push(Buffer.from(`${text}}`));
  return parts;
}
