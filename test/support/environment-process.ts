/**
 * Test fixture: an environment module run as its own server process, started the way `gym env start` starts one
 * (the two config env vars, a free loopback port), with its output captured.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { findFreePort, serverEnv } from '../../src/config/index.js';
import { tempDir } from './cli.js';
import { eventually } from './wait.js';

/** The kit's compiled entry as a file URL, for generated modules to import. */
export const KIT_URL = pathToFileURL(fileURLToPath(new URL('../../src/environment/index.js', import.meta.url))).href;

export interface EnvironmentProcess {
  child: ChildProcess;
  url: string;
  dir: string;
  exited: Promise<number | null>;
  output(): { stdout: string; stderr: string };
}

/**
 * Write `source` as `app.mjs` in a temp dir (removed when the test process exits) and run it as instance `name` with
 * `config` as its config block.
 */
export async function startEnvironmentProcess(
  source: string,
  name: string,
  config: Record<string, unknown> = {},
): Promise<EnvironmentProcess> {
  const dir = tempDir('tsgym-kit-');
  const app = path.join(dir, 'app.mjs');
  writeFileSync(app, source);
  const port = await findFreePort();
  const global = {
    [name]: {
      resources_servers: { [name]: { entrypoint: 'app.mjs', domain: 'other', host: '127.0.0.1', port, ...config } },
    },
  };
  const child = spawn(process.execPath, [app], {
    env: { ...process.env, ...serverEnv(global, name) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, url: `http://127.0.0.1:${port}`, dir, exited, output: () => ({ stdout, stderr }) };
}

/**
 * Wait until the process has printed `text` on stdout (e.g. its listening line). Fails at once, with its output, if
 * the process exits first; `timeoutMs` is only an upper bound for a machine that is very busy.
 */
export async function waitForOutput(proc: EnvironmentProcess, text: string, timeoutMs = 60_000): Promise<void> {
  await eventually(
    () => {
      if (proc.output().stdout.includes(text)) return true;
      if (proc.child.exitCode !== null || proc.child.signalCode !== null) {
        const { stdout, stderr } = proc.output();
        throw new Error(
          `the process exited (${proc.child.exitCode ?? proc.child.signalCode}) before printing ${JSON.stringify(text)}:\n${stdout}${stderr}`,
        );
      }
      return false;
    },
    {
      what: () => `${JSON.stringify(text)} on stdout (so far: ${JSON.stringify(proc.output())})`,
      timeoutMs,
      intervalMs: 20,
    },
  );
}
