/**
 * The zod building blocks that both the item schemas and the top-level body schemas use, defined once so that
 * "an integer" or "an optional string" means the same thing in every field of the contract.
 */
import { z } from 'zod';

export const AnyObject = z.looseObject({});
export const Int = z.int();
export const nullableString = z.string().nullish();
