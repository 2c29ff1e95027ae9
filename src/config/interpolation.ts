/**
 * OmegaConf interpolations, resolved once at load time: `${a.b}`, `${.sibling}` / `${..uncle}`, `${a.b[0]}`,
 * `${oc.env:VAR}`, `${oc.env:VAR,default}`, `${oc.select:key,default}`, nested (`${oc.env:X,${a.b}}`), and
 * `\${` for a literal `${`. A value that is exactly one interpolation keeps the referenced value's type;
 * interpolations inside longer text are stringified the way Python prints them (True, None, 1.5).
 */
import { ConfigError } from '../errors.js';
import { interpretPrimitive } from './override-grammar.js';
import type { ConfigSources } from './sources.js';
import { formatPath, isPlainObject, type PlainObject } from './types.js';

type Path = Array<string | number>;

type Piece = { literal: string } | { expression: string };

/** Split text into literal runs and `${…}` bodies; undefined when there is nothing to resolve. */
function splitInterpolations(text: string): Piece[] | undefined {
  if (!text.includes('${')) return undefined;
  const pieces: Piece[] = [];
  let literal = '';
  let i = 0;
  while (i < text.length) {
    if (text.startsWith('\\${', i)) {
      literal += '${';
      i += 3;
      continue;
    }
    if (text.startsWith('${', i)) {
      const end = matchingBrace(text, i + 1);
      if (end === -1) {
        literal += text.slice(i);
        break;
      }
      if (literal !== '') pieces.push({ literal });
      literal = '';
      pieces.push({ expression: text.slice(i + 2, end) });
      i = end + 1;
      continue;
    }
    literal += text[i];
    i++;
  }
  if (literal !== '') pieces.push({ literal });
  return pieces;
}

/** Index of the `}` closing the `{` at `open`, honouring nesting and quotes; -1 when unclosed. */
function matchingBrace(text: string, open: number): number {
  let depth = 0;
  let quote: string | undefined;
  for (let i = open; i < text.length; i++) {
    const char = text[i];
    if (quote) {
      if (char === '\\') i++;
      else if (char === quote) quote = undefined;
    } else if (char === "'" || char === '"') quote = char;
    else if (char === '{') depth++;
    else if (char === '}' && --depth === 0) return i;
  }
  return -1;
}

/** Split resolver arguments at top-level commas. */
function splitArguments(text: string): string[] {
  const args: string[] = [];
  let depth = 0;
  let quote: string | undefined;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (quote) {
      if (char === '\\') i++;
      else if (char === quote) quote = undefined;
    } else if (char === "'" || char === '"') quote = char;
    else if (char === '{' || char === '[') depth++;
    else if (char === '}' || char === ']') depth--;
    else if (char === ',' && depth === 0) {
      args.push(text.slice(start, i));
      start = i + 1;
    }
  }
  args.push(text.slice(start));
  return args.map((arg) => arg.trim());
}

/** `a.b[0].c` / `..x` → segments, with the number of leading dots (0 = absolute). */
function parseKey(key: string): { dots: number; segments: string[] } {
  const dots = /^\.*/.exec(key)![0].length;
  const segments: string[] = [];
  for (const part of key.slice(dots).split('.')) {
    const bracketed = /^([^[\]]*)((?:\[[^\]]*\])*)$/.exec(part);
    if (!bracketed) {
      segments.push(part);
      continue;
    }
    if (bracketed[1] !== '') segments.push(bracketed[1]!);
    for (const index of bracketed[2]!.matchAll(/\[([^\]]*)\]/g)) segments.push(index[1]!.trim());
  }
  return { dots, segments: segments.filter((segment) => segment !== '') };
}

function pythonString(value: unknown): string {
  if (value === null || value === undefined) return 'None';
  if (value === true) return 'True';
  if (value === false) return 'False';
  if (typeof value === 'number')
    return Number.isNaN(value) ? 'nan' : value === Infinity ? 'inf' : value === -Infinity ? '-inf' : String(value);
  if (typeof value === 'string') return value;
  return JSON.stringify(value);
}

export class Interpolator {
  constructor(
    private readonly root: PlainObject,
    private readonly env: NodeJS.ProcessEnv,
    private readonly sources: ConfigSources,
  ) {}

  /** The fully resolved value at `path`, or undefined when nothing is there. */
  resolveAt(path: Path): unknown {
    const found = this.walk(path.map(String), [], []);
    return found.found ? this.resolveValue(found.value, found.path, []) : undefined;
  }

  resolveAll(): PlainObject {
    return this.resolveValue(this.root, [], []) as PlainObject;
  }

  private resolveValue(value: unknown, path: Path, stack: readonly string[]): unknown {
    if (typeof value === 'string') return this.resolveString(value, path, stack);
    if (Array.isArray(value)) return value.map((item, index) => this.resolveValue(item, [...path, index], stack));
    if (isPlainObject(value)) {
      const out: PlainObject = {};
      for (const [key, item] of Object.entries(value)) out[key] = this.resolveValue(item, [...path, key], stack);
      return out;
    }
    return value;
  }

