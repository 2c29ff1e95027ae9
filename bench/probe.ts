import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import path from 'node:path';
import { sampleProc } from './procs.js';

/**
 * Preloaded into tsgym processes by the bench (`node --import …/probe.js …`), each part switched on by a variable:
 *
 * - TSGYM_BENCH_PROBE=<file>: write the process's own final /proc reading (CPU, VmHWM, bytes moved) there as it
 *   exits, which a parent cannot read once the child is gone. SIGTERM (the bench's time cap) exits normally so
 *   the reading is still written.
 * - TSGYM_BENCH_CPU_PROFILE_DIR=<dir>: record a CPU profile and write `<dir>/<pid>.cpuprofile` at exit. (Node 20
 *   refuses `--cpu-prof` in NODE_OPTIONS, and NODE_OPTIONS is the only way into the servers `gym env start` spawns.)
 */
const probeFile = process.env.TSGYM_BENCH_PROBE;
const profileDir = process.env.TSGYM_BENCH_CPU_PROFILE_DIR;

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
