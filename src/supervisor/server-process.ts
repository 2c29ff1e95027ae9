import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';
import { once } from 'node:events';
import type { LaunchSpec } from '../config/index.js';
import { jsonLogs, toEvent } from '../logging/log.js';

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Set when the process could not be started at all (e.g. the executable does not exist). */
  error?: Error;
}

export interface ServerProcessOptions {
  name: string;
  /** An executable and its arguments: never run through a shell. */
  launch: LaunchSpec;
  env: NodeJS.ProcessEnv;
  /** Every output line is also appended here (without the prefix: the file is named after the server). */
  logFile: string;
  /** More files that get every line (the other server's log of a co-located pair). */
  alsoLogTo?: readonly string[];
  /** Receives every output line prefixed `(<name>) `. */
  out: NodeJS.WritableStream;
}

const TAIL_LINES = 20;

/**
 * One server child process. It is spawned without a shell as the leader of its own process group, so a stop
 * reaches any subprocess it starts and a Ctrl-C in the terminal reaches only the supervisor, which then stops
 * the servers in order. Its stdout and stderr are read line by line: each line goes to `out` with the server's
 * name in front, to the server's log file, and into a short tail kept for error messages.
 */
export class ServerProcess {
  readonly name: string;
  readonly logFile: string;
  readonly child: ChildProcess;
  /** Resolves when the process has exited (or failed to start); never rejects. */
  readonly exited: Promise<ExitInfo>;
  private exitInfo: ExitInfo | undefined;
  private readonly tailLines: string[] = [];
  private readonly log: WriteStream;
  private readonly extraLogs: WriteStream[];
  private readonly out: NodeJS.WritableStream;
  private readonly outputDone: Promise<unknown>;

  constructor(options: ServerProcessOptions) {
    this.name = options.name;
    this.logFile = options.logFile;
    this.out = options.out;
    this.log = createWriteStream(options.logFile, { flags: 'a' });
    this.log.on('error', () => undefined);
    this.extraLogs = (options.alsoLogTo ?? []).map((file) => createWriteStream(file, { flags: 'a' }));
    for (const extra of this.extraLogs) extra.on('error', () => undefined);
    this.child = spawn(options.launch.command, options.launch.args, {
      cwd: options.launch.cwd,
      env: options.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: process.platform !== 'win32',
      shell: false,
      windowsHide: true,
    });
    this.exited = new Promise<ExitInfo>((resolve) => {
      this.child.once('exit', (code, signal) => resolve((this.exitInfo ??= { code, signal })));
      this.child.once('error', (error) => {
        // 'error' without a pid means the spawn itself failed; later errors (a failed kill) are not exits.
        if (this.child.pid === undefined) {
          this.line(`could not be started: ${error.message}`);
          resolve((this.exitInfo ??= { code: null, signal: null, error }));
        }
      });
    });
    this.outputDone = Promise.all([this.pump(this.child.stdout, 'stdout'), this.pump(this.child.stderr, 'stderr')]);
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get hasExited(): boolean {
    return this.exitInfo !== undefined;
  }

  /** The last lines the server wrote (its own output, or the reason it could not start). */
  tail(): string[] {
    return [...this.tailLines];
  }

  /**
   * Stop the server: SIGINT to its process group, `graceMs` to exit on its own, then SIGKILL, then wait (bounded)
   * until it is reaped and its output is flushed to the log.
   */
  async stop(graceMs: number): Promise<ExitInfo> {
    if (!this.hasExited) {
      this.signal('SIGINT');
      await within(this.exited, graceMs);
    }
    // Also after a clean exit of the leader: a subprocess it left in its group must not outlive it.
    this.signal('SIGKILL');
    const info = await within(this.exited, 2_000);
    await this.closeOutput();
    return info ?? { code: null, signal: null, error: new Error('did not exit after SIGKILL') };
  }

  /** Synchronous last resort for `process.on('exit')`: kill the group without waiting. */
  killNow(): void {
    if (!this.hasExited) this.signal('SIGKILL');
  }

  /** Wait (bounded) until the pipes are drained, then close the log file. */
  async closeOutput(): Promise<void> {
    await within(this.outputDone, 500);
    for (const log of [this.log, ...this.extraLogs]) {
      if (log.closed) continue;
      log.end();
      await within(
        once(log, 'close').catch(() => undefined),
        500,
      );
    }
  }

  private signal(signal: NodeJS.Signals): void {
    const pid = this.child.pid;
    if (pid === undefined) return;
    try {
      if (process.platform === 'win32') this.child.kill(signal);
      else process.kill(-pid, signal);
    } catch {
      // The group is already gone.
    }
  }

  private async pump(stream: NodeJS.ReadableStream | null, name: 'stdout' | 'stderr'): Promise<void> {
    if (!stream) return;
    const decoder = new StringDecoder('utf8');
    let pending = '';
    try {
      for await (const chunk of stream) {
        pending += decoder.write(chunk);
        let newline = pending.indexOf('\n');
        while (newline >= 0) {
          this.line(pending.slice(0, newline).replace(/\r$/, ''), name);
          pending = pending.slice(newline + 1);
          newline = pending.indexOf('\n');
        }
      }
    } catch {
      // A pipe error ends this stream's output; the exit status still tells what happened.
    }
    pending += decoder.end();
    if (pending) this.line(pending, name);
  }

  private line(text: string, stream: 'stdout' | 'stderr' = 'stderr'): void {
    if (jsonLogs()) return this.eventLine(text, stream);
    this.tailLines.push(text);
    if (this.tailLines.length > TAIL_LINES) this.tailLines.shift();
    for (const log of [this.log, ...this.extraLogs]) if (!log.writableEnded) log.write(`${text}\n`);
    this.out.write(`(${this.name}) ${text}\n`);
  }

  /** json logs: the server's events pass as they are, any other line (a Python server's, a crash) becomes one. */
  private eventLine(text: string, stream: 'stdout' | 'stderr'): void {
    if (text.trim() === '') return;
    const event = toEvent(this.name, text, stream);
    this.tailLines.push(event.msg);
    if (this.tailLines.length > TAIL_LINES) this.tailLines.shift();
    for (const log of [this.log, ...this.extraLogs]) if (!log.writableEnded) log.write(`${event.line}\n`);
    this.out.write(`${event.line}\n`);
  }
}

export function describeExit(info: ExitInfo): string {
  if (info.error) return `could not be started (${info.error.message})`;
  if (info.signal) return `was killed by ${info.signal}`;
  return `exited with code ${info.code}`;
}

/** `promise`'s value, or undefined once `ms` have passed; the timer never outlives the race. */
export function within<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
