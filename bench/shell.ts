import { spawnSync } from 'node:child_process';
import { chmodSync } from 'node:fs';
import path from 'node:path';
import { createShellServer, shellSettings } from '../resources_servers/shell/app.js';
import { request } from '../src/http/client.js';
import { CookieJar } from '../src/http/cookies.js';
import { atMost, round, type ScenarioReport } from './report.js';
import type { BenchContext } from './scenario-kit.js';

/**
 * Scenario 6, the shell environment's sandboxes: what a session's sandbox costs to create and destroy (tmpfs mount,
 * setup files, unmount), and what one `run_command` costs end to end over HTTP, next to the same command run on the
 * sandbox in-process (the bubblewrap + launcher spawn alone) and a bare `spawn /bin/true` — all interleaved, medians.
 * Needs what the environment needs (Linux, root, bwrap); elsewhere the scenario reports that it did not complete.
 */
export async function shellSandboxes(ctx: BenchContext): Promise<ScenarioReport> {
  const name = '6. shell sandboxes';
  const ROUNDS = 40;
  // The bench's scratch dir is private (mkdtemp); the sandboxes' uids must be able to enter it to reach their work dirs.
  chmodSync(ctx.workDir, 0o711);
  const running = await createShellServer(
    shellSettings({ sandbox_base_dir: path.join(ctx.workDir, 'shell-sandboxes') }, 'shell'),
  );
  const listening = await running.server.app.listen(0, '127.0.0.1');
  try {
    const jar = new CookieJar();
    const post = async (route: string, body: unknown): Promise<unknown> => {
      const reply = await request(`${listening.url}/${route}`, { method: 'POST', json: body, jar, timeoutMs: 30_000 });
      if (reply.status !== 200) throw new Error(`${route} answered ${reply.status}: ${reply.text().slice(0, 300)}`);
      return reply.json();
    };
    await post('seed_session', { task_dir: 'csv-transform' });
    const direct = await running.host.create({ 'a.txt': 'a\n' });
    const lifecycle: number[] = [];
    const overHttp: number[] = [];
    const inProcess: number[] = [];
    const bareSpawn: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      let started = performance.now();
      const sandbox = await running.host.create({ 'setup.txt': 'x\n', 'dir/script.sh': 'echo hi\n' });
      await sandbox.destroy();
      lifecycle.push(performance.now() - started);
      started = performance.now();
      const answer = (await post('run_command', { command: 'cat sales.csv > /dev/null' })) as { exit_code: number };
      if (answer.exit_code !== 0) throw new Error(`run_command failed: ${JSON.stringify(answer)}`);
      overHttp.push(performance.now() - started);
      started = performance.now();
      await direct.runCommand('cat a.txt > /dev/null');
      inProcess.push(performance.now() - started);
      started = performance.now();
      spawnSync('/bin/true');
      bareSpawn.push(performance.now() - started);
    }
    await direct.destroy();
    const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
    const [life, http, inproc, bare] = [median(lifecycle), median(overHttp), median(inProcess), median(bareSpawn)];
    return {
      figures: [
        atMost(name, 'sandbox create + destroy (ms, median)', life, 50, { rounds: ROUNDS }),
        atMost(name, 'run_command round trip over HTTP (ms, median)', http, 150, {
          in_process_ms: round(inproc, 1),
          spawn_true_ms: round(bare, 1),
        }),
        atMost(name, 'HTTP run_command ÷ in-process runCommand', http / inproc, 1.5),
      ],
      notes: [
        `6: sandbox create + destroy ${life.toFixed(1)} ms; run_command over HTTP ${http.toFixed(1)} ms, the same on the sandbox in-process ` +
          `${inproc.toFixed(1)} ms (bwrap + launcher), spawn /bin/true ${bare.toFixed(1)} ms (medians of ${ROUNDS})`,
      ],
    };
  } finally {
    await listening.close();
    await running.close();
  }
}
