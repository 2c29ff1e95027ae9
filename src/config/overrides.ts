/**
 * Hydra-style command-line overrides with no primary config: the tokens alone build a dict
 * (`+a.b=1` → `{a: {b: 1}}`), which is merged on top of every config file later.
 */
import { ConfigError } from '../errors.js';
import { deepMerge } from './merge.js';
import { OverrideSyntaxError, parseOverrideValue } from './override-grammar.js';
import { isPlainObject, type PlainObject } from './types.js';

export type OverrideKind = 'add' | 'force-add' | 'delete';

export interface ParsedOverride {
  token: string;
  kind: OverrideKind;
  /** Key segments: `a.b.0` → ['a', 'b', '0'] */
  path: string[];
  /** undefined for a `~key` without a value */
  value?: unknown;
}

const KEY_SEGMENT = /^(?:[A-Za-z_$][\w$\-/]*|\d+)$/;

function overrideError(token: string, problem: string): ConfigError {
  return new ConfigError(`Invalid command-line override '${token}': ${problem}`, 'GYM_CONFIG_OVERRIDE');
}

/** Split one token into prefix, key and value, and parse the value. */
export function parseOverrideToken(token: string): ParsedOverride {
  let kind: OverrideKind | undefined;
  let rest = token;
  if (token.startsWith('++')) {
    kind = 'force-add';
    rest = token.slice(2);
  } else if (token.startsWith('+')) {
    kind = 'add';
    rest = token.slice(1);
  } else if (token.startsWith('~')) {
    kind = 'delete';
    rest = token.slice(1);
  }
  const equals = rest.indexOf('=');
  const keyText = (equals === -1 ? rest : rest.slice(0, equals)).trim();
  const valueText = equals === -1 ? undefined : rest.slice(equals + 1);

  if (kind === undefined) {
    if (valueText === undefined) {
      throw overrideError(
        token,
        `it is not of the form +key=value. Overrides add keys with +key=value, add or replace them with ++key=value, and delete them with ~key.`,
      );
    }
    throw overrideError(
      token,
      `Could not override '${keyText}'. To append to your config use +${keyText}=${valueText} (or ++${keyText}=${valueText} to add or replace). tsgym starts from an empty config, so every override needs + or ++.`,
    );
  }
  if (keyText === '') throw overrideError(token, 'the key is empty. Write +key=value, e.g. +limit=5.');
  const path = keyText.split('.');
  const badSegment = path.find((segment) => !KEY_SEGMENT.test(segment));
  if (badSegment !== undefined) {
    throw overrideError(
      token,
      `'${keyText}' is not a valid key: dotted segments may use letters, digits, '_', '-', '$' and '/'.`,
    );
  }
  if (kind !== 'delete' && valueText === undefined) {
    throw overrideError(token, `it has no '='. Write ${token}=<value> (an empty value is written ${token}=).`);
  }
  if (valueText === undefined) return { token, kind, path };
  try {
    return { token, kind, path, value: parseOverrideValue(valueText) };
  } catch (err) {
    if (!(err instanceof OverrideSyntaxError)) throw err;
    if (err.message === 'sweep') {
      throw overrideError(
        token,
        `the value '${valueText}' is ambiguous: a bare comma list is a Hydra multirun sweep, which tsgym does not run. To pass a list write ${keyText}=[${valueText}], to pass a string containing commas quote it: ${keyText}='${valueText}'.`,
      );
    }
    throw overrideError(
      token,
      `the value '${valueText}' does not parse (${err.message}). Quote strings that contain = , [ ] { } ( ) or quotes, e.g. '+${keyText}="a,b"'.`,
    );
  }
}

function describe(value: unknown): string {
  return JSON.stringify(value) ?? String(value);
}

/** Apply one parsed override to the dict being built, with Hydra's add / force-add / delete rules. */
function applyOverride(dict: PlainObject, override: ParsedOverride): void {
  const { path, token } = override;
  let parent: PlainObject = dict;
  for (let i = 0; i < path.length - 1; i++) {
    const segment = path[i]!;
    const next = parent[segment];
    if (next === undefined || next === null) {
      if (override.kind === 'delete')
        throw overrideError(token, `Could not delete from config. '${path.join('.')}' does not exist.`);
      parent[segment] = {};
    } else if (!isPlainObject(next)) {
      throw overrideError(
        token,
        `'${path.slice(0, i + 1).join('.')}' already holds ${describe(next)} (set by an earlier override), so it cannot hold the key '${path[i + 1]}'.`,
      );
    }
    parent = parent[segment] as PlainObject;
  }
  const leaf = path[path.length - 1]!;
  const existing = parent[leaf];
  const key = path.join('.');

  if (override.kind === 'delete') {
    if (!Object.hasOwn(parent, leaf))
      throw overrideError(
        token,
        `Could not delete from config. '${key}' does not exist (~ only removes keys set by earlier overrides on the same command line).`,
      );
    if ('value' in override && describe(existing) !== describe(override.value)) {
      throw overrideError(
        token,
        `Could not delete from config. The value of '${key}' is ${describe(existing)} and not ${describe(override.value)}.`,
      );
    }
    delete parent[leaf];
    return;
  }
  const value = override.value;
  const isContainer = Array.isArray(value) || isPlainObject(value);
  if (override.kind === 'add' && existing !== undefined && existing !== null && !isContainer) {
    throw overrideError(
      token,
      `Could not append to config. An item is already at '${key}'. Use ++${key}=… to add or replace it, or drop the earlier +${key}.`,
    );
  }
  parent[leaf] = existing === undefined || existing === null ? value : deepMerge(existing, value);
}

/**
 * Build the CLI dict from override tokens, in order. Throws `ConfigError` naming the offending token.
 */
export function parseOverrides(tokens: readonly string[]): Record<string, unknown> {
  const dict: PlainObject = {};
  for (const token of tokens) applyOverride(dict, parseOverrideToken(token));
  return dict;
}
