/**
 * The validation entry points of the contract. Each first asks the fast path, then zod; on success the value is
 * the caller's own object, untouched (D17: items are echoed exactly as the service sent them, unknown fields
 * included), and on failure it is one line of error text.
 */
import {
  CreateParamsSchema,
  ResponseSchema,
  UsageSchema,
  type CreateParams,
  type ResponseObject,
  type Usage,
} from './body-schemas.js';
import { plainCreateParams, plainResponse, plainUsage } from './fast-path.js';
import { describeIssues } from './issue-text.js';

export type Validation<T> = { ok: true; value: T } | { ok: false; message: string };

export function validateResponse(value: unknown): Validation<ResponseObject> {
  if (plainResponse(value)) return { ok: true, value: value as ResponseObject };
  const result = ResponseSchema.safeParse(value);
  if (result.success) return { ok: true, value: value as ResponseObject };
  return { ok: false, message: describeIssues(result.error.issues, value, []) };
}

export function validateCreateParams(value: unknown): Validation<CreateParams> {
  if (plainCreateParams(value)) return { ok: true, value: value as CreateParams };
  const result = CreateParamsSchema.safeParse(value);
  if (result.success) return { ok: true, value: value as CreateParams };
  return { ok: false, message: describeIssues(result.error.issues, value, []) };
}

/** `null` and `undefined` mean "no usage reported", which is valid; anything else must be complete. */
export function validateUsage(value: unknown): Validation<Usage | null> {
  if (value === null || value === undefined) return { ok: true, value: null };
  if (plainUsage(value)) return { ok: true, value: value as Usage };
  const result = UsageSchema.safeParse(value);
  if (result.success) return { ok: true, value: value as Usage };
  return { ok: false, message: describeIssues(result.error.issues, { usage: value }, ['usage']) };
}
