/**
 * A Harbor task's `environment/Dockerfile`, read as a list of steps to apply inside a session's sandbox over the
 * host's system (no image is built or pulled): `WORKDIR` places the work dir (the first one is where the session's
 * work dir is mounted, e.g. /app; later ones must stay inside it), `ENV` and `ARG` feed the commands' environment,
 * `COPY`/`ADD` take files from `environment/` into the work dir, and `RUN` steps run as commands in the sandbox.
 * `FROM` only names the base image, which is not used; every other instruction (`EXPOSE`, `CMD`, `USER`, …) is
 * ignored with a note. What cannot be honoured this way (a multi-stage build, a `COPY --from`, an `ADD` of a URL, a
 * path outside the work dir or outside `environment/`) is a `HarborTaskError` naming the Dockerfile line.
 */
import { TaskError } from '../tasks.js';

export class HarborTaskError extends TaskError {}

/** One instruction, its continuation lines joined; `heredocs` holds the `<<WORD` documents it introduced. */
export interface Instruction {
  line: number;
  keyword: string;
  args: string;
  heredocs: Heredoc[];
}

export interface Heredoc {
  /** The word that ends it (`EOF`). */
  delimiter: string;
  /** Its lines, each ending in a newline. */
  body: string;
}

/** The paths a WORKDIR may not be (the sandbox's own mounts, the host's read-only system dirs, the root). */
const RESERVED_MOUNTS = ['/usr', '/etc', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/proc', '/dev'];
const RESERVED_MOUNTS_TOO = ['/tmp', '/.tsgym', '/tests', '/solution', '/logs', '/check'];

const HEREDOC = /<<(-?)(["']?)([A-Za-z_][A-Za-z0-9_]*)\2/g;

/** Split a Dockerfile into instructions: comments and blank lines dropped, `\` continuations joined, heredocs read. */
export function parseDockerfile(text: string, where: string): Instruction[] {
  const lines = text.replace(/\r\n/g, '\n').split('\n');
  const instructions: Instruction[] = [];
  let index = 0;
  while (index < lines.length) {
    const start = index;
    let logical = '';
    for (;;) {
      const raw = lines[index++] ?? '';
      // A comment line inside a continuation is dropped, as Docker does.
      if (/^\s*#/.test(raw) && logical !== '') continue;
      if (raw.endsWith('\\') && index < lines.length) {
        logical += `${raw.slice(0, -1)} `;
        continue;
      }
      logical += raw;
      break;
    }
    const trimmed = logical.trim();
    if (trimmed === '' || trimmed.startsWith('#')) continue;
    const match = /^(\S+)\s*([\s\S]*)$/.exec(trimmed)!;
    const heredocs: Heredoc[] = [];
    if (/^(RUN|COPY|ADD)$/i.test(match[1]!)) {
      for (const doc of match[2]!.matchAll(HEREDOC)) {
        const body: string[] = [];
        for (;;) {
          if (index >= lines.length)
            throw new HarborTaskError(`${where}:${start + 1}: the heredoc <<${doc[3]} never ends`);
          const raw = lines[index++]!;
          if ((doc[1] === '-' ? raw.replace(/^\t+/, '') : raw) === doc[3]) break;
          body.push(raw);
        }
        heredocs.push({ delimiter: doc[3], body: body.length > 0 ? `${body.join('\n')}\n` : '' });
      }
    }
    instructions.push({ line: start + 1, keyword: match[1]!.toUpperCase(), args: match[2]!.trim(), heredocs });
  }
  return instructions;
}

/** `$NAME` and `${NAME}` (with `:-default`) replaced from `vars`; an unknown name becomes empty, as in Docker. */
export function substitute(text: string, vars: Readonly<Record<string, string>>): string {
  return text.replace(
    /\\\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)/g,
    (whole, braced: string | undefined, fallback: string | undefined, bare: string | undefined) => {
      if (whole === '\\$') return '$';
      const value = vars[braced ?? bare!];
      return value === undefined || value === '' ? (fallback ?? '') : value;
    },
  );
}

/** Words of an instruction's arguments: a JSON array (exec form), or whitespace-separated with quotes honoured. */
export function words(args: string): string[] {
  if (args.startsWith('[')) {
    try {
      const parsed: unknown = JSON.parse(args);
      if (Array.isArray(parsed) && parsed.every((item) => typeof item === 'string')) return parsed;
    } catch {
      // Not JSON after all: read it as words, as Docker does.
    }
  }
  const out: string[] = [];
  let current = '';
  let inWord = false;
  let quote: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const char = args[i]!;
    if (quote !== undefined) {
      if (char === quote) quote = undefined;
      else if (char === '\\' && quote === '"' && i + 1 < args.length) current += args[++i];
      else current += char;
    } else if (char === '"' || char === "'") {
      quote = char;
      inWord = true;
    } else if (char === '\\' && i + 1 < args.length) {
      current += args[++i];
      inWord = true;
    } else if (/\s/.test(char)) {
      if (inWord) out.push(current);
      current = '';
      inWord = false;
    } else {
      current += char;
      inWord = true;
    }
  }
  if (inWord) out.push(current);
  return out;
}

/** `KEY=VALUE …` pairs (or the legacy `KEY VALUE` form) of an ENV, ARG or LABEL line, values still unsubstituted. */
export function pairs(args: string): Array<[string, string | undefined]> {
  const first = /^\S+/.exec(args)?.[0] ?? '';
  if (!first.includes('=')) {
    const rest = args.slice(first.length).trim();
    return [[first, rest === '' ? undefined : rest.replace(/^(["'])([\s\S]*)\1$/, '$2')]];
  }
  return words(args).map((word) => {
    const eq = word.indexOf('=');
    return eq < 0 ? [word, undefined] : [word.slice(0, eq), word.slice(eq + 1)];
  });
}

/** A path inside the sandbox, normalised (`.` and `..` resolved; relative ones against `cwd`). */
export function sandboxPath(cwd: string, target: string): string {
  const parts: string[] = [];
  for (const part of (target.startsWith('/') ? target : `${cwd}/${target}`).split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') parts.pop();
    else parts.push(part);
  }
  return `/${parts.join('/')}`;
}

/** Why `mount` cannot be a session's work dir, or undefined when it can. */
export function unusableMount(mount: string): string | undefined {
  if (mount === '/') return 'the root itself cannot be the work dir';
  const clash = [...RESERVED_MOUNTS, ...RESERVED_MOUNTS_TOO].find(
    (reserved) => mount === reserved || mount.startsWith(`${reserved}/`),
  );
  if (clash) return `${clash} is the sandbox's own (the host's read-only system, or a mount of the environment)`;
  return undefined;
}

/** `path` relative to `mount`, or undefined when it lies outside it. */
export function insideMount(mount: string, target: string): string | undefined {
  if (target === mount) return '';
  return target.startsWith(`${mount}/`) ? target.slice(mount.length + 1) : undefined;
}
