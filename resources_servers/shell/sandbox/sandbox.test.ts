import assert from 'node:assert/strict';
import { chownSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { after, before, describe, test, type TestContext } from 'node:test';
import { openSandboxHost, type SandboxHost } from './host.js';
import { systemBinds } from './bwrap-args.js';
import type { LimitName } from './limits.js';
import { hostProcesses } from './processes.js';
import type { CommandResult, Sandbox } from './sandbox.js';
import { mountsUnder, pidsOfUid, sandboxTestsUnavailable } from '../../../test/support/sandbox.js';
import { tempDir } from '../../../test/support/cli.js';
import { eventually } from '../../../test/support/wait.js';

const unavailable = sandboxTestsUnavailable();
const MIB = 1024 * 1024;
/** The processes of a session's uid the host below allows at once: one command's 24, plus its bwrap monitor and launcher. */
const PROCESS_CAP = 24 + 2;

/** Without root the sessions are held in namespaces (rootless.ts), not uids: a few checks differ, and say so. */
const ROOTLESS = process.getuid?.() !== 0;

/**
 * Pids of the session's processes (its uid's as root; those with its work dir mounted without root), the holder of
 * a rootless session left out: it is the session's namespace, not one of its commands.
 */
function sessionPids(sandbox: Sandbox): number[] {
  return hostProcesses()
    .filter((proc) => sandbox.ownsProcess(proc) && proc.pid !== sandbox.holder?.pid)
    .map((proc) => proc.pid);
}

/** Pids of the session's processes running exactly `command` (argv joined by spaces). */
function pidsRunning(sandbox: Sandbox, command: string): number[] {
  return hostProcesses()
    .filter((proc) => sandbox.ownsProcess(proc) && proc.cmdline.trim() === command)
    .map((proc) => proc.pid);
}

/** Mounts at or under the session's dir: on the host as root, in the holder's mount namespace without root. */
function workMounts(sandbox: Sandbox): string[] {
  if (!sandbox.holder) return mountsUnder(sandbox.dir);
  try {
    return readFileSync(`/proc/${sandbox.holder.pid}/mountinfo`, 'utf8')
      .split('\n')
      .map((line) => line.split(' ')[4] ?? '')
      .filter((point) => point === sandbox.dir || point.startsWith(`${sandbox.dir}/`));
  } catch {
    return []; // the holder is gone, and its namespace with it
  }
}

/** SIGKILL the session's processes running exactly `command`. */
function killRunning(sandbox: Sandbox, command: string): void {
  for (const pid of pidsRunning(sandbox, command)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
}

/**
 * A fork bomb that holds what it takes, in Python so that a refused fork neither ends the process that tried it (as
 * it ends a shell) nor floods the output: it writes `ready-<name>` to the hold dir once it runs and waits for `go`;
 * then every process of it forks, again and again (a refused fork is tried again 0.2 s later), until `stop` exists.
 * So the session's processes sit at the limit for as long as the test needs, however slowly a loaded machine runs
 * the rest. Its first process writes `refused-<name>` the first time the kernel refuses it a fork (the limit's own
 * word that the session is at it) and, once stopped, ends by raising that refusal; the others end quietly.
 */
const HOLDING_BOMB = [
  'import os, sys, time',
  'hold = "/work/.hold/"',
  'name = sys.argv[1]',
  'open(hold + "ready-" + name, "w").close()',
  'while not os.path.exists(hold + "go"): time.sleep(0.05)',
  'first = os.getpid()',
  'refused = None',
  'while not os.path.exists(hold + "stop"):',
  '    try:',
  '        os.fork()',
  '    except BlockingIOError as err:',
  '        if refused is None and os.getpid() == first:',
  '            refused = err',
  '            open(hold + "refused-" + name, "w").close()',
  '        time.sleep(0.2)',
  'if os.getpid() != first: os._exit(0)',
  'raise refused',
].join('\n');
const holdingBomb = (name: string): string => `python3 -c '${HOLDING_BOMB}' ${name}`;

/**
 * A memory hog that holds the memory limit: it claims 8 MiB at a time until RLIMIT_AS refuses it (bytes(n) comes
 * from calloc, so no page is touched: it gets there in milliseconds of CPU however slow page faults are here), gives
 * one chunk back (room for what follows), writes `refused-hog` to the hold dir, and once `stop` exists ends by
 * raising the MemoryError it got.
 */
const HOLDING_HOG = [
  'import os, time',
  'hold = "/work/.hold/"',
  'chunks = []',
  'try:',
  '    while True: chunks.append(bytes(8 << 20))',
  'except MemoryError as err:',
  '    refused = err',
  'chunks.pop()',
  'open(hold + "refused-hog", "w").close()',
  'while not os.path.exists(hold + "stop"): time.sleep(0.2)',
  'raise refused',
].join('\n');

/** Commands that hold a condition (a limit reached) until the test releases them, and what the test sees of them. */
interface Held {
  /** Resolves once every one of `files` is in the hold dir; rejects at once should a held command end first. */
  waitFor(files: string[], what: () => string): Promise<void>;
  /** Put `file` in the hold dir (from the host). */
  signal(file: string): void;
  /** Why a held command ended before its release, or undefined while they all run. */
  endedEarly(): string | undefined;
  /** Put `stop` in the hold dir, wait for every command to end, remove the hold dir: their results, in order. */
  release(): Promise<CommandResult[]>;
}

/**
 * Run `commands` in `sandbox` with a hold dir (`/work/.hold`) to talk through; they are released when the test ends
 * whatever happens, so a failing test leaves no command holding a limit of the shared sandbox.
 */
function holdCommands(t: TestContext, sandbox: Sandbox, commands: string[]): Held {
  const dir = path.join(sandbox.hostView(sandbox.workDir), '.hold');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir);
  if (!ROOTLESS) chownSync(dir, sandbox.uid, sandbox.uid);
  const runs = commands.map((command) => sandbox.runCommand(command));
  let early: string | undefined;
  let released = false;
  for (const [i, run] of runs.entries()) {
    run.then(
      (result) => {
        if (!released) early ??= `${commands[i]} ended before its release: ${JSON.stringify(result)}`;
      },
      (err: unknown) => (early ??= `${commands[i]} failed: ${String(err)}`),
    );
  }
  const release = async (): Promise<CommandResult[]> => {
    released = true;
    writeFileSync(path.join(dir, 'stop'), '');
    try {
      return await Promise.all(runs);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
  t.after(async () => {
    if (!released) await release().catch(() => undefined);
  });
  return {
    waitFor: (files, what) =>
      eventually(
        () => {
          if (early) throw new Error(early);
          return files.every((file) => existsSync(path.join(dir, file)));
        },
        { what, timeoutMs: 60_000, intervalMs: 50 },
      ),
    signal: (file) => writeFileSync(path.join(dir, file), ''),
    endedEarly: () => early,
    release,
  };
}

/**
 * Start holding bombs called `names` at once in `sandbox`: all of them run before any forks, and this resolves once
 * the kernel has refused each of them a fork and the session's processes sit at the limit.
 */
async function holdBombs(t: TestContext, sandbox: Sandbox, names: string[]): Promise<Held> {
  const held = holdCommands(
    t,
    sandbox,
    names.map((name) => holdingBomb(name)),
  );
  await held.waitFor(
    names.map((name) => `ready-${name}`),
    () => `every bomb runs (${names.join(', ')})`,
  );
  held.signal('go');
  await held.waitFor(
    names.map((name) => `refused-${name}`),
    () => `the kernel refuses every bomb a fork (the session has ${sessionPids(sandbox).length} processes)`,
  );
  // A refusal can come a process or two below the cap (other forks being refused at the same instant count for a
  // moment); the bombs fork on until the cap is full, and nothing of theirs ends before the release.
  await eventually(
    () => {
      const early = held.endedEarly();
      if (early) throw new Error(early);
      return sessionPids(sandbox).length >= PROCESS_CAP;
    },
    {
      what: () => `the bombs hold the whole limit (${sessionPids(sandbox).length} of ${PROCESS_CAP} processes)`,
      timeoutMs: 60_000,
      intervalMs: 50,
    },
  );
  return held;
}

describe('bubblewrap sandbox', { skip: unavailable }, () => {
  let baseDir: string;
  let host: SandboxHost;
  let a: Sandbox;
  let b: Sandbox;

  before(async () => {
    baseDir = tempDir('tsgym-sandbox-test-');
    host = await openSandboxHost({
      baseDir,
      limits: {
        // Generous: a sandbox's start alone has taken seconds on a loaded 2-core CI machine, and the containment tests
        // hold their bombs until they release them (the wall_time test sets its own 0.5 s).
        commandWallSecs: 60,
        commandCpuSecs: 1,
        memoryBytes: 256 * MIB,
        processes: 24,
        outputBytes: 8192,
        fileBytes: 1 * MIB,
        diskBytes: 4 * MIB,
      },
    });
    [a, b] = await Promise.all([
      host.create({ 'secret.txt': 'session a only\n' }),
      host.create({ 'notes/b.txt': 'b\n' }),
    ]);
  });

  after(async () => {
    await host.close();
    assert.deepEqual(readdirSync(baseDir), [], 'closing the host removes its owner dir');
    assert.deepEqual(mountsUnder(baseDir), []);
  });

  describe('isolation', () => {
    test('no network: a connect to a port listening on the host loopback fails inside', async () => {
      const server = net.createServer((socket) => socket.end('host\n'));
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const port = (server.address() as net.AddressInfo).port;
      try {
        const inside = await a.runCommand(
          `python3 -c "import socket; socket.create_connection(('127.0.0.1', ${port}), timeout=2); print('connected')"`,
        );
        assert.notEqual(inside.exit_code, 0);
        assert.match(inside.stderr, /Connection refused/);
        assert.doesNotMatch(inside.stdout, /connected/);
        const interfaces = await a.runCommand("grep ':' /proc/net/dev | cut -d: -f1 | tr -d ' '");
        assert.equal(interfaces.stdout.trim(), 'lo', 'only a private loopback');
      } finally {
        server.close();
      }
    });

    test('nothing outside the work dir is writable; /tmp and /dev are private to the command', async () => {
      const marker = `tsgym-marker-${process.pid}`;
      const result = await a.runCommand(
        `for p in /usr/${marker} /etc/${marker} /${marker} /.tsgym/${marker} /proc/${marker}; do touch $p 2>/dev/null && echo "wrote $p"; done; ` +
          `touch /tmp/${marker} /dev/shm/${marker} && echo private-ok`,
      );
      assert.equal(result.stdout.trim(), 'private-ok');
      for (const dir of ['/usr', '/etc', '/', '/tmp', '/dev/shm'])
        assert.equal(existsSync(path.join(dir, marker)), false, `${dir} untouched on the host`);
      assert.equal(
        (await a.runCommand(`ls /tmp/${marker} /dev/shm/${marker}`)).exit_code,
        2,
        "a command's /tmp and /dev are gone when it ends",
      );
    });

    test("a session sees neither another session's files nor its processes, nor the host's", async (t) => {
      // a's sleep runs until the test ends it (from the host, once b has looked), so b looks while it runs.
      const longRunning = a.runCommand('sleep 301; echo done');
      t.after(async () => {
        killRunning(a, 'sleep 301');
        await longRunning.catch(() => undefined);
      });
      await eventually(() => pidsRunning(a, 'sleep 301').length === 1, {
        what: "a's sleep runs",
        timeoutMs: 60_000,
        intervalMs: 50,
      });
      // The host's system dirs are pruned from the search: they are read-only binds of the host's own, and walking
      // them took longer than the command's limits on a loaded CI machine. Every other mount is searched.
      const pruned = ['/proc', ...systemBinds()].map((dir) => `-path ${dir}`).join(' -o ');
      const findSecret = `find / \\( ${pruned} \\) -prune -o -name secret.txt -print 2>/dev/null`;
      const view = await b.runCommand(`ls /work; ps -e -o pid=,comm= ; ${findSecret}`);
      assert.equal(view.limit_exceeded, null, `the command ran within its limits: ${JSON.stringify(view)}`);
      assert.doesNotMatch(view.stdout, /sleep|secret\.txt/);
      assert.match(view.stdout, /notes/);
      assert.ok(
        view.stdout.split('\n').filter((line) => /^\s*\d+ /.test(line)).length <= 5,
        `only its own few processes:\n${view.stdout}`,
      );
      assert.match(view.stdout, /^\s*1 python3/m, 'its launcher is PID 1');
      assert.equal(pidsRunning(a, 'sleep 301').length, 1, "a's sleep ran all the while b looked");
      killRunning(a, 'sleep 301');
      assert.equal((await longRunning).stdout, 'done\n');
      assert.equal(
        (await a.runCommand(findSecret)).stdout,
        '/work/secret.txt\n',
        'the same search finds a file it can see',
      );
    });

    test('no process outlives its command', async () => {
      // The sleeps would outlast the wait below tenfold: only their killing can end them in time.
      const result = await a.runCommand('(sleep 300 &) ; nohup sleep 300 >/dev/null 2>&1 & echo started');
      assert.equal(result.stdout, 'started\n');
      await eventually(() => sessionPids(a).length === 0, {
        what: 'background processes are killed with the command',
        timeoutMs: 30_000,
        intervalMs: 50,
      });
    });
  });

  describe('containment', () => {
    test('a fork bomb hits the processes limit while another session keeps answering', async (t) => {
      // The bomb holds the limit until released (HOLDING_BOMB), so the other session is asked while it is at the
      // limit, however slowly a loaded machine starts the other sandbox.
      const bomb = await holdBombs(t, a, ['one']);
      assert.ok(sessionPids(a).length <= PROCESS_CAP, 'never more processes than the limit');
      const other = await b.runCommand('echo alive');
      assert.equal(other.stdout, 'alive\n');
      assert.equal(bomb.endedEarly(), undefined, 'the other session answered while the bomb still ran');
      assert.ok(sessionPids(a).length <= PROCESS_CAP, 'never more processes than the limit');
      const [result] = await bomb.release();
      assert.equal(result!.limit_exceeded, 'processes', JSON.stringify(result));
      assert.match(result!.stderr, /processes limit \(24 processes per session\)/);
      await eventually(() => sessionPids(a).length === 0, {
        what: 'the bomb is gone after the command',
        timeoutMs: 30_000,
        intervalMs: 50,
      });

      // A classic shell bomb, left to run its course, is stopped at the limit too. Its tree churns there (a shell
      // refused a fork ends) until its refused forks flood the output or it dies out; its first shell, sleeping a
      // second at a time, ends at its own first refused fork, or after 30 s should the limit never be reached.
      const classic = a.runCommand('b(){ b|b& }; b; i=0; while [ $i -lt 30 ]; do sleep 1; i=$((i + 1)); done');
      let running = true;
      void classic.then(
        () => (running = false),
        () => (running = false),
      );
      let most = 0;
      while (running) {
        most = Math.max(most, sessionPids(a).length);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const ran = await classic;
      assert.match(ran.stderr, /Cannot fork/, `the classic bomb never reached the limit: ${JSON.stringify(ran)}`);
      assert.equal(ran.limit_exceeded, 'processes', JSON.stringify(ran));
      assert.match(ran.stderr, /processes limit \(24 processes per session\)/);
      assert.ok(most <= PROCESS_CAP, `at most ${PROCESS_CAP} processes of the session's uid at once, saw ${most}`);
      await eventually(() => sessionPids(a).length === 0, {
        what: 'the classic bomb is gone after the command',
        timeoutMs: 30_000,
        intervalMs: 50,
      });
    });

    test('the processes limit is one for the whole session: two bombs at once share it, and a command started at it is told why', async (t) => {
      // Two holding bombs, both running before either forks: the kernel refuses each a fork, and together they
      // hold the limit until released. With a cap per command instead of per session they would hold about twice
      // the limit (47 of 26 seen).
      const bombs = await holdBombs(t, a, ['one', 'two']);
      const held = sessionPids(a).length;
      assert.ok(held <= PROCESS_CAP, `at most ${PROCESS_CAP} processes of the session's uid at once, saw ${held}`);
      const started = await a.runCommand('echo started');
      assert.deepEqual([started.limit_exceeded, started.stdout], ['processes', ''], JSON.stringify(started));
      assert.match(started.stderr, /not started: .*processes limit \(24 processes per session\)/);
      const still = sessionPids(a).length;
      assert.ok(still <= PROCESS_CAP, `at most ${PROCESS_CAP} processes of the session's uid at once, saw ${still}`);
      assert.equal(bombs.endedEarly(), undefined, 'both bombs held the limit all along');
      for (const result of await bombs.release()) {
        assert.equal(result.limit_exceeded, 'processes', JSON.stringify(result));
        assert.match(result.stderr, /processes limit \(24 processes per session\)/);
      }
      await eventually(() => sessionPids(a).length === 0, {
        what: 'the bombs are gone',
        timeoutMs: 30_000,
        intervalMs: 50,
      });
    });

    test('a memory hog hits the memory limit while another session keeps answering', async (t) => {
      // The hog holds its memory until released (HOLDING_HOG), so the other session is asked while it is at the limit.
      const hog = holdCommands(t, a, [`python3 -c '${HOLDING_HOG}'`]);
      await hog.waitFor(['refused-hog'], () => 'the hog reaches the memory limit');
      const other = await b.runCommand('echo alive');
      assert.equal(other.stdout, 'alive\n');
      assert.equal(hog.endedEarly(), undefined, 'the other session answered while the hog still ran');
      const [result] = await hog.release();
      assert.equal(result!.limit_exceeded, 'memory', JSON.stringify(result));
      assert.match(result!.stderr, /MemoryError/);
      assert.match(result!.stderr, /memory limit \(256 MiB of address space per process\)/);
    });
  });

  describe('session memory', () => {
    test('all the processes of a session together hit the session_memory limit (memory cgroup), each one within RLIMIT_AS', async (t) => {
      if (!host.memory) return t.skip(`no writable memory cgroup here: ${host.sessionMemoryMechanism}`);
      const scratch = tempDir('tsgym-sandbox-memory-');
      const tight = await openSandboxHost({
        baseDir: scratch,
        limits: { memoryBytes: 512 * MIB, sessionMemoryBytes: 96 * MIB },
      });
      try {
        const sandbox = await tight.create();
        // Three processes fill 40 MiB each and hold it (up to 300 s, past the command's wall time), so all three
        // are full at once however far apart a loaded machine starts them; the command ends as soon as one of them
        // ends (the one the OOM killer stopped). Should the cap never be hit, the wall time ends it, named as such.
        const hogs = [
          'import os, time',
          'for _ in range(3):',
          '    if os.fork() == 0:',
          '        x = bytes(range(256)) * (40 << 12)',
          '        time.sleep(300)',
          '        os._exit(0)',
          'os.wait()',
        ].join('\n');
        const result = await sandbox.runCommand(`python3 -c '${hogs}'`);
        assert.equal(result.limit_exceeded, 'session_memory', JSON.stringify(result));
        assert.match(result.stderr, /session_memory limit \(96 MiB for all the session's processes/);
        assert.equal(
          (await sandbox.runCommand('python3 -c "print(len(bytes(range(256)) * (40 << 12)))"')).stdout,
          '41943040\n',
          'one alone fits',
        );
      } finally {
        await tight.close();
      }
      assert.equal(existsSync(tight.memory!.root), false, 'the cgroups are removed with the host');
    });
  });

  describe('limits, each named in the output', () => {
    const cases: Array<{ limit: LimitName; command: string; timeoutSecs?: number; text: RegExp }> = [
      {
        // Sixty times the timeout: only the timeout can end it first.
        limit: 'wall_time',
        command: 'sleep 30',
        timeoutSecs: 0.5,
        text: /wall_time limit \(the command ran past its 0\.5 s timeout/,
      },
      {
        limit: 'cpu_time',
        command: 'python3 -c "while True: pass"',
        text: /cpu_time limit \(1 CPU seconds per process\)/,
      },
      { limit: 'output', command: 'yes', text: /output limit \(8192 bytes/ },
      {
        limit: 'file_size',
        command: 'head -c 2000000 /dev/zero > big.bin',
        text: /file_size limit \(1 MiB per file\)/,
      },
      {
        limit: 'disk',
        command: 'for i in 1 2 3 4 5 6; do head -c 900000 /dev/zero > fill$i || exit 1; done',
        text: /disk limit \(4 MiB in the work dir\)/,
      },
      // The sleeps outlast the loop however slowly it forks: they add up until a fork is refused.
      { limit: 'processes', command: 'for i in $(seq 40); do sleep 30 & done; wait', text: /processes limit/ },
      { limit: 'memory', command: 'python3 -c "x = bytearray(512 << 20)"', text: /memory limit/ },
    ];
    for (const { limit, command, timeoutSecs, text } of cases) {
      test(limit, async () => {
        const result = await b.runCommand(command, timeoutSecs ? { timeoutSecs } : {});
        assert.equal(result.limit_exceeded, limit, `${command}: ${JSON.stringify(result)}`);
        assert.notEqual(result.exit_code, 0);
        assert.match(result.stderr, text);
        await b.runCommand('rm -f fill* big.bin');
      });
    }

    test('output is capped while it streams: the kept part is the start, flagged truncated', async () => {
      const result = await b.runCommand('yes abcdefgh');
      assert.equal(result.stdout_truncated, true);
      assert.ok(result.stdout.length <= 8192);
      assert.ok(result.stdout.startsWith('abcdefgh\nabcdefgh\n'));
    });

    test('a command within every limit reports no limit', async () => {
      const result = await b.runCommand('echo fine; echo warn >&2; exit 3');
      assert.deepEqual(
        [result.exit_code, result.stdout, result.stderr, result.limit_exceeded],
        [3, 'fine\n', 'warn\n', null],
      );
    });

    test('session budgets: once used up, later commands are refused and name the budget', async () => {
      const scratch = tempDir('tsgym-sandbox-budgets-');
      const short = await openSandboxHost({ baseDir: scratch, limits: { sessionWallSecs: 1 } });
      // A CPU second takes several seconds of wall time on a loaded machine: the wall time is only an upper bound.
      const frugal = await openSandboxHost({
        baseDir: scratch,
        limits: { sessionCpuSecs: 1, sessionOutputBytes: 5000, commandCpuSecs: 5, commandWallSecs: 120 },
      });
      try {
        const [wall, cpu, output] = await Promise.all([short.create(), frugal.create(), frugal.create()]);
        // Thirty times the session's wall time: only the budget can end it first.
        const cut = await wall.runCommand('sleep 30');
        assert.equal(cut.limit_exceeded, 'session_wall_time');
        assert.match(cut.stderr, /session_wall_time limit \(1 s of commands per session\)/);
        assert.equal((await wall.runCommand('echo hi')).limit_exceeded, 'session_wall_time');
        assert.equal((await cpu.runCommand('python3 -c "while True: pass"')).limit_exceeded, 'session_cpu_time');
        assert.match((await cpu.runCommand('echo hi')).stderr, /session's cpu time budget is used up/);
        assert.equal((await output.runCommand('yes')).limit_exceeded, 'session_output');
        assert.equal((await output.runCommand('echo hi')).limit_exceeded, 'session_output');
      } finally {
        await Promise.all([short.close(), frugal.close()]);
      }
    });
  });

  describe('file operations are confined to the work dir', () => {
    test('read, write and list inside it', async () => {
      assert.deepEqual(await a.writeFile('deep/er/file.txt', 'héllo'), { bytes_written: 6 });
      assert.deepEqual(await a.readFile('deep/er/file.txt', 100), { content: 'héllo', size: 6, truncated: false });
      assert.deepEqual(await a.readFile('./deep//er/file.txt', 2), { content: 'h', size: 6, truncated: true });
      const listing = (await a.listDir('deep', 10)) as {
        entries: Array<{ name: string; type: string }>;
        truncated: boolean;
      };
      assert.deepEqual(
        [listing.entries.map((entry) => [entry.name, entry.type]), listing.truncated],
        [[['er', 'dir']], false],
      );
      assert.equal((await a.runCommand('cat deep/er/file.txt')).stdout, 'héllo');
    });

    test("'..', absolute paths and symlinks pointing out are refused", async () => {
      await a.runCommand(
        'ln -sf /etc/passwd passwd-link; ln -sfn /etc etc-link; ln -sfn .. up-link; ln -sf secret.txt inside-link',
      );
      const refusals: Array<[string, Promise<Record<string, unknown>>, RegExp]> = [
        ['read ..', a.readFile('../etc/passwd', 100), /'\.\.' is not allowed/],
        ['read nested ..', a.readFile('deep/../../x', 100), /'\.\.' is not allowed/],
        ['read absolute', a.readFile('/etc/passwd', 100), /absolute paths are not allowed/],
        ['read symlink to a file outside', a.readFile('passwd-link', 100), /outside the work dir/],
        ['write through a symlinked dir', a.writeFile('etc-link/evil', 'x'), /outside the work dir/],
        ['write absolute', a.writeFile('/tmp/evil', 'x'), /absolute paths are not allowed/],
        ['list ..', a.listDir('..', 10), /'\.\.' is not allowed/],
        ['list symlink to the parent', a.listDir('up-link', 10), /outside the work dir/],
      ];
      for (const [what, answer, reason] of refusals) assert.match(String((await answer).error), reason, what);
      assert.deepEqual(
        await a.readFile('inside-link', 100),
        { content: 'session a only\n', size: 15, truncated: false },
        'a symlink inside is fine',
      );
      assert.deepEqual(await a.writeFile('inside-link', 'session a only\n'), { bytes_written: 15 });
      assert.equal(
        (await a.runCommand('ls /etc/evil /tmp/evil 2>&1 | wc -l; cat secret.txt')).stdout,
        '2\nsession a only\n',
      );
    });
  });

  describe('life cycle', () => {
    test('a SIGKILLed environment leaves nothing running: its sandboxes (and, without root, their holders) go with it', async (t) => {
      // A real environment process: it opens a host, starts a long command in a sandbox, says so, and is then killed.
      const hostModule = new URL('./host.js', import.meta.url).href;
      const killedBase = tempDir('tsgym-sandbox-killed-');
      // Should the reaping below not run, what the dead environment mounted must still go before tempDir's removal.
      t.after(() => {
        for (const point of mountsUnder(killedBase).reverse()) spawnSync('umount', ['-l', point], { stdio: 'ignore' });
      });
      const script = [
        `const { openSandboxHost } = await import(${JSON.stringify(hostModule)});`,
        `const host = await openSandboxHost({ baseDir: ${JSON.stringify(killedBase)} });`,
        'const sandbox = await host.create({});',
        "void sandbox.runCommand('sleep 303');",
        'console.log(JSON.stringify({ uid: sandbox.uid, holder: sandbox.holder?.pid ?? null }));',
        'setInterval(() => {}, 1000);',
      ].join('\n');
      const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      t.after(() => child.kill('SIGKILL'));
      let printed = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (printed += chunk));
      await eventually(() => printed.includes('\n'), {
        what: 'the environment reports its sandbox',
        timeoutMs: 90_000,
      });
      const { uid, holder } = JSON.parse(printed) as { uid: number; holder: number | null };
      const sleeping = () =>
        hostProcesses().filter((proc) => proc.uid === uid && proc.cmdline.trim() === 'sleep 303').length;
      await eventually(() => sleeping() === 1, { what: 'the command runs', timeoutMs: 60_000, intervalMs: 50 });
      assert.equal(ROOTLESS, holder !== null, 'a holder exactly when not root');
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      // Reaped, not only dead: a zombie still has its /proc entry, so the next host would take its owner for alive.
      await exited;
      await eventually(() => sleeping() === 0 && (holder === null || !existsSync(`/proc/${holder}`)), {
        what: () =>
          `the sandbox${holder === null ? '' : ' and its holder'} end with the environment (${sleeping()} still sleeping)`,
        timeoutMs: 60_000,
        intervalMs: 50,
      });
      // The next environment on the same base dir reaps what the dead one left (as root, its mounted work dir).
      const next = await openSandboxHost({ baseDir: killedBase });
      try {
        assert.equal(next.staleRemoved, 1, "the dead environment's owner dir is removed");
        assert.deepEqual(mountsUnder(killedBase), []);
      } finally {
        await next.close();
      }
    });

    test('destroy kills what runs, unmounts and removes the work dir', async (t) => {
      const sandbox = await host.create({ 'x.txt': 'x' });
      t.after(() => sandbox.destroy());
      // The sleep outlasts every wait below: only destroy can end it in time.
      const running = sandbox.runCommand('sleep 300');
      await eventually(() => pidsRunning(sandbox, 'sleep 300').length === 1, {
        what: 'the sleep runs',
        timeoutMs: 60_000,
        intervalMs: 50,
      });
      assert.equal(workMounts(sandbox).length, 1, 'the work dir is a tmpfs of its own');
      await sandbox.destroy();
      assert.match((await running).stderr, /stopped: the session ended/);
      assert.equal(existsSync(sandbox.dir), false);
      assert.deepEqual(workMounts(sandbox), []);
      await eventually(() => sessionPids(sandbox).length === 0, {
        what: "the sandbox's processes are gone",
        timeoutMs: 30_000,
        intervalMs: 50,
      });
      await assert.rejects(sandbox.runCommand('true'), /destroyed/);
    });

    test(
      "start-up removes a dead owner's work dirs and mounts, never a live one's",
      {
        skip:
          ROOTLESS &&
          'as root only: it mounts a tmpfs and runs a straggler as another uid (without root, a killed environment takes its holders with it: tested below)',
      },
      async (t) => {
        const dir = tempDir('tsgym-stale-test-');
        const strayUid = 1_999_999_001;
        const dead = path.join(dir, 'owner-999999999-1-1', `s${strayUid}`, 'work');
        mkdirSync(dead, { recursive: true });
        // Should the host not remove it, the test does (before tempDir's removal at exit, which a mount would stop).
        t.after(() => spawnSync('umount', ['-l', dead], { stdio: 'ignore' }));
        execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tsgym-shell', dead]);
        writeFileSync(path.join(dead, 'left.txt'), 'left behind');
        // A straggler of the dead owner's sandbox (one that lost bwrap's parent-death signal), still running as its uid.
        const straggler = spawn(
          'setpriv',
          ['--reuid', String(strayUid), '--regid', String(strayUid), '--clear-groups', 'sleep', '600'],
          { stdio: 'ignore' },
        );
        t.after(() => straggler.kill('SIGKILL'));
        await eventually(() => pidsOfUid(strayUid).length === 1, {
          what: 'the straggler runs as its uid',
          timeoutMs: 30_000,
          intervalMs: 50,
        });
        const second = await openSandboxHost({ baseDir: dir });
        try {
          assert.equal(second.staleRemoved, 1);
          await eventually(() => straggler.signalCode === 'SIGKILL', {
            what: "the dead owner's straggler is killed",
            timeoutMs: 30_000,
            intervalMs: 50,
          });
          assert.deepEqual(mountsUnder(path.join(dir, 'owner-999999999-1-1')), []);
          assert.deepEqual(readdirSync(dir), [path.basename(second.ownerDir)]);
          const third = await openSandboxHost({ baseDir: dir });
          assert.equal(third.staleRemoved, 0, 'a live owner (this process) is left alone');
          await third.close();
        } finally {
          await second.close();
        }
      },
    );

    test(
      'a base dir the sessions cannot reach is refused at start-up in one paragraph naming the dir, its mode and the fix',
      { skip: ROOTLESS && 'as root only: without root every session runs as the environment itself' },
      async () => {
        const closed = tempDir('tsgym-closed-');
        await assert.rejects(openSandboxHost({ baseDir: path.join(closed, 'deeper', 'base') }), (err: Error) => {
          assert.equal((err as { code?: string }).code, 'GYM_SANDBOX_UNAVAILABLE');
          assert.match(
            err.message,
            new RegExp(
              `^the sandbox base dir ${closed}/deeper/base is out of reach of the sessions: ${closed} has mode 0700, .*sandbox_base_dir.*chmod o\\+x ${closed}\\.$`,
            ),
          );
          assert.doesNotMatch(err.message, /\n/, 'one paragraph');
          return true;
        });
        assert.deepEqual(readdirSync(closed), [], 'nothing is created below it');
      },
    );

    test('32 sandboxes at once, each with its own files', async () => {
      const started = performance.now();
      const sandboxes = await Promise.all(Array.from({ length: 32 }, (_, i) => host.create({ 'id.txt': `${i}\n` })));
      assert.equal(host.live, 34);
      const results = await Promise.all(sandboxes.map((sandbox) => sandbox.runCommand('cat id.txt; ls | wc -l')));
      assert.deepEqual(
        results.map((r) => r.stdout),
        sandboxes.map((_, i) => `${i}\n1\n`),
      );
      await Promise.all(sandboxes.map((sandbox) => sandbox.destroy()));
      assert.equal(host.live, 2);
      process.stdout.write(
        `# 32 sandboxes created, used and destroyed in ${Math.round(performance.now() - started)} ms\n`,
      );
    });
  });
});
