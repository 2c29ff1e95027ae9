/**
 * Entrypoint compatibility (decision C1): reference configs say `entrypoint: app.py`. When a TS/JS sibling
 * with the same stem exists, that runs instead; a real Python server with no sibling still runs with python3
 * (it reads the same two env vars). TS inside the install root runs as its compiled twin under dist/; TS outside
 * it (a user's own server) runs through tsx's loader.
 */
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { ConfigError } from '../errors.js';

export interface LaunchSpec {
  command: string;
  args: string[];
  cwd: string;
  /** Variables added to the server's environment (e.g. a Python server's PYTHONPATH and venv). */
  env?: Record<string, string>;
}

const JS_EXTENSIONS = ['.js', '.mjs', '.cjs'];
/** tsx's ESM loader, resolved from tsgym's own dependencies (the user's project need not list tsx). */
const TSX_LOADER = import.meta.resolve('tsx');

function isFile(file: string): boolean {
  return existsSync(file) && statSync(file).isFile();
}

/** First root containing the directory `<serverType>/<impl>/`. */
export function resolveServerDir(serverType: string, impl: string, roots: readonly string[]): string {
  const relative = path.join(serverType, impl);
  const looked = roots.map((root) => path.join(root, relative));
  const found = looked.find((dir) => existsSync(dir) && statSync(dir).isDirectory());
  if (found !== undefined) return found;
  throw new ConfigError(
    `The server code directory '${relative}' was not found. Looked in: ${looked.join(', ')}. The impl key under ${serverType} names a directory <root>/${relative}; check its spelling, or add the root that holds it with --search-dir DIR (NEMO_GYM_EXTRA_ROOTS).`,
    'GYM_CONFIG_SERVER_DIR',
  );
}

function insideDir(dir: string, file: string): boolean {
  const relative = path.relative(dir, file);
  return relative !== '' && !relative.startsWith('..') && !path.isAbsolute(relative);
}

function nodeLaunch(file: string, cwd: string): LaunchSpec {
  return { command: process.execPath, args: [file], cwd };
}

/** How to run `entrypoint` (relative to `serverDir`). */
export function resolveLaunch(serverDir: string, entrypoint: string, installRoot: string): LaunchSpec {
  const named = path.resolve(serverDir, entrypoint);
  const extension = path.extname(named);
  const stem = extension === '' ? named : named.slice(0, -extension.length);
  const tried: string[] = [];

  if (JS_EXTENSIONS.includes(extension)) {
    tried.push(named);
    if (isFile(named)) return nodeLaunch(named, serverDir);
  }
  const jsSibling = `${stem}.js`;
  if (!tried.includes(jsSibling)) {
    tried.push(jsSibling);
    if (isFile(jsSibling)) return nodeLaunch(jsSibling, serverDir);
  }
  const tsSibling = `${stem}.ts`;
  tried.push(tsSibling);
  if (insideDir(installRoot, stem)) {
    // tsgym's own servers run compiled: from a checkout after `npm run build`, and from an installed package, which
    // ships the compiled tree without the TypeScript sources.
    const twin = path.join(installRoot, 'dist', path.relative(installRoot, stem) + '.js');
    if (isFile(twin)) return nodeLaunch(twin, serverDir);
    if (isFile(tsSibling)) {
      throw new ConfigError(
        `Entrypoint '${entrypoint}' in '${serverDir}' is TypeScript ('${tsSibling}'), and its compiled twin '${twin}' does not exist. Build tsgym first: run npm run build in '${installRoot}'.`,
        'GYM_CONFIG_ENTRYPOINT',
      );
    }
  } else if (isFile(tsSibling)) {
    // A server the user wrote in TypeScript in their own project runs as it is, through tsx's loader (tsgym's
    // dependency), so a scaffolded environment needs no build step.
    return { command: process.execPath, args: ['--import', TSX_LOADER, tsSibling], cwd: serverDir };
  }
  if (extension === '.py') {
    tried.push(named);
    if (isFile(named)) return { command: 'python3', args: [named], cwd: serverDir };
  }
  if (isFile(named) && !tried.includes(named)) {
    throw new ConfigError(
      `Entrypoint '${entrypoint}' in '${serverDir}' is a '${extension || 'extensionless'}' file, which tsgym cannot run. Use a .js/.ts entrypoint (run with node) or a .py one (run with python3).`,
      'GYM_CONFIG_ENTRYPOINT',
    );
  }
  throw new ConfigError(
    `Entrypoint '${entrypoint}' was not found in server directory '${serverDir}'. Tried: ${tried.map((file) => path.basename(file)).join(', ')}. Fix the entrypoint key, or add the file.`,
    'GYM_CONFIG_ENTRYPOINT',
  );
}
