/**
 * The reaper: a tiny watchdog process that kills the supervisor's servers if the supervisor dies without stopping
 * them (SIGKILL, OOM kill, a crash that skips `exit` handlers).
 *
 * The supervisor writes `+<pid>` when it spawns a server and `-<pid>` once it has reaped it, on this process's
 * stdin. When stdin reaches EOF — which the kernel guarantees once the supervisor is gone, however it died — every
 * server still registered has its whole process group killed. After a clean stop nothing is registered and the
 * reaper just exits.
 *
 * It runs in its own session (spawned detached) so that Ctrl-C in the terminal, a hang-up, or a kill of the
 * supervisor's process group does not take it down before it has done its job.
 */
const registered = new Set<number>();
let pending = '';

for (const signal of ['SIGINT', 'SIGHUP', 'SIGTERM'] as const) process.on(signal, () => undefined);

process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk: string) => {
  pending += chunk;
  const lines = pending.split('\n');
  pending = lines.pop() ?? '';
  for (const line of lines) {
    const pid = Number(line.slice(1));
    if (!Number.isInteger(pid) || pid <= 0) continue;
    if (line.startsWith('+')) registered.add(pid);
    else if (line.startsWith('-')) registered.delete(pid);
  }
});
process.stdin.on('error', reapAndExit);
process.stdin.on('end', reapAndExit);
process.stdin.on('close', reapAndExit);

function reapAndExit(): void {
  for (const pid of registered) {
    try {
      // Servers are spawned as process-group leaders: the group takes any subprocess of theirs along.
      process.kill(-pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  registered.clear();
  process.exit(0);
}
