/**
 * A Dockerfile's `COPY`/`ADD`, resolved at load time into the files it puts into the work dir: sources from the
 * build context (`environment/`, never outside it, symlinks included), `*`/`?` globs in a source's last part,
 * heredoc sources (`COPY <<EOF file`), directories copied by their contents, `--chmod`. The destination, taken
 * against the current WORKDIR, must lie inside the session's work dir.
 */
import { lstatSync, readdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { HarborTaskError, insideMount, sandboxPath, substitute, words, type Instruction } from './dockerfile.js';

/** A file to put into the work dir, its path relative to it. */
export interface SeedFile {
  content: Buffer;
  mode: number;
}

export interface CopyContext {
  /** `<task>/environment/Dockerfile`, for messages. */
  where: string;
  /** The build context on the host. */
  contextDir: string;
  cwd: string;
  mount: string;
  vars: Readonly<Record<string, string>>;
  /** Sandbox paths known to be directories (the mount, WORKDIRs, what earlier copies made). */
  knownDirs: Set<string>;
}

export interface CopyResult {
  files: Record<string, SeedFile>;
  /** Directories to make, relative to the work dir (empty ones included). */
  dirs: string[];
}

/** Resolve one COPY or ADD instruction. */
export function resolveCopy(instruction: Instruction, context: CopyContext): CopyResult {
  const at = `${context.where}:${instruction.line}`;
  const tokens = words(instruction.args);
  let mode: number | undefined;
  while (tokens[0]?.startsWith('--')) {
    const flag = tokens.shift()!;
    if (flag.startsWith('--from='))
      throw new HarborTaskError(
        `${at}: ${instruction.keyword} ${flag} copies from another image or stage, which is not built here`,
      );
    if (flag.startsWith('--chmod=')) mode = parseInt(flag.slice('--chmod='.length), 8) & 0o755;
  }
  const heredocs = [...instruction.heredocs];
  const parts = tokens.map((token) => (token.startsWith('<<') ? token : substitute(token, context.vars)));
  if (parts.length < 2) throw new HarborTaskError(`${at}: ${instruction.keyword} needs a source and a destination`);
  const dest = parts.pop()!;
  const destAbs = sandboxPath(context.cwd, dest);
  const destRel = insideMount(context.mount, destAbs);
  if (destRel === undefined)
    throw new HarborTaskError(
      `${at}: ${instruction.keyword} writes to ${destAbs}, outside the work dir ${context.mount}: only the work dir (the first WORKDIR) is the session's to fill; move the files under it`,
    );
  const sources = parts.flatMap((source) => expandSource(source, context, at, instruction.keyword));
  const intoDir = dest.endsWith('/') || parts.length > 1 || /[*?]/.test(parts[0]!) || context.knownDirs.has(destAbs);
  const result: CopyResult = { files: {}, dirs: [] };
  for (const source of sources) {
    if (source.startsWith('<<')) {
      const doc = heredocs.shift();
      if (!doc) throw new HarborTaskError(`${at}: ${source} has no heredoc body`);
      const target = intoDir ? join(destRel, doc.delimiter) : destRel;
      result.files[target] = { content: Buffer.from(doc.body), mode: mode ?? 0o644 };
    } else if (statSync(source).isDirectory()) {
      addTree(source, destRel, mode, result);
    } else {
      const target = intoDir ? join(destRel, path.basename(source)) : destRel;
      result.files[target] = { content: readFileSync(source), mode: mode ?? statSync(source).mode & 0o755 };
    }
  }
  for (const file of Object.keys(result.files)) {
    for (let dir = path.posix.dirname(file); dir !== '.'; dir = path.posix.dirname(dir)) result.dirs.push(dir);
  }
  if (
    destRel !== '' &&
    (intoDir || sources.some((source) => !source.startsWith('<<') && statSync(source).isDirectory()))
  )
    result.dirs.push(destRel);
  for (const dir of result.dirs) context.knownDirs.add(sandboxPath(context.mount, dir));
  return result;
}

/** A source's host paths: inside the build context (checked through symlinks), its last part's glob expanded. */
function expandSource(source: string, context: CopyContext, at: string, keyword: string): string[] {
  if (source.startsWith('<<')) return [source];
  if (/^[a-z]+:\/\//i.test(source))
    throw new HarborTaskError(
      `${at}: ${keyword} ${source} fetches from the network, which sandboxes have not; put the file into environment/`,
    );
  const relative = path.posix.normalize(source.replace(/^\/+/, '') || '.');
  if (relative === '..' || relative.startsWith('../'))
    throw new HarborTaskError(
      `${at}: ${keyword} ${source} lies outside the build context (environment/); copy only files under it`,
    );
  const base = path.posix.basename(relative);
  const candidates = /[*?]/.test(base)
    ? globIn(path.join(context.contextDir, path.posix.dirname(relative)), base)
    : [path.join(context.contextDir, relative)];
  if (candidates.length === 0)
    throw new HarborTaskError(`${at}: ${keyword} ${source} matches nothing under environment/`);
  const root = realpathSync(context.contextDir);
  for (const candidate of candidates) {
    let real: string;
    try {
      real = realpathSync(candidate);
    } catch {
      throw new HarborTaskError(`${at}: ${keyword} ${source}: no such file under environment/`);
    }
    if (real !== root && !real.startsWith(`${root}${path.sep}`))
      throw new HarborTaskError(
        `${at}: ${keyword} ${source} resolves outside environment/ (through a symlink); copy only files under it`,
      );
  }
  return candidates;
}

function globIn(dir: string, pattern: string): string[] {
  const regex = new RegExp(
    `^${pattern
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '[^/]*')
      .replace(/\?/g, '[^/]')}$`,
  );
  try {
    return readdirSync(dir)
      .filter((name) => regex.test(name))
      .sort()
      .map((name) => path.join(dir, name));
  } catch {
    return [];
  }
}

/** A directory's contents (not itself), under `destRel`. Symlinks inside it are not followed. */
function addTree(dir: string, destRel: string, mode: number | undefined, result: CopyResult): void {
  for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
    const source = path.join(dir, entry.name);
    const target = join(destRel, entry.name);
    if (entry.isDirectory()) {
      result.dirs.push(target);
      addTree(source, target, mode, result);
    } else if (entry.isFile()) {
      result.files[target] = { content: readFileSync(source), mode: mode ?? lstatSync(source).mode & 0o755 };
    }
  }
}

function join(dir: string, name: string): string {
  return dir === '' ? name : `${dir}/${name}`;
}
