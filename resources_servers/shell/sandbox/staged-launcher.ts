/**
 * The launcher as the sandboxes get it. bwrap runs as each session's unprivileged uid and opens every bind source
 * itself, so a launcher bound straight from the installation fails wherever tsgym sits below a directory that uid
 * cannot enter (a home directory, a `mktemp -d`), and nothing in the installation need be writable or even
 * readable by anyone but the server. So the host copies `launcher.py` once, at start-up, into a directory of its
 * own under the sandbox base dir, root's and world-readable (dir 0755, file 0644, whatever the umask), where the
 * start-up checks have already proved every session uid can reach. A copy rather than bwrap's
 * `--ro-bind-data FD`: with an fd the launcher would be fed through one more pipe on every invocation (thousands
 * per run, each a chance to fail mid-session), while the copy is made once and proved by the self-test.
 */
import { chmodSync, copyFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { installRoot } from '../../../src/config/index.js';

/** The launcher as the package ships it; only the server (root) reads it. */
export const PACKAGED_LAUNCHER = path.join(installRoot(), 'resources_servers', 'shell', 'sandbox', 'launcher.py');

/** Copy the launcher into `<ownerDir>/runtime/`, readable by every session uid; returns the copy's path. */
export function stageLauncher(ownerDir: string): string {
  const dir = path.join(ownerDir, 'runtime');
  mkdirSync(dir, { recursive: true });
  chmodSync(dir, 0o755);
  const staged = path.join(dir, 'launcher.py');
  copyFileSync(PACKAGED_LAUNCHER, staged);
  chmodSync(staged, 0o644);
  return staged;
}
