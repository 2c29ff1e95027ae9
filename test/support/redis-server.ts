/**
 * Test and bench support: a real `redis-server` process on a free loopback port, without persistence (a restart
 * comes back empty, the harshest case for the collector). Stoppable, killable and restartable on the same port.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { findFreePort } from '../../src/config/index.js';

export const REDIS_SERVER_BIN = process.env.TSGYM_REDIS_SERVER ?? '/usr/bin/redis-server';

export interface RedisProcess {
  port: number;
  url: string;
  /** The running server's pid (changes on restart). */
  pid(): number;
  /** SIGKILL (no goodbye to clients) and wait for the exit. */
  kill(): Promise<void>;
  /** Start again on the same port, empty. */
  restart(): Promise<void>;
}

function answersPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let reply = '';
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk) => {
      reply += chunk.toString('latin1');
      if (reply.includes('\r\n')) done(reply.startsWith('+PONG'));
    });
    socket.once('error', () => done(false));
  });
}

const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

export async function startRedis(port?: number): Promise<RedisProcess> {
  const chosen = port ?? (await findFreePort());
  let child: ChildProcess;
  const launch = async (): Promise<void> => {
    child = spawn(
      REDIS_SERVER_BIN,
      ['--port', String(chosen), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      { stdio: 'ignore' },
    );
    running.add(child);
    const spawned = child;
    spawned.once('exit', () => running.delete(spawned));
    const deadline = Date.now() + 10_000;
    while (!(await answersPing(chosen))) {
      if (spawned.exitCode !== null)
        throw new Error(`redis-server exited with code ${spawned.exitCode} on port ${chosen}`);
      if (Date.now() > deadline) throw new Error(`redis-server did not answer PING on port ${chosen} within 10 s`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  await launch();
  const kill = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  };
  return {
    port: chosen,
    url: `redis://127.0.0.1:${chosen}`,
    pid: () => child.pid!,
    kill,
    async restart() {
      await kill();
      await launch();
    },
  };
}
