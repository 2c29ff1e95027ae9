/**
 * Shell-style file globs (`*`, `?`, `[abc]`, `[!abc]`, `**` for any depth), as Python's `glob.glob` expands
 * them: names starting with `.` only match a segment that starts with `.`; matches come back sorted.
 */
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';

const MAGIC = /[*?[]/;

function segmentRegex(segment: string): RegExp {
  let out = '';
  for (let i = 0; i < segment.length; i++) {
    const ch = segment[i]!;
    if (ch === '*') out += '.*';
    else if (ch === '?') out += '.';
    else if (ch === '[') {
      const close = segment.indexOf(']', i + 2);
      if (close < 0) {
        out += '\\[';
        continue;
      }
      let body = segment.slice(i + 1, close);
      if (body.startsWith('!')) body = `^${body.slice(1)}`;
      out += `[${body.replace(/\\/g, '\\\\')}]`;
      i = close;
    } else out += ch.replace(/[.+^${}()|\\/]/g, '\\$&');
  }
  return new RegExp(`^${out}$`, 's');
}

function listDir(dir: string): string[] {
  try {
    return readdirSync(dir === '' ? '.' : dir);
  } catch {
    return [];
  }
}

function isDir(file: string): boolean {
  try {
    return statSync(file === '' ? '.' : file).isDirectory();
  } catch {
    return false;
  }
}

function exists(file: string): boolean {
  try {
    statSync(file);
    return true;
  } catch {
    return false;
  }
}

function descendants(dir: string): string[] {
  const out = [dir];
  for (const name of listDir(dir)) {
    if (name.startsWith('.')) continue;
    const child = dir === '' ? name : path.join(dir, name);
    if (isDir(child)) out.push(...descendants(child));
  }
  return out;
}

/** The files and directories matching one pattern, sorted. Relative patterns give relative paths. */
export function expandGlob(pattern: string): string[] {
  if (!MAGIC.test(pattern)) return exists(pattern) ? [pattern] : [];
  const absolute = path.isAbsolute(pattern);
  const segments = pattern.split(/[\\/]+/).filter((segment) => segment !== '');
  let current = [absolute ? path.parse(pattern).root : ''];
  segments.forEach((segment, index) => {
    const last = index === segments.length - 1;
    const next: string[] = [];
    for (const base of current) {
      if (segment === '**') {
        next.push(...descendants(base));
      } else if (!MAGIC.test(segment)) {
        const candidate = base === '' ? segment : path.join(base, segment);
        if (last ? exists(candidate) : isDir(candidate)) next.push(candidate);
      } else {
        const regex = segmentRegex(segment);
        for (const name of listDir(base)) {
          if (name.startsWith('.') && !segment.startsWith('.')) continue;
          if (!regex.test(name)) continue;
          const candidate = base === '' ? name : path.join(base, name);
          if (last || isDir(candidate)) next.push(candidate);
        }
      }
    }
    current = [...new Set(next)];
  });
  return current.filter((file) => file !== '').sort();
}
