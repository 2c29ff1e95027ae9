/**
 * `config_paths` expansion (reference `load_extra_config_paths`): includes are discovered breadth-first, each
 * file is loaded once, and files merge in post-order — a file after everything it pulled in, siblings in
 * listed order — so roots [A, B] with A → [A1, A2] and B → [B1] merge as A1, A2, A, B1, B.
 */
import { readFileSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { ConfigError } from '../errors.js';
import { findUnderRoots } from './roots.js';
import { parseYamlSource, type ParsedYamlSource } from './yaml-io.js';

export interface LoadedConfigFile {
  /** The entry as written in `config_paths`. */
  entry: string;
  file: string;
  parsed: ParsedYamlSource;
}

export interface ExpandedConfigPaths {
  /** Lowest precedence first. */
  mergeOrder: LoadedConfigFile[];
  /** Every entry, in discovery (breadth-first) order: the final value of `config_paths`. */
  discovered: string[];
}

interface IncludeNode extends LoadedConfigFile {
  children: IncludeNode[];
}

/** Validate a `config_paths` value: absent/null → [], otherwise a list of strings. */
export function readConfigPathsValue(value: unknown, where: string): string[] {
  if (value === undefined || value === null) return [];
  if (Array.isArray(value) && value.every((entry) => typeof entry === 'string')) return value;
  throw new ConfigError(
    `'config_paths' must be a list of paths. Got: ${JSON.stringify(value)} (${where}). Pass each config with --config PATH, or as "+config_paths=[a.yaml,b.yaml]".`,
    'GYM_CONFIG_PATHS_MALFORMED',
  );
}

export function readYamlFile(file: string): ParsedYamlSource {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(
      `Could not read config file '${file}': ${(err as Error).message}. Check that it is a readable file.`,
      'GYM_CONFIG_PATH_UNREADABLE',
    );
  }
  return parseYamlSource(text, file);
}

function resolveEntry(entry: string, roots: readonly string[], listedIn: string): string {
  const found = findUnderRoots(entry, roots);
  if (found !== undefined && statSync(found).isFile()) return found;
  const looked = path.isAbsolute(entry) ? [entry] : roots.map((root) => path.join(root, entry));
  throw new ConfigError(
    `config_paths entry '${entry}' (${listedIn}) was not found. Looked in: ${looked.join(', ')}. Check the path is spelled correctly and is relative to your working directory, an extra root (NEMO_GYM_EXTRA_ROOTS / --search-dir), or the Gym install root.`,
    'GYM_CONFIG_PATH_NOT_FOUND',
  );
}

export function expandConfigPaths(
  entries: readonly string[],
  roots: readonly string[],
  /** Where the top-level entries came from, for error messages. */
  origin: string,
  warn: (message: string) => void,
): ExpandedConfigPaths {
  const topLevel: IncludeNode[] = [];
  const loaded = new Map<string, IncludeNode>();
  const discovered: string[] = [];
  const queue: Array<{ entry: string; parent: IncludeNode | undefined }> = entries.map((entry) => ({
    entry,
    parent: undefined,
  }));

  for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
    const { entry, parent } = next;
    const listedIn = parent ? `listed in '${parent.file}'` : origin;
    const file = resolveEntry(entry, roots, listedIn);
    const identity = realpathSync(file);
    const earlier = loaded.get(identity);
    if (earlier) {
      if (parent) {
        warn(
          `Found configs that reference the same source config path: '${entry}' (${listedIn}) was already loaded via '${earlier.entry}', so it is merged once, at its first place. To reuse a server under another name, use _inherit_from or _copy.`,
        );
      }
      continue;
    }
    const node: IncludeNode = { entry, file, parsed: readYamlFile(file), children: [] };
    loaded.set(identity, node);
    discovered.push(entry);
    (parent ? parent.children : topLevel).push(node);
    const includes = readConfigPathsValue(node.parsed.data.config_paths, `in '${file}'`);
    for (const include of includes) queue.push({ entry: include, parent: node });
  }

  const mergeOrder: LoadedConfigFile[] = [];
  const visit = (node: IncludeNode): void => {
    for (const child of node.children) visit(child);
    mergeOrder.push({ entry: node.entry, file: node.file, parsed: node.parsed });
  };
  for (const node of topLevel) visit(node);
  return { mergeOrder, discovered };
}
