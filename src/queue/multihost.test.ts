/**
 * Scale-out across hosts, for real: three network namespaces made by this test are three hosts, each with its own
 * loopback, joined by veth pairs on 10.231.2.0/24 (h1–h2) and 10.231.3.0/24 (h1–h3), addresses that exist only
 * inside them. h1 runs Redis and the producer (`gym eval run --no-serve --queue`, no environment: nothing on h1 but
 * Redis listens); h2 and h3 each run the counter environment with the remote agent (`gym env start`, head server on
 * the host's own address), the counter-planner service and a `gym worker`. A quarter of the way in, h3 loses power:
 * its link goes down and every process in it is SIGKILLed, while its worker surely holds jobs (h3 is frozen first and
 * looked at; thawed and looked at again until it does). Every rollout lands exactly once, both workers delivered,
 * h3's jobs run on h2 within seconds (the figure is printed), and the aggregate file equals a direct run's from h1
 * against h2's head server (whose advertised addresses must work from h1). Skipped unless root with `ip`
 * (iproute2) and redis-server; every namespace (random suffix) and process is removed, also on failure.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import { randomBytes } from 'node:crypto';
import { installRoot } from '../config/roots.js';
import { GYM_BIN, lineCount, readJsonl, tempDir } from '../../test/support/cli.js';
import { eventually } from '../../test/support/wait.js';
import { REDIS_SERVER_BIN } from '../../test/support/redis-server.js';

const ROOT = installRoot();
const DATA = path.join(ROOT, 'resources_servers/example_session_state_mgmt/data/example.jsonl');
const SERVICE = path.join(ROOT, 'dist/examples/counter-planner/service.js');
const REPEATS = 40;
const TOTAL = 5 * REPEATS;
/** Upper bound of every wait for something that takes a second or so on a quiet machine. */
const WAIT_MS = 90_000;

function ip(args: string[]): string {
  const result = spawnSync('ip', args, { encoding: 'utf8', timeout: 10_000 });
  if (result.status !== 0) throw new Error(`ip ${args.join(' ')} failed: ${result.stderr || result.error?.message}`);
  return result.stdout;
}

function skipReason(): string | undefined {
  if (process.getuid?.() !== 0) return 'needs root to create network namespaces';
  if (spawnSync('ip', ['-V']).status !== 0) return "needs the 'ip' command (Debian package iproute2)";
  if (!existsSync(REDIS_SERVER_BIN)) return `needs ${REDIS_SERVER_BIN}`;
  return undefined;
}

const suffix = randomBytes(3).toString('hex');
const NS = { h1: `tsgym-h1-${suffix}`, h2: `tsgym-h2-${suffix}`, h3: `tsgym-h3-${suffix}` };
const created: string[] = [];
const children: ChildProcess[] = [];

function signalNamespace(ns: string, signal: NodeJS.Signals): void {
  const pids = spawnSync('ip', ['netns', 'pids', ns], { encoding: 'utf8' }).stdout ?? '';
  for (const pid of pids.split(/\s+/).filter(Boolean)) {
    try {
      process.kill(Number(pid), signal);
    } catch {
      // already gone
    }
  }
}

function killNamespace(ns: string): void {
  signalNamespace(ns, 'SIGKILL');
}

/** How many jobs worker `consumer` holds (pending, not yet answered), asked of h1's Redis from inside h1. */
function jobsHeldBy(consumer: string): number {
  const script = `import { Redis } from 'ioredis';
const client = new Redis('redis://127.0.0.1:6379');
let held = 0;
for (const key of await client.keys('tsgym:run:*:rollouts:jobs'))
  held += (await client.call('XPENDING', key, 'workers', '-', '+', 1000, ${JSON.stringify(consumer)})).length;
console.log(held);
client.disconnect();`;
  const result = spawnSync('ip', ['netns', 'exec', NS.h1, process.execPath, '--input-type=module', '-e', script], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 60_000,
  });
  const held = Number(result.stdout.trim());
  if (result.status !== 0 || !Number.isInteger(held)) {
    throw new Error(`asking Redis for ${consumer}'s jobs failed: ${result.stderr || result.error?.message}`);
  }
  return held;
}

function teardown(): void {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  for (const ns of created.splice(0)) {
    killNamespace(ns);
    spawnSync('ip', ['netns', 'del', ns]);
  }
}
after(teardown);
process.once('exit', teardown);

