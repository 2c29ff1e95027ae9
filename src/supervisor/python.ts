/**
 * Which Python runs a Python server (decision C5). tsgym never builds a virtualenv nor installs a package; it picks an
 * interpreter that already exists, first match wins:
 *
 * 1. `python_executable` in the server's own block (`<instance>.<server_type>.<impl>.python_executable`);
 * 2. with `skip_venv_if_present: true`, the venv NeMo Gym's `gym env start` / `gym env prefetch` built for this server,
 *    `<uv_venv_dir>/<server_type>/<impl>/.venv/bin/python` (`uv_venv_dir` defaults to the working directory, as in
 *    the reference), run as `source .venv/bin/activate` would (`VIRTUAL_ENV`, its `bin/` first on `PATH`);
 * 3. the top-level `python_executable`;
 * 4. `python3` on `PATH`.
 *
 * Every Python server also gets its directory prepended to `PYTHONPATH`, as the reference's launcher does. A named
 * interpreter that does not exist is a config error naming the key, before any process starts.
 */
import { accessSync, constants, existsSync, statSync } from 'node:fs';
import path from 'node:path';
import type { LaunchSpec, ServerInstance } from '../config/index.js';
import { ConfigError } from '../errors.js';

export interface PythonChoice {
  /** The interpreter to exec (absolute when found on PATH). */
  executable: string;
  /** Why this one, for the start-up listing. */
  reason: string;
  /** Variables added to the server's environment. */
  env: Record<string, string>;
}

interface PythonContext {
  instance: ServerInstance;
  dirPath: string;
  config: Record<string, unknown>;
  cwd: string;
  env: NodeJS.ProcessEnv;
}

const DEFAULT_PYTHON = 'python3';

/** The Python to run `instance` with. */
export function choosePython(ctx: PythonContext): PythonChoice {
  const { instance, config, cwd, env } = ctx;
  const serverKey = `${instance.name}.${instance.serverType}.${instance.impl}.python_executable`;
  const pythonPath = [ctx.dirPath, env.PYTHONPATH]
    .filter((entry) => entry !== undefined && entry !== '')
    .join(path.delimiter);
  const plain = (executable: string, reason: string): PythonChoice => ({
    executable,
    reason,
    env: { PYTHONPATH: pythonPath },
  });

  const own = instance.config.python_executable;
  if (isSet(own)) return plain(findExecutable(own, serverKey, cwd, env), `${serverKey}`);

  let missingVenv: string | undefined;
  if (isTrue(config.skip_venv_if_present)) {
    const venv = venvOf(instance, config, cwd);
    const python = path.join(venv, 'bin', 'python');
    if (isExecutable(python)) {
      return {
        executable: python,
        reason: `the venv under uv_venv_dir (skip_venv_if_present=true)`,
        env: {
          PYTHONPATH: pythonPath,
          VIRTUAL_ENV: venv,
          PATH: [path.join(venv, 'bin'), env.PATH].filter(Boolean).join(path.delimiter),
        },
      };
    }
    missingVenv = `no venv at ${venv} (tsgym never builds one)`;
  }
  const shared = config.python_executable;
  const fallback = missingVenv ? `; ${missingVenv}` : '';
  if (isSet(shared))
    return plain(findExecutable(shared, 'python_executable', cwd, env), `python_executable${fallback}`);
  return plain(findExecutable(DEFAULT_PYTHON, undefined, cwd, env), `python3 on PATH, the default${fallback}`);
}

/** `<uv_venv_dir>/<server_type>/<impl>/.venv`, `uv_venv_dir` relative to the working directory (default: it). */
export function venvOf(instance: ServerInstance, config: Record<string, unknown>, cwd: string): string {
  const root =
    typeof config.uv_venv_dir === 'string' && config.uv_venv_dir.trim() !== '' ? config.uv_venv_dir.trim() : cwd;
  return path.resolve(cwd, root, instance.serverType, instance.impl, '.venv');
}

/** A Python launch with its interpreter chosen; any other launch unchanged. */
export function withPython(launch: LaunchSpec, ctx: PythonContext): { launch: LaunchSpec; python?: PythonChoice } {
  if (!isPythonLaunch(launch)) return { launch };
  const python = choosePython(ctx);
  return { launch: { ...launch, command: python.executable, env: { ...launch.env, ...python.env } }, python };
}

export function isPythonLaunch(launch: LaunchSpec): boolean {
  return path.extname(launch.args[0] ?? '') === '.py';
}

/**
 * `value` as an executable: a path (has a slash; relative to the working directory) must be an executable file; a
 * bare name is looked up on `PATH`. `key` names the setting in the error (undefined: the python3 default).
 */
function findExecutable(value: unknown, key: string | undefined, cwd: string, env: NodeJS.ProcessEnv): string {
  const name = typeof value === 'string' ? value.trim() : '';
  const fix =
    'Point python_executable at an existing interpreter (e.g. ++python_executable=/path/to/venv/bin/python)' +
    ", or set ++skip_venv_if_present=true with ++uv_venv_dir=<dir holding the servers' venvs>.";
  if (name === '')
    throw new ConfigError(`${key} must be the path or name of a Python interpreter. ${fix}`, 'GYM_PYTHON');
  if (name.includes('/')) {
    const file = path.resolve(cwd, name);
    if (!isExecutable(file)) {
      throw new ConfigError(`${key} = ${file} is not an executable file. ${fix}`, 'GYM_PYTHON');
    }
    return file;
  }
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (dir === '') continue;
    const candidate = path.join(dir, name);
    if (isExecutable(candidate)) return candidate;
  }
  const what = key ? `${key} = ${name} is not` : `${name} (the default interpreter for Python servers) is not`;
  throw new ConfigError(`${what} on PATH. ${fix}`, 'GYM_PYTHON');
}

function isExecutable(file: string): boolean {
  try {
    if (!existsSync(file) || !statSync(file).isFile()) return false;
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function isSet(value: unknown): boolean {
  return value !== undefined && value !== null && value !== '???';
}

function isTrue(value: unknown): boolean {
  return value === true || value === 'true' || value === 'True';
}
