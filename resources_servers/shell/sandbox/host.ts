/**
 * The sandbox host: what the shell environment opens once at start-up and asks for a sandbox per session. Opening
 * it checks every prerequisite, reaps what a dead previous process left, sets up per-session memory cgroups where
 * the machine allows them, and proves one sandbox works; when any of that fails it refuses with an error naming
 * what is missing, because commands never run unsandboxed. Each sandbox gets a random high host uid and its own
 * tmpfs work dir under this host's owner dir; closing the host destroys them all.
 */
import { randomInt } from 'node:crypto';
import { chmodSync, chownSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { SandboxPrograms } from './bwrap-args.js';
import { SandboxError, SandboxUnavailableError } from './errors.js';
import { DEFAULT_LIMITS, type SandboxLimits } from './limits.js';
import { openMemoryCgroups, type MemoryCgroups, type SessionCgroup } from './memory-cgroup.js';
import { mountWorkDir, unmountUnder } from './mounts.js';
import { findOnPath, missingPrerequisites, selfTest, unreachableForSessions } from './prerequisites.js';
import { runsRootless, SessionHolder } from './rootless.js';
import { Sandbox } from './sandbox.js';
import { stageLauncher } from './staged-launcher.js';
import { cgroupOwnerGone, newOwnerName, makeTraversable, removeStaleOwners } from './stale-owners.js';

/** Host uids handed to sessions: a high range no system account uses, picked at random per sandbox. */
const UID_RANGE = { min: 1_100_000_000, max: 2_100_000_000 };
const CGROUP_PREFIX = 'tsgym-shell-';

export interface SandboxHostOptions {
  /** This environment's own directory; every session's work dir lives under `<baseDir>/owner-<pid>/`. */
  baseDir: string;
  limits?: Partial<SandboxLimits>;
}

/** Open the sandbox host: check every prerequisite, clean what a dead previous process left, prove one sandbox works. */
export async function openSandboxHost(options: SandboxHostOptions): Promise<SandboxHost> {
  const missing = missingPrerequisites();
  if (missing.length > 0) {
    throw new SandboxUnavailableError(
      `the shell environment cannot create its sandboxes on this machine, and it never runs commands unsandboxed: ${missing.join('; ')}.`,
    );
  }
  const limits = { ...DEFAULT_LIMITS, ...options.limits };
  // Found, or missingPrerequisites would have said so.
  const bwrap = findOnPath('bwrap')!;
  // Without root every sandbox runs as this process's own uid, which reaches whatever the environment reaches.
  const unreachable = runsRootless() ? undefined : unreachableForSessions(options.baseDir, bwrap);
  if (unreachable) throw new SandboxUnavailableError(unreachable);
  const removed = await removeStaleOwners(options.baseDir);
  const owner = newOwnerName();
  const memory = await openMemoryCgroups(CGROUP_PREFIX, owner, cgroupOwnerGone);
  const host = new SandboxHost(options.baseDir, owner, bwrap, limits, removed, memory);
  await selfTest(host);
  return host;
}

/** What a session may set for its own sandbox (a Harbor task's): where its work dir appears, its files' modes, its wall budget. */
export interface SandboxOptions {
  /** Default /work. Checked by the caller (a Harbor task's WORKDIR: see harbor/dockerfile.ts). */
  workMount?: string;
  /** File modes by path; default 0755 for `.sh` files, 0644 for the rest. */
  modes?: Record<string, number>;
  /** Directories to make (relative to the work dir) besides the files' parents: a Harbor task's empty ones. */
  dirs?: string[];
  /** The session's wall budget in place of the host's `sessionWallSecs` (a Harbor task's agent timeout). */
  sessionWallSecs?: number;
}

export class SandboxHost {
  readonly ownerDir: string;
  private readonly programs: SandboxPrograms;
  private readonly sandboxes = new Set<Sandbox>();
  private readonly uids = new Set<number>();
  /** Sessions held without root so far: their dirs are `r<n>` (never `s<uid>`, which names a root session's uid). */
  private heldSessions = 0;
  private closed = false;

  constructor(
    readonly baseDir: string,
    owner: string,
    bwrap: string,
    readonly limits: SandboxLimits,
    /** Owner dirs of dead previous processes removed at start-up. */
    readonly staleRemoved: number,
    /** Per-session memory cgroups, when this machine allows them. */
    readonly memory: MemoryCgroups | undefined,
  ) {
    this.ownerDir = path.join(baseDir, owner);
    makeTraversable(this.ownerDir);
    this.programs = { bwrap, launcher: stageLauncher(this.ownerDir) };
  }

  /** What enforces the session memory limit here. */
  get sessionMemoryMechanism(): string {
    return this.memory
      ? `memory cgroup (v${this.memory.version})`
      : 'none: no writable memory cgroup, RLIMIT_AS per process only';
  }

  get live(): number {
    return this.sandboxes.size;
  }

  /** A new sandbox whose work dir holds `files` (paths relative to the work dir, already validated by the caller). */
  async create(files: Record<string, string | Buffer> = {}, options: SandboxOptions = {}): Promise<Sandbox> {
    if (this.closed) throw new SandboxError('the sandbox host is shut down');
    const sandbox = runsRootless() ? await this.createHeld(files, options) : await this.createOwned(files, options);
    this.sandboxes.add(sandbox);
    return sandbox;
  }

  /** As root: a session uid of its own and a tmpfs mounted on the host, owned by that uid. */
  private async createOwned(files: Record<string, string | Buffer>, options: SandboxOptions): Promise<Sandbox> {
    let uid: number;
    do uid = randomInt(UID_RANGE.min, UID_RANGE.max);
    while (this.uids.has(uid));
    this.uids.add(uid);
    const dir = path.join(this.ownerDir, `s${uid}`);
    const work = path.join(dir, 'work');
    let cgroup: SessionCgroup | undefined;
    try {
      // Traversable, not listable: bwrap runs as the session's uid and must reach the work dir to bind it.
      mkdirSync(dir);
      chmodSync(dir, 0o711);
      mkdirSync(work, { mode: 0o700 });
      await mountWorkDir(work, this.limits.diskBytes, uid);
      seedWorkDir(work, files, options);
      chownTree(work, uid);
      cgroup = this.memory?.create(`s${uid}`, this.limits.sessionMemoryBytes);
    } catch (err) {
      await cgroup?.remove();
      await unmountUnder(dir);
      rmSync(dir, { recursive: true, force: true });
      this.uids.delete(uid);
      throw workDirError(err);
    }
    return new Sandbox(
      this.sessionLimits(options),
      this.programs,
      uid,
      dir,
      work,
      cgroup,
      (destroyed) => this.release(destroyed),
      options.workMount,
    );
  }

  /**
   * Without root: this process's uid for every session, and a holder (rootless.ts) whose namespaces keep the
   * session's tmpfs work dir and count its processes. The files are written through the holder's view of the dir.
   */
  private async createHeld(files: Record<string, string | Buffer>, options: SandboxOptions): Promise<Sandbox> {
    const dir = path.join(this.ownerDir, `r${++this.heldSessions}`);
    const work = path.join(dir, 'work');
    let holder: SessionHolder | undefined;
    try {
      mkdirSync(dir, { mode: 0o700 });
      mkdirSync(work, { mode: 0o700 });
      holder = await SessionHolder.start(work, this.limits.diskBytes);
      seedWorkDir(holder.view(work), files, options);
    } catch (err) {
      await holder?.stop();
      rmSync(dir, { recursive: true, force: true });
      throw workDirError(err);
    }
    return new Sandbox(
      this.sessionLimits(options),
      this.programs,
      process.getuid!(),
      dir,
      work,
      undefined,
      (destroyed) => this.release(destroyed),
      options.workMount,
      holder,
    );
  }

  private sessionLimits(options: SandboxOptions): SandboxLimits {
    return options.sessionWallSecs ? { ...this.limits, sessionWallSecs: options.sessionWallSecs } : this.limits;
  }

  /** Destroy every sandbox and the owner dir (environment shutdown). */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.sandboxes].map((sandbox) => sandbox.destroy()));
    await unmountUnder(this.ownerDir);
    rmSync(this.ownerDir, { recursive: true, force: true });
    await this.memory?.close();
  }

  /** What a destroyed sandbox hands back: its cgroup, its mounted work dir and its uid. */
  private async release(sandbox: Sandbox): Promise<void> {
    await sandbox.holder?.stop();
    await sandbox.cgroup?.remove();
    await unmountUnder(sandbox.dir);
    rmSync(sandbox.dir, { recursive: true, force: true });
    this.sandboxes.delete(sandbox);
    this.uids.delete(sandbox.uid);
  }
}

/** Write the session's first files (and a Harbor task's empty dirs) into its new, empty work dir. */
function seedWorkDir(work: string, files: Record<string, string | Buffer>, options: SandboxOptions): void {
  // The work dir is new and empty: nothing untrusted can have planted a symlink in it yet.
  for (const relative of options.dirs ?? []) mkdirSync(path.join(work, relative), { recursive: true });
  for (const [relative, content] of Object.entries(files)) {
    const target = path.join(work, relative);
    mkdirSync(path.dirname(target), { recursive: true });
    writeFileSync(target, content);
    chmodSync(target, (options.modes?.[relative] ?? (relative.endsWith('.sh') ? 0o755 : 0o644)) & 0o755);
  }
}

function workDirError(err: unknown): SandboxError {
  return new SandboxError(`could not create a sandbox work dir: ${err instanceof Error ? err.message : String(err)}`);
}

/** Give the work dir and its seeded files to the session's uid (its subdirectories mode 0755). */
function chownTree(dir: string, uid: number): void {
  chownSync(dir, uid, uid);
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const child = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      chmodSync(child, 0o755);
      chownTree(child, uid);
    } else chownSync(child, uid, uid);
  }
}
