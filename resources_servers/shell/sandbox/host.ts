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
  const unreachable = unreachableForSessions(options.baseDir, bwrap);
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
      // The work dir is new and empty: nothing untrusted can have planted a symlink in it yet.
      for (const relative of options.dirs ?? []) mkdirSync(path.join(work, relative), { recursive: true });
      for (const [relative, content] of Object.entries(files)) {
        const target = path.join(work, relative);
        mkdirSync(path.dirname(target), { recursive: true });
        writeFileSync(target, content);
        chmodSync(target, (options.modes?.[relative] ?? (relative.endsWith('.sh') ? 0o755 : 0o644)) & 0o755);
      }
      chownTree(work, uid);
      cgroup = this.memory?.create(`s${uid}`, this.limits.sessionMemoryBytes);
    } catch (err) {
      await cgroup?.remove();
      await unmountUnder(dir);
      rmSync(dir, { recursive: true, force: true });
      this.uids.delete(uid);
      throw new SandboxError(
        `could not create a sandbox work dir: ${err instanceof Error ? err.message : String(err)}`,
      );
    }
    const limits = options.sessionWallSecs ? { ...this.limits, sessionWallSecs: options.sessionWallSecs } : this.limits;
    const sandbox = new Sandbox(
      limits,
      this.programs,
      uid,
      dir,
      work,
      cgroup,
      (destroyed) => this.release(destroyed),
      options.workMount,
    );
    this.sandboxes.add(sandbox);
    return sandbox;
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
    await sandbox.cgroup?.remove();
    await unmountUnder(sandbox.dir);
    rmSync(sandbox.dir, { recursive: true, force: true });
    this.sandboxes.delete(sandbox);
    this.uids.delete(sandbox.uid);
  }
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
