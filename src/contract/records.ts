/**
 * The one test for "a JSON object" (not null, not an array) that the fast path, the error text and the message
 * helpers of this folder share, so they agree on what counts as an object.
 */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
