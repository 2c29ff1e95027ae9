/**
 * OmegaConf merge semantics: mappings merge key by key, everything else (lists included) is replaced by the
 * later value, `null` overwrites, and a later `???` never overwrites an existing value.
 */
import { cloneData, isPlainObject, MISSING_VALUE, type PlainObject } from './types.js';

/** Merge `later` on top of `earlier`; neither input is mutated. */
export function deepMerge(earlier: unknown, later: unknown): unknown {
  if (later === MISSING_VALUE && earlier !== undefined) return cloneData(earlier);
  if (isPlainObject(earlier) && isPlainObject(later)) {
    const out: PlainObject = {};
    for (const [key, value] of Object.entries(earlier)) {
      out[key] = Object.hasOwn(later, key) ? deepMerge(value, later[key]) : cloneData(value);
    }
    for (const [key, value] of Object.entries(later)) {
      if (!Object.hasOwn(out, key)) out[key] = cloneData(value);
    }
    return out;
  }
  return cloneData(later);
}

/** Merge a sequence of mappings, lowest precedence first. */
export function mergeAll(layers: readonly PlainObject[]): PlainObject {
  let out: PlainObject = {};
  for (const layer of layers) out = deepMerge(out, layer) as PlainObject;
  return out;
}
