/**
 * The one test for "a JSON object" (not null, not an array) that the fast path, the error text and the message
 * helpers of this folder share, so they agree on what counts as an object.
 */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * A JSON value as text where text is expected: a string as it is, null or undefined as the empty string, anything
 * else in its JSON form (a number or a boolean reads as `String` would write it; an object never as `[object Object]`).
 */
export function jsonValueText(value: unknown): string {
  if (value === undefined || value === null) return '';
  return typeof value === 'string' ? value : JSON.stringify(value);
}
