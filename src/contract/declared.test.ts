import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CreateParamsSchema, ResponseSchema, UsageSchema } from './body-schemas.js';
import {
  CREATE_PARAMS_KEYS,
  FUNCTION_CALL_KEYS,
  FUNCTION_CALL_OUTPUT_KEYS,
  REASONING_KEYS,
  RESPONSE_KEYS,
  TOKEN_METADATA_KEYS,
  USAGE_KEYS,
} from './declared.js';
import { FunctionCallOutputSchema, FunctionCallSchema, ReasoningItem, tokenMetadataShape } from './item-schemas.js';

const sorted = (keys: readonly string[]): string[] => [...keys].sort();

test("each zod-free field list is exactly its schema's fields (the fast path relies on them)", () => {
  for (const [name, keys, shape] of [
    ['create params', CREATE_PARAMS_KEYS, CreateParamsSchema.shape],
    ['response', RESPONSE_KEYS, ResponseSchema.shape],
    ['usage', USAGE_KEYS, UsageSchema.shape],
    ['function_call', FUNCTION_CALL_KEYS, FunctionCallSchema.shape],
    ['function_call_output', FUNCTION_CALL_OUTPUT_KEYS, FunctionCallOutputSchema.shape],
    ['reasoning', REASONING_KEYS, ReasoningItem.shape],
    ['token metadata', TOKEN_METADATA_KEYS, tokenMetadataShape],
  ] as const) {
    assert.deepEqual(sorted(keys), sorted(Object.keys(shape)), name);
  }
});
