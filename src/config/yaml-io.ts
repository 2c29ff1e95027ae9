/** Reading and writing config YAML, with line numbers kept for error messages. */
import { isAlias, isMap, isScalar, isSeq, LineCounter, parseDocument, stringify, type Node } from 'yaml';
import { ConfigError } from '../errors.js';
import { formatPath, isPlainObject, type GlobalConfig } from './types.js';

/** Where a key was written: 1-based line and column. */
export interface SourcePosition {
  line: number;
  col: number;
}

export interface ParsedYamlSource {
  /** A file path, or a label such as `NEMO_GYM_CONFIG_DICT`. */
  source: string;
  data: GlobalConfig;
  /** Position of every key, by dotted path (`a.b[0].c`). */
  positions: Map<string, SourcePosition>;
}

function collectPositions(
  node: unknown,
  path: Array<string | number>,
  lines: LineCounter,
  out: Map<string, SourcePosition>,
): void {
  if (isMap(node)) {
    for (const pair of node.items) {
      const key = isScalar(pair.key) ? String(pair.key.value) : undefined;
      if (key === undefined) continue;
      const keyNode = pair.key as Node;
      const childPath = [...path, key];
      if (keyNode.range) out.set(formatPath(childPath), lines.linePos(keyNode.range[0]));
      collectPositions(pair.value, childPath, lines, out);
    }
  } else if (isSeq(node)) {
    node.items.forEach((item, index) => {
      const childPath = [...path, index];
      const range = (item as Node | null)?.range;
      if (range && !isAlias(item)) out.set(formatPath(childPath), lines.linePos(range[0]));
      collectPositions(item, childPath, lines, out);
    });
  }
}

/** Parse one YAML document that must hold a mapping (an empty document is `{}`). */
export function parseYamlSource(text: string, source: string): ParsedYamlSource {
  const lines = new LineCounter();
  // OmegaConf reads YAML with PyYAML: duplicate keys are an error and `<<` merge keys work.
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true, merge: true });
  const error = doc.errors[0];
  if (error) {
    const { line, col } = lines.linePos(error.pos[0]);
    const problem = error.message.replace(/\s+/g, ' ').trim();
    throw new ConfigError(
      `Malformed YAML in '${source}' at line ${line}, column ${col}: ${problem}. Fix the YAML syntax there (check indentation, quoting and that every key is unique).`,
      'GYM_CONFIG_YAML',
    );
  }
  let data: unknown;
  try {
    data = doc.toJS({ maxAliasCount: 1000 });
  } catch (err) {
    throw new ConfigError(`Malformed YAML in '${source}': ${(err as Error).message}.`, 'GYM_CONFIG_YAML');
  }
  if (data === null || data === undefined) data = {};
  if (!isPlainObject(data)) {
    throw new ConfigError(
      `Config '${source}' must hold a mapping of keys to values at the top level, but it holds ${Array.isArray(data) ? 'a list' : `the value ${JSON.stringify(data)}`}. Write it as 'key: value' lines.`,
      'GYM_CONFIG_YAML',
    );
  }
  const positions = new Map<string, SourcePosition>();
  collectPositions(doc.contents, [], lines, positions);
  return { source, data, positions };
}

/** Parse config YAML text (e.g. `NEMO_GYM_CONFIG_DICT` or a head server's answer) into plain data. */
export function parseConfigYaml(text: string, source: string): GlobalConfig {
  return parseYamlSource(text, source).data;
}

/** Dump a config as YAML. Shared objects are written out in full, never as anchors/aliases. */
export function serializeConfig(config: GlobalConfig): string {
  return stringify(config, { aliasDuplicateObjects: false, lineWidth: 0 });
}