/** h1 ↔ h2 on 10.231.2.0/24, h1 ↔ h3 on 10.231.3.0/24; the veth ends are created inside the namespaces. */
function makeHosts(): void {
  for (const ns of Object.values(NS)) {
    ip(['netns', 'add', ns]);
    created.push(ns);
    ip(['-n', ns, 'link', 'set', 'lo', 'up']);
  }
  for (const [host, subnet] of [
    ['h2', 2],
    ['h3', 3],
  ] as const) {
    ip(['-n', NS.h1, 'link', 'add', `to${host}`, 'type', 'veth', 'peer', 'name', 'toh1', 'netns', NS[host]]);
    ip(['-n', NS.h1, 'addr', 'add', `10.231.${subnet}.1/24`, 'dev', `to${host}`]);
    ip(['-n', NS[host], 'addr', 'add', `10.231.${subnet}.2/24`, 'dev', 'toh1']);
    ip(['-n', NS.h1, 'link', 'set', `to${host}`, 'up']);
    ip(['-n', NS[host], 'link', 'set', 'toh1', 'up']);
  }
}

interface Proc {
  child: ChildProcess;
  out(): string;
  /** Arrival time of every output line. */
  lines: Array<{ at: number; text: string }>;
  done: Promise<number | null>;
}

function inHost(ns: string, command: string[], cwd: string): Proc {
  const child = spawn('ip', ['netns', 'exec', ns, ...command], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let text = '';
  const lines: Proc['lines'] = [];
  const take = (chunk: Buffer): void => {
    text += chunk.toString();
    for (const line of chunk.toString().split('\n')) if (line) lines.push({ at: Date.now(), text: line });
  };
  child.stdout.on('data', take);
  child.stderr.on('data', take);
  const done = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  return { child, out: () => text, lines, done };
}

const gym = (ns: string, args: string[], cwd: string): Proc => inHost(ns, [process.execPath, GYM_BIN, ...args], cwd);

/** An environment host: the counter environment and remote agent, their service, and a worker. */
async function environmentHost(name: 'h2' | 'h3', subnet: number): Promise<{ worker: Proc }> {
  const ns = NS[name];
  const dir = tempDir(`tsgym-multihost-${name}-`);
  const service = inHost(ns, [process.execPath, SERVICE, '--port', '9000'], dir);
  const env = gym(
    ns,
    [
      'env',
      'start',
      '+config_paths=[counter_remote.yaml]',
      '++remote_agent.responses_api_agents.remote_agent.agent_base_url=http://127.0.0.1:9000',
      `++head_server.host=10.231.${subnet}.2`,
    ],
    dir,
  );
  await eventually(() => /listening on/.test(service.out()), {
    what: () => `${name}'s service: ${service.out()}`,
    timeoutMs: WAIT_MS,
    intervalMs: 50,
  });
  await eventually(() => /servers ready/.test(env.out()), {
    what: () => `${name}'s environment: ${env.out()}`,
    timeoutMs: WAIT_MS,
    intervalMs: 50,
  });
  const worker = gym(
    ns,
    [
      'worker',
      '--queue',
      `redis://10.231.${subnet}.1:6379`,
      `++head_server.host=10.231.${subnet}.2`,
      '--concurrency',
      '4',
      `+worker_id=${name}`,
    ],
    dir,
  );
  await eventually(() => /connected to/.test(worker.out()), {
    what: () => `${name}'s worker: ${worker.out()}`,
    timeoutMs: WAIT_MS,
    intervalMs: 50,
  });
  return { worker };
}

const reason = skipReason();

test(
  'three hosts: a producer with Redis alone, two environment hosts, one dies midway',
  { skip: reason ?? false, timeout: 600_000 },
  async (t) => {
    try {
      makeHosts();
    } catch (error) {
      t.skip(`network namespaces are not available here: ${(error as Error).message}`);
      return;
    }
    const redisDir = tempDir('tsgym-multihost-redis-');
    const server = inHost(
      NS.h1,
      [
        REDIS_SERVER_BIN,
        '--port',
        '6379',
        '--bind',
        '127.0.0.1 10.231.2.1 10.231.3.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--protected-mode',
        'no',
      ],
      redisDir,
    );
    await eventually(() => /Ready to accept connections/.test(server.out()), {
      what: () => `Redis: ${server.out()}`,
      timeoutMs: WAIT_MS,
      intervalMs: 50,
    });

    const [h2, h3] = await Promise.all([environmentHost('h2', 2), environmentHost('h3', 3)]);
    const dir = tempDir('tsgym-multihost-producer-');
    const producer = gym(
      NS.h1,
      [
        'eval',
        'run',
        '--no-serve',
        '--queue',
        'redis://127.0.0.1:6379',
        '-a',
        'remote_agent',
        '-i',
        DATA,
        '-o',
        'out/r.jsonl',
        '--concurrency',
        '8',
        `+num_repeats=${REPEATS}`,
      ],
      dir,
    );
    const rollouts = path.join(dir, 'out/r.jsonl');
    await eventually(() => existsSync(rollouts) && lineCount(rollouts) >= TOTAL / 4, {
      what: () => `a quarter of the rollouts: ${producer.out()}`,
      timeoutMs: 2 * WAIT_MS,
      intervalMs: 50,
    });
    // The producer's host has no environment: only Redis listens there.
    const listening = spawnSync('ip', ['netns', 'exec', NS.h1, 'ss', '-ltnH'], { encoding: 'utf8' }).stdout;
    const ports = [...listening.matchAll(/:(\d+)\s/g)].map((m) => m[1]);
    assert.deepEqual([...new Set(ports)], ['6379'], listening);

    // Power cut on h3 while its worker holds jobs: frozen, it can no longer answer the jobs it holds, so the count
    // Redis gives stays true until the cut. A look that finds none thaws it and looks again a little later.
    // The cut counts from the freeze: from then on h3 renews no claim.
    let held = 0;
    let killedAt = 0;
    for (let look = 1; look <= 50 && held === 0; look++) {
      killedAt = Date.now();
      signalNamespace(NS.h3, 'SIGSTOP');
      held = jobsHeldBy('h3');
      if (held > 0) break;
      signalNamespace(NS.h3, 'SIGCONT');
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    assert.ok(held > 0, `h3's worker never held a job in 50 looks: ${producer.out()}`);
    t.diagnostic(`h3 held ${held} job(s) at the power cut`);
    // No packet leaves it any more, then everything in it dies without a word.
    ip(['-n', NS.h3, 'link', 'set', 'toh1', 'down']);
    killNamespace(NS.h3);
    const code = await producer.done;
    assert.equal(code, 0, producer.out());
    assert.ok(h3.worker.child.exitCode !== null || h3.worker.child.signalCode !== null, 'h3 is dead');

    const rows = [...readJsonl(rollouts), ...readJsonl(path.join(dir, 'out/r_failures.jsonl'))];
    const keys = rows.map((row) => `${String(row._ng_task_index)}/${String(row._ng_rollout_index)}`);
    assert.equal(new Set(keys).size, TOTAL, 'every rollout once');
    assert.equal(keys.length, TOTAL, 'no rollout twice');
    assert.equal(readJsonl(rollouts).length, TOTAL, 'no failure rows');
    // Both hosts delivered: the final progress line lists the workers that returned results.
    const finalLine = producer.lines.filter((line) => /workers \d/.test(line.text)).at(-1)?.text ?? '';
    assert.match(finalLine, /\bh2 \d/, finalLine);
    assert.match(finalLine, /\bh3 \d/, finalLine);

    // h3's jobs went back to the queue when the surviving worker's stalled check found their locks gone.
    const stalled = h2.worker.lines.filter((line) => line.at >= killedAt && /stalled/.test(line.text));
    assert.ok(stalled.length > 0, `h2 recovered h3's jobs: ${h2.worker.out()}`);
    const recoverySecs = (stalled.at(-1)!.at - killedAt) / 1000;
    t.diagnostic(
      `recovery: ${stalled.length} job(s) of the dead host re-dispatched ${recoverySecs.toFixed(1)} s after the cut`,
    );
    // By design within 1.5 x the 5 s stall time (the figure above, ~7 s); slower on a busy machine. The bound is only
    // the contrast with never: without the stalled check h3's jobs would wait for the producer forever.
    assert.ok(recoverySecs < 60, `recovered well within a minute, took ${recoverySecs} s`);

    // The same rows run directly from h1 against h2's head server: the addresses it hands out work from h1.
    const directDir = tempDir('tsgym-multihost-direct-');
    const direct = gym(
      NS.h1,
      [
        'eval',
        'run',
        '--no-serve',
        '++head_server.host=10.231.2.2',
        '-a',
        'remote_agent',
        '-i',
        DATA,
        '-o',
        'out/r.jsonl',
        `+num_repeats=${REPEATS}`,
      ],
      directDir,
    );
    assert.equal(await direct.done, 0, direct.out());
    const aggregateOf = (root: string): string => readFileSync(path.join(root, 'out/r_aggregate_metrics.json'), 'utf8');
    assert.equal(aggregateOf(dir), aggregateOf(directDir));
  },
);
