/**
 * Fixtures shared by the environment tests: a scratch directory holding a fake server whose behaviour is chosen
 * in its config block, config files, and checks that no process was left behind.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net, { type AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { stringify } from 'yaml';
import { installRoot } from '../../src/config/index.js';
import { request } from '../../src/http/client.js';
import type { InstanceRecord } from '../../src/server/head-server.js';
import { waitUntilAnswering } from '../../src/http/readiness.js';
import { tempDir } from './cli.js';

/** What the fixture server does, set as `behaviour:` in its config block. */
export type FixtureBehaviour =
  | 'serve' // listen and answer GET /, POST /die exits with code 7
  | 'crash' // write two lines, exit 3 before listening
  | 'ignore_sigint' // serve, but ignore SIGINT (the supervisor must escalate to SIGKILL)
  | 'never_listen' // stay alive without listening
  | 'with_grandchild'; // serve, and keep a subprocess of its own alive (printed as `grandchild pid N`)

const DIST_SRC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src');

const FIXTURE_SERVER = `
import { spawn } from 'node:child_process';
import { App } from ${JSON.stringify(pathToFileURL(path.join(DIST_SRC, 'http/server.js')).href)};
import { readServerEnv } from ${JSON.stringify(pathToFileURL(path.join(DIST_SRC, 'config/index.js')).href)};
import { serveInstance } from ${JSON.stringify(pathToFileURL(path.join(DIST_SRC, 'server/serve.js')).href)};

const { instance } = readServerEnv();
const behaviour = instance.config.behaviour ?? 'serve';
console.log('fixture ' + instance.name + ' starting as ' + behaviour);
if (behaviour === 'crash') {
  console.log('loading the database');
  console.error('fatal: no database at ' + instance.config.database);
  process.exit(3);
}
if (behaviour === 'never_listen') {
  setInterval(() => undefined, 1000);
} else {
  await serveInstance(() => {
    const app = new App();
    app.get('/', () => ({ body: { status: 'ok' } }));
    app.post('/die', () => {
      setTimeout(() => process.exit(7), 10);
      return { body: {} };
    });
    return app;
  });
  if (behaviour === 'ignore_sigint') {
    process.removeAllListeners('SIGINT');
    process.on('SIGINT', () => console.log('ignoring SIGINT'));
  }
  if (behaviour === 'with_grandchild') {
    const grandchild = spawn(process.execPath, ['-e', 'setInterval(() => undefined, 1000)'], { stdio: 'ignore' });
    console.log('grandchild pid ' + grandchild.pid);
  }
}
`;

export interface Scratch {
  dir: string;
  /** Write a YAML config file into the scratch dir; returns its path. */
  writeConfig(name: string, config: Record<string, unknown>): string;
  remove(): void;
}

/**
 * A temp dir with `resources_servers/fixture/app.mjs`, so configs may name impl `fixture`. It is removed when the test
 * process exits (a failed test's too); `remove()` removes it sooner.
 */
export function makeScratch(): Scratch {
  const dir = tempDir('tsgym-env-');
  const serverDir = path.join(dir, 'resources_servers', 'fixture');
  mkdirSync(serverDir, { recursive: true });
  writeFileSync(path.join(serverDir, 'app.mjs'), FIXTURE_SERVER);
  return {
    dir,
    writeConfig(name, config) {
      const file = path.join(dir, name);
      writeFileSync(file, stringify(config));
      return file;
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** A config block for one fixture server instance. */
export function fixtureServer(
  behaviour: FixtureBehaviour,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return { resources_servers: { fixture: { entrypoint: 'app.mjs', domain: 'other', behaviour, ...extra } } };
}

/** The counter environment's own config block (the real example, run from the install root). */
export function counterServer(): Record<string, unknown> {
  return { resources_servers: { example_session_state_mgmt: { entrypoint: 'app.py', domain: 'agent' } } };
}

export const GYM_BIN = path.join(installRoot(), 'bin', 'gym.js');

/** True while `pid` runs (a zombie waiting to be reaped by an unrelated parent counts as gone). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return existsSync(`/proc/${pid}`) || process.platform !== 'linux';
  }
}

/**
 * Pids of live processes whose environment holds `TSGYM_TEST_MARKER=<marker>`: every process a test started
 * (directly or through `gym env start`) inherits it, so an empty list proves nothing was left behind. Linux only;
 * elsewhere the list is empty and the tests fall back to checking known pids.
 */
export function processesWithMarker(marker: string): number[] {
  if (process.platform !== 'linux') return [];
  const needle = `TSGYM_TEST_MARKER=${marker}\0`;
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    if (pid === process.pid) continue;
    try {
      if (readFileSync(`/proc/${entry}/environ`, 'latin1').includes(needle) && isAlive(pid)) found.push(pid);
    } catch {
      // Gone, or not ours to read.
    }
  }
  return found;
}

/** A loopback port held by another listener, for the "port already in use" tests. */
export function occupyPort(): Promise<{ port: number; close(): Promise<void> }> {
  return new Promise((resolve) => {
    const server = net
      .createServer((socket) => socket.destroy())
      .listen(0, '127.0.0.1', () => {
        resolve({
          port: (server.address() as AddressInfo).port,
          close: () => new Promise<void>((done) => server.close(() => done())),
        });
      });
  });
}

/** What the head server on `headPort` lists (one call, bounded generously: a busy machine is not a failure). */
export async function serverInstances(headPort: number): Promise<InstanceRecord[]> {
  return (
    await request(`http://127.0.0.1:${headPort}/server_instances`, { timeoutMs: 30_000 })
  ).json() as InstanceRecord[];
}

/**
 * Wait until the head server on `headPort` and every server it lists answer; returns the servers. `timeoutMs` is only
 * an upper bound, generous by default for a busy machine.
 */
export async function waitForEnvironment(headPort: number, timeoutMs = 60_000): Promise<InstanceRecord[]> {
  const polls = new AbortController();
  const timer = setTimeout(() => polls.abort(), timeoutMs);
  try {
    if (!(await waitUntilAnswering(`http://127.0.0.1:${headPort}`, { signal: polls.signal }))) {
      throw new Error(`no head server answered on port ${headPort} within ${timeoutMs} ms`);
    }
    const instances = await serverInstances(headPort);
    for (const instance of instances) {
      if (!(await waitUntilAnswering(instance.url, { signal: polls.signal }))) {
        throw new Error(`server '${instance.process_name}' did not answer within ${timeoutMs} ms`);
      }
    }
    return instances;
  } finally {
    clearTimeout(timer);
  }
}

/** Peak resident memory of a live process in MiB (`VmHWM` in /proc/<pid>/status); undefined off Linux. */
export function peakRssMiB(pid: number): number | undefined {
  try {
    const match = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}
