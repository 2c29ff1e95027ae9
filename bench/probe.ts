import { renameSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import path from 'node:path';
import v8 from 'node:v8';
import vm from 'node:vm';
import { sampleProc } from './procs.js';

/**
 * Preloaded into tsgym processes by the bench (`node --import …/probe.js …`), each part switched on by a variable:
 *
 * - TSGYM_BENCH_PROBE=<file>: write the process's own final /proc reading (CPU, VmHWM, bytes moved) there as it
 *   exits, which a parent cannot read once the child is gone. SIGTERM (the bench's time cap) exits normally so
 *   the reading is still written.
 * - TSGYM_BENCH_CPU_PROFILE_DIR=<dir>: record a CPU profile and write `<dir>/<pid>.cpuprofile` at exit. (Node 20
 *   refuses `--cpu-prof` in NODE_OPTIONS, and NODE_OPTIONS is the only way into the servers `gym env start` spawns.)
 * - TSGYM_BENCH_MEMORY_DIR=<dir>: on SIGUSR2, run a full garbage collection and write `<dir>/<pid>.json` with the
 *   process's RSS and V8 heap in use (bytes) after it: what the process still holds, which an idle process's RSS
 *   alone does not say (V8 collects when it allocates, not when it idles). Scenario 10 reads the model server so.
 */
const probeFile = process.env.TSGYM_BENCH_PROBE;
const profileDir = process.env.TSGYM_BENCH_CPU_PROFILE_DIR;
const memoryDir = process.env.TSGYM_BENCH_MEMORY_DIR;

if (probeFile) {
  process.on('exit', () => writeFileSync(probeFile, JSON.stringify(sampleProc('self'))));
  process.once('SIGTERM', () => process.exit(143));
}

if (profileDir) {
  const session = new Session();
  session.connect();
  session.post('Profiler.enable');
  session.post('Profiler.setSamplingInterval', { interval: 1000 });
  session.post('Profiler.start');
  // An in-thread inspector session answers synchronously, so the profile can be written from the exit handler.
  process.on('exit', () => {
    session.post('Profiler.stop', (err, result) => {
      if (!err) writeFileSync(path.join(profileDir, `${process.pid}.cpuprofile`), JSON.stringify(result.profile));
    });
  });
}

if (memoryDir) {
  // Set here rather than as --expose-gc, so the process's own global has no `gc`: only a context made after the flag
  // is set gets one.
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  process.on('SIGUSR2', () => {
    gc();
    const { rss, heapUsed, heapTotal, external } = process.memoryUsage();
    const file = path.join(memoryDir, `${process.pid}.json`);
    // Whole or not at all: the bench polls for the file.
    writeFileSync(`${file}.tmp`, JSON.stringify({ rss, heapUsed, heapTotal, external }));
    renameSync(`${file}.tmp`, file);
  });
}
