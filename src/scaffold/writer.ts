/**
 * Writes a scaffold without ever overwriting: every target is checked before the first byte is written, and when
 * anything is in the way nothing is written at all and one paragraph says what and why. Each file is then created
 * with the exclusive flag, so a file that appears in between still fails rather than being replaced.
 */
import { existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ConfigError } from '../errors.js';

export interface ScaffoldFile {
  /** Relative to the scaffold's folder. */
  path: string;
  content: string;
}

/** What stands in the way of writing `files` under `<cwd>/<folder>`, as relative paths; empty when nothing does. */
function obstacles(cwd: string, folder: string, files: readonly ScaffoldFile[]): string[] {
  const targets = files.map((file) => path.join(folder, file.path));
  // Every folder on the way to a target must be a folder, or not exist yet.
  const folders = new Set<string>();
  for (const target of targets)
    for (let dir = path.dirname(target); dir !== '.'; dir = path.dirname(dir)) folders.add(dir);
  const blocked = [...folders]
    .sort()
    .filter((dir) => existsSync(path.join(cwd, dir)) && !statSync(path.join(cwd, dir)).isDirectory());
  if (blocked.length > 0) return blocked.map((dir) => `${dir} (a file where a folder goes)`);
  const existing = targets.filter((target) => existsSync(path.join(cwd, target)));
  if (existing.length > 0) return existing;
  // None of the targets, but the folder holds something else: someone's work, which a scaffold must not mix with.
  const root = path.join(cwd, folder);
  const entries = existsSync(root) ? readdirSync(root).sort() : [];
  return entries.length > 0 ? [`${folder}/ (holding ${entries.join(', ')})`] : [];
}

/**
 * Write `files` under `<cwd>/<folder>`, creating folders as needed. Throws a `ConfigError` (exit 1, one paragraph)
 * naming what exists when anything does, before writing anything.
 */
export function writeScaffold(cwd: string, folder: string, files: readonly ScaffoldFile[], command: string): void {
  const inTheWay = obstacles(cwd, folder, files);
  if (inTheWay.length > 0) {
    throw new ConfigError(
      `${command} wrote nothing: ${inTheWay.join(', ')} already exist${inTheWay.length === 1 ? 's' : ''} in ${cwd}, and ` +
        'gym new never overwrites or mixes its files with yours. Choose another name, or move the existing files away and run it again.',
      'GYM_SCAFFOLD_EXISTS',
    );
  }
  for (const file of files) {
    const target = path.join(cwd, folder, file.path);
    mkdirSync(path.dirname(target), { recursive: true });
    writeFileSync(target, file.content, { flag: 'wx' });
  }
}
