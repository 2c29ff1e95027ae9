/**
 * Structural directives, applied once to the merged config (reference `_recursively_swap_keys`):
 * `${inherit_from:a.b}` / `{_inherit_from: a.b, …}` move a value here (the source is deleted),
 * `${copy:a.b}` / `{_copy: a.b, …}` copy it (the source stays), `_delete_key: "k1, k2"` drops keys.
 * Sources are read from a snapshot taken before the pass. Unlike the reference, directives inside a moved
 * value are applied too, so chained inheritance (A from B, B from C) resolves.
 */
import { ConfigError } from '../errors.js';
import { deepMerge } from './merge.js';
import type { ConfigSources } from './sources.js';
import { cloneData, formatPath, isPlainObject, type PlainObject } from './types.js';

type Path = Array<string | number>;

const STRING_DIRECTIVE = /^\$\{\s*(inherit_from|copy)\s*:\s*([^}]*)\}$/;

function splitDotted(text: string): string[] {
  return text.split('.').map((segment) => segment.trim());
}

function lookup(root: unknown, path: readonly string[]): { found: boolean; value?: unknown } {
  let node = root;
  for (const segment of path) {
    if (isPlainObject(node) && Object.hasOwn(node, segment)) node = node[segment];
    else if (Array.isArray(node) && /^\d+$/.test(segment) && Number(segment) < node.length)
      node = node[Number(segment)];
    else return { found: false };
  }
  return { found: true, value: node };
}

function deleteAt(root: unknown, path: readonly string[]): void {
  const parent = lookup(root, path.slice(0, -1));
  const leaf = path[path.length - 1]!;
  if (isPlainObject(parent.value)) delete parent.value[leaf];
  else if (Array.isArray(parent.value) && /^\d+$/.test(leaf)) parent.value.splice(Number(leaf), 1);
}

class DirectivePass {
  private readonly snapshot: unknown;

  constructor(
    private readonly root: PlainObject,
    private readonly sources: ConfigSources,
  ) {
    this.snapshot = cloneData(root);
  }

  run(): PlainObject {
    return this.process(this.root, [], []) as PlainObject;
  }

  /** Read `sourceText` from the snapshot; delete it from the live tree when moving. */
  private take(sourceText: unknown, move: boolean, path: Path, directive: string, chain: readonly string[]): unknown {
    if (typeof sourceText !== 'string' || sourceText.trim() === '') {
      throw new ConfigError(
        `Config value '${formatPath(path)}'${this.sources.at(path)} uses ${directive} with ${JSON.stringify(sourceText)}, which is not a dotted path. Write it like ${directive}: my_server or ${directive}: a.b.c.`,
        'GYM_CONFIG_INHERIT',
      );
    }
    if (chain.includes(sourceText.trim())) {
      throw new ConfigError(
        `Config value '${formatPath(path)}'${this.sources.at(path)} uses ${directive} '${sourceText}', which leads back to itself (${[...chain, sourceText.trim()].join(' -> ')}). Break the cycle.`,
        'GYM_CONFIG_INHERIT',
      );
    }
    const sourcePath = splitDotted(sourceText);
    const { found, value } = lookup(this.snapshot, sourcePath);
    if (!found) {
      throw new ConfigError(
        `Path specified does not exist in config: [${sourcePath.map((s) => `'${s}'`).join(', ')}]. Config value '${formatPath(path)}'${this.sources.at(path)} uses ${directive} '${sourceText}', but nothing is defined at that path after merging. Check the spelling, or add the config that defines it to config_paths.`,
        'GYM_CONFIG_INHERIT',
      );
    }
    if (move) deleteAt(this.root, sourcePath);
    return cloneData(value);
  }

  private process(value: unknown, path: Path, chain: readonly string[]): unknown {
    if (typeof value === 'string') {
      const match = STRING_DIRECTIVE.exec(value);
      if (!match) return value;
      const directive = `\${${match[1]}:…}`;
      const source = match[2]!.trim();
      return this.process(this.take(source, match[1] === 'inherit_from', path, directive, chain), path, [
        ...chain,
        source,
      ]);
    }
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) value[i] = this.process(value[i], [...path, i], chain);
      return value;
    }
    if (!isPlainObject(value)) return value;

    const hasInherit = Object.hasOwn(value, '_inherit_from');
    const hasCopy = Object.hasOwn(value, '_copy');
    if (hasInherit && hasCopy) {
      throw new ConfigError(
        `Config value '${formatPath(path)}'${this.sources.at(path)} sets both _inherit_from and _copy. Use one: _inherit_from moves the source here, _copy copies it and keeps the original.`,
        'GYM_CONFIG_INHERIT',
      );
    }
    const sourceText = hasInherit ? value._inherit_from : value._copy;
    const deleteKeys = this.deleteKeys(value._delete_key, path);
    delete value._inherit_from;
    delete value._copy;
    delete value._delete_key;

    const pending: string[] = [];
    for (const key of deleteKeys) {
      if (Object.hasOwn(value, key)) delete value[key];
      else pending.push(key);
    }
    let result: PlainObject = value;
    let childChain = chain;
    if (hasInherit || hasCopy) {
      const directive = hasInherit ? '_inherit_from' : '_copy';
      childChain = [...chain, String(sourceText).trim()];
      // The source may itself inherit: resolve it fully before the local keys go on top.
      const base = this.process(this.take(sourceText, hasInherit, path, directive, chain), path, childChain);
      if (!isPlainObject(base)) return Object.keys(value).length > 0 ? this.process(value, path, childChain) : base;
      result = deepMerge(base, value) as PlainObject;
      for (const key of pending) {
        if (!Object.hasOwn(result, key)) {
          throw new ConfigError(
            `Config value '${formatPath(path)}'${this.sources.at(path)} lists '${key}' in _delete_key, but the value it inherits from '${String(sourceText)}' has no key '${key}'. Remove '${key}' from _delete_key or fix the key name.`,
            'GYM_CONFIG_INHERIT',
          );
        }
        delete result[key];
      }
    }
    for (const key of Object.keys(result)) {
      if (!Object.hasOwn(result, key)) continue; // removed by an _inherit_from earlier in this pass
      result[key] = this.process(result[key], [...path, key], childChain);
    }
    return result;
  }

  private deleteKeys(raw: unknown, path: Path): string[] {
    if (raw === undefined || raw === null) return [];
    if (typeof raw === 'string')
      return raw
        .split(',')
        .map((key) => key.trim())
        .filter((key) => key !== '');
    if (Array.isArray(raw) && raw.every((key) => typeof key === 'string')) return raw.map((key) => key.trim());
    throw new ConfigError(
      `Config value '${formatPath([...path, '_delete_key'])}'${this.sources.at([...path, '_delete_key'])} must be a comma-separated string of keys, e.g. _delete_key: "datasets, port". Got ${JSON.stringify(raw)}.`,
      'GYM_CONFIG_INHERIT',
    );
  }
}

/** Apply every directive; returns the transformed root (the input object is modified in place). */
export function applyDirectives(root: PlainObject, sources: ConfigSources): PlainObject {
  return new DirectivePass(root, sources).run();
}