  private resolveString(text: string, path: Path, stack: readonly string[]): unknown {
    const pieces = splitInterpolations(text);
    if (!pieces) return text;
    const here = formatPath(path);
    if (stack.includes(here)) {
      throw new ConfigError(
        `Config value '${here}'${this.sources.at(path)} is part of an interpolation cycle (${[...stack, here].join(' -> ')}). Make one of these a concrete value.`,
        'GYM_CONFIG_INTERPOLATION',
      );
    }
    const inner = [...stack, here];
    const only = pieces.length === 1 ? pieces[0]! : undefined;
    if (only && 'expression' in only) return this.evaluate(only.expression, path, inner);
    return pieces
      .map((piece) => ('literal' in piece ? piece.literal : pythonString(this.evaluate(piece.expression, path, inner))))
      .join('');
  }

  private evaluate(expression: string, path: Path, stack: readonly string[]): unknown {
    const resolverCall = /^\s*([A-Za-z_][\w.]*)\s*:([\s\S]*)$/.exec(expression);
    if (resolverCall)
      return this.callResolver(resolverCall[1]!, splitArguments(resolverCall[2]!), expression, path, stack);
    const key = String(this.resolveString(expression.trim(), path, stack));
    return this.reference(key, path, stack, () => {
      throw new ConfigError(
        `Config value '${formatPath(path)}'${this.sources.at(path)} references '${key}', which is not set after merging. Provide it via a CLI override, in env.yaml, or in a config you pass via config_paths. For example, on the command line: ++${key.replace(/^\.+/, '')}=<value>`,
        'GYM_CONFIG_INTERPOLATION',
      );
    });
  }

  private reference(key: string, path: Path, stack: readonly string[], onMissing: () => unknown): unknown {
    const { dots, segments } = parseKey(key);
    let base: string[] = [];
    if (dots > 0) {
      base = path.slice(0, -1).map(String);
      base = base.slice(0, Math.max(0, base.length - (dots - 1)));
    }
    const found = this.walk(segments, base, stack);
    if (!found.found) return onMissing();
    return this.resolveValue(found.value, found.path, stack);
  }

  /** Follow `segments` from `base`, resolving interpolated containers on the way. */
  private walk(
    segments: readonly string[],
    base: readonly string[],
    stack: readonly string[],
  ): { found: boolean; value?: unknown; path: Path } {
    let node: unknown = this.root;
    const path: Path = [];
    for (const segment of [...base, ...segments]) {
      if (typeof node === 'string') node = this.resolveString(node, path, stack);
      if (isPlainObject(node) && Object.hasOwn(node, segment)) {
        node = node[segment];
        path.push(segment);
      } else if (Array.isArray(node) && /^\d+$/.test(segment) && Number(segment) < node.length) {
        node = node[Number(segment)];
        path.push(Number(segment));
      } else return { found: false, path };
    }
    return { found: true, value: node, path };
  }

  private argument(text: string, path: Path, stack: readonly string[]): unknown {
    if (text.length >= 2 && (text[0] === "'" || text[0] === '"') && text.endsWith(text[0])) {
      const body = text.slice(1, -1).replace(new RegExp(`\\\\${text[0]}`, 'g'), text[0]);
      return pythonString(this.resolveString(body, path, stack));
    }
    if (text.includes('${')) return this.resolveString(text, path, stack);
    return text === '' ? '' : interpretPrimitive(text);
  }

  private callResolver(
    name: string,
    rawArgs: string[],
    expression: string,
    path: Path,
    stack: readonly string[],
  ): unknown {
    const where = `Config value '${formatPath(path)}'${this.sources.at(path)}`;
    if (name === 'oc.env') {
      if (rawArgs.length < 1 || rawArgs.length > 2 || rawArgs[0] === '') {
        throw new ConfigError(
          `${where} uses \${${expression}}: oc.env takes a variable name and an optional default, e.g. \${oc.env:MY_VAR,fallback}.`,
          'GYM_CONFIG_INTERPOLATION',
        );
      }
      const variable = String(this.argument(rawArgs[0]!, path, stack));
      const value = this.env[variable];
      if (value !== undefined) return value;
      if (rawArgs.length === 2) return this.argument(rawArgs[1]!, path, stack);
      throw new ConfigError(
        `${where} reads environment variable '${variable}' through \${${expression}}, but '${variable}' is not set. Export it (export ${variable}=…) before running, or give a default: \${oc.env:${variable},<default>}.`,
        'GYM_CONFIG_ENV_VAR',
      );
    }
    if (name === 'oc.select') {
      if (rawArgs.length < 1 || rawArgs.length > 2 || rawArgs[0] === '') {
        throw new ConfigError(
          `${where} uses \${${expression}}: oc.select takes a key and an optional default, e.g. \${oc.select:a.b,fallback}.`,
          'GYM_CONFIG_INTERPOLATION',
        );
      }
      const key = String(this.argument(rawArgs[0]!, path, stack));
      return this.reference(key, path, stack, () =>
        rawArgs.length === 2 ? this.argument(rawArgs[1]!, path, stack) : null,
      );
    }
    throw new ConfigError(
      `${where} uses the resolver '${name}' in \${${expression}}, which tsgym does not support. Supported: \${key.path}, \${oc.env:VAR}, \${oc.env:VAR,default} and \${oc.select:key,default}.`,
      'GYM_CONFIG_INTERPOLATION',
    );
  }
}
