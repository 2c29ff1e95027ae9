/**
 * Config blocks checked by zod. The field builders below each carry the rule an error states about their key, and
 * `parseBlock` turns the first failing key into the block's ConfigError paragraph (key, value as written, rule,
 * fix), so every block keeps its own wording while the checks themselves are declared once.
 *
 * Two processes keep zod out of their start-up on purpose and check their few keys by hand: the supervisor
 * (`colocate`, src/supervisor/colocate.ts) and the collector and `gym eval` (src/collect/config.ts,
 * src/config/switch.ts). Loading zod costs them about 150-200 ms each time (bench scenarios 4 and 8); every other
 * block is read in a process that loads zod anyway.
 */
import { z } from 'zod';
import { ConfigError } from '../errors.js';

/** What an error says about a key. */
export interface FieldRule {
  /** Completes "must be …", e.g. `a number of seconds > 0`. */
  rule: string;
  /** What to do about it, placed by the block's paragraph after the value. */
  fix?: string;
  /** The command-line flag that sets the key, named next to it. */
  flag?: string;
}

/** The first failing key of a block, as its paragraph words it. */
export interface FieldIssue extends FieldRule {
  key: string;
  /** The value as written in the config (never the default that stands in for an unset key). */
  value: unknown;
}

type Wording = Partial<FieldRule>;

// Zod issues know their path, not the field builder behind it: the rule is found through the key's schema.
const fieldRules = z.registry<FieldRule>();

function withRule<T extends z.ZodType>(schema: T, rule: string, wording: Wording): T {
  fieldRules.add(schema, { rule, ...wording });
  return schema;
}

/** An on/off key: YAML `true` or `false`; unset (absent or null) means `fallback`. */
export function onOff(fallback: boolean, wording: Wording = {}) {
  return withRule(
    z
      .boolean()
      .nullish()
      .transform((value) => value ?? fallback),
    'true or false',
    wording,
  );
}

/**
 * A number of seconds > 0; unset means `fallback`. Keys that have always taken `.inf` keep taking it
 * (`allowInfinity`); the others want a finite number.
 */
export function positiveSeconds<Fallback extends number | undefined>(
  fallback: Fallback,
  { allowInfinity = false, ...wording }: Wording & { allowInfinity?: boolean } = {},
) {
  const finite = z.number().gt(0);
  return withRule(
    (allowInfinity ? finite.or(z.literal(Infinity)) : finite).nullish().transform((value) => value ?? fallback),
    'a number of seconds > 0',
    wording,
  );
}

/** An integer >= `min` (any size: `Number.isInteger`, not zod's safe-integer range); unset means `fallback`. */
export function integerAtLeast<Fallback extends number | undefined>(
  min: number,
  fallback: Fallback,
  wording: Wording = {},
) {
  return withRule(
    z
      .number()
      .refine(Number.isInteger)
      .refine((value) => value >= min)
      .nullish()
      .transform((value) => value ?? fallback),
    `an integer >= ${min}`,
    wording,
  );
}

/** A string, non-empty and at most `maxLength` characters when a length is given; unset means `fallback()`. */
export function text<Fallback extends string | undefined>(
  fallback: () => Fallback,
  { maxLength, ...wording }: Wording & { maxLength?: number } = {},
) {
  const string = maxLength === undefined ? z.string() : z.string().min(1).max(maxLength);
  return withRule(
    string.nullish().transform((value) => value ?? fallback()),
    maxLength === undefined ? 'a string' : `a non-empty string of at most ${maxLength} characters`,
    wording,
  );
}

/**
 * `block` read through `schema`; the first failing key in the schema's key order (so list the keys in the order a
 * reader should fix them) is thrown as a ConfigError worded by `paragraph`.
 */
export function parseBlock<Schema extends z.ZodObject<z.ZodRawShape>>(
  schema: Schema,
  block: Record<string, unknown>,
  paragraph: (issue: FieldIssue) => string,
  code?: string,
): z.output<Schema> {
  const result = schema.safeParse(block);
  if (result.success) return result.data;
  const first = result.error.issues[0]!;
  const key = String(first.path[0]);
  const field = schema.shape[key];
  const rule = (field && fieldRules.get(field)) ?? { rule: first.message };
  throw new ConfigError(paragraph({ ...rule, key, value: block[key] }), code);
}

/** How a top-level key of the resolved config is reported: `Config value 'key' must be <rule>, got <value>.` */
export function configValueParagraph({ key, flag, rule, value, fix }: FieldIssue): string {
  const named = flag === undefined ? `'${key}'` : `'${key}' (${flag})`;
  return `Config value ${named} must be ${rule}, got ${JSON.stringify(value)}${fix === undefined ? '' : `; ${fix}`}.`;
}

/** How a key of a server instance's block is reported: `<where>.<key> must be <rule>, got <value>.`, then the fix. */
export function instanceKeyParagraph(where: string): (issue: FieldIssue) => string {
  return ({ key, rule, value, fix }) =>
    `${where}.${key} must be ${rule}, got ${JSON.stringify(value)}.${fix === undefined ? '' : ` ${fix}`}`;
}
