/**
 * The Responses API wire contract (`tsgym/contract`): the one place that knows what a Responses object, an item,
 * a usage object and a request (`responses_create_params`) look like, as NeMo Gym validates them
 * (docs/services.md, "The contract your service implements"; why zod: docs/design.md, "Why these libraries"), plus the few header and key names tsgym's own processes add (gym-wire.ts).
 *
 * Rules that shape this folder:
 * - Validation only checks. Callers keep and forward the object they passed in (decision D17), so every
 *   `validate*` returns the input object itself, and no schema uses `.default()` or transforms.
 * - Everything except the top level of create-params is a loose object: unknown fields are tolerated.
 * - Error text is one line naming the item index and field path (U14), never the object.
 *
 * The folder, bottom up: declared.ts (enum values and field lists, no zod) and scalars.ts → item-schemas.ts →
 * body-schemas.ts (the zod schemas); fast-path.ts (exact checks of the common shapes, from declared.ts alone)
 * and issue-text.ts (zod issues as one line) → validate.ts (the entry points); usage.ts, messages.ts and
 * placeholder-response.ts work on validated data. This file is the public entry and only re-exports.
 */
export {
  CreateParamsSchema,
  ResponseSchema,
  UsageSchema,
  type CreateParams,
  type ResponseObject,
  type Usage,
} from './body-schemas.js';
export {
  FunctionCallOutputSchema,
  FunctionCallSchema,
  InputItemSchema,
  OutputItemSchema,
  type FunctionCall,
  type FunctionCallOutput,
  type InputItem,
  type OutputItem,
} from './item-schemas.js';
export { validateCreateParams, validateResponse, validateUsage, type Validation } from './validate.js';
export { sumUsage } from './usage.js';
export { isAssistantMessage, normalizeInput } from './messages.js';
export { placeholderResponse } from './placeholder-response.js';
export * from './gym-wire.js';
