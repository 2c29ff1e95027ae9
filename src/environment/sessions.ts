/**
 * Per-session state with an idle expiry. A collector that is killed mid-run never calls `/verify`, so every
 * session it seeded would otherwise live as long as the process (NeMo Gym issue 2609): here a session untouched
 * for `idleTimeoutMs` is dropped by a sweeper and handed to `dispose`. The map is kept in last-use order (a touch
 * moves the entry to the end), so a sweep walks only the expired entries at its front.
 */

export interface SessionOptions {
  /** A session with no request for this long is dropped (and disposed). Default 1 hour. */
  idleTimeoutSecs?: number;
  /** At most this many live sessions; seeding one more answers 503. Default 100 000. */
  maxSessions?: number;
}

/** Why a state is being disposed. */
export type DisposeReason = 'verified' | 'expired' | 'replaced' | 'shutdown';

export const DEFAULT_IDLE_TIMEOUT_SECS = 3600;
export const DEFAULT_MAX_SESSIONS = 100_000;

interface Entry<State> {
  state: State;
  lastUsed: number;
}

export class SessionStore<State> {
  private readonly entries = new Map<string, Entry<State>>();
  private readonly idleMs: number;
  readonly maxSessions: number;
  private readonly touchSlackMs: number;
  private sweeper: NodeJS.Timeout | undefined;

  constructor(
    options: SessionOptions,
    private readonly dispose: (state: State, reason: DisposeReason) => void,
  ) {
    const idle = options.idleTimeoutSecs ?? DEFAULT_IDLE_TIMEOUT_SECS;
    const max = options.maxSessions ?? DEFAULT_MAX_SESSIONS;
    if (!(idle > 0) || !Number.isFinite(idle))
      throw new Error(`sessions.idleTimeoutSecs must be a positive number of seconds, got ${idle}`);
    if (!Number.isInteger(max) || max < 1) throw new Error(`sessions.maxSessions must be an integer ≥ 1, got ${max}`);
    this.idleMs = idle * 1000;
    this.touchSlackMs = Math.min(1000, this.idleMs / 100);
    this.maxSessions = max;
  }

  get size(): number {
    return this.entries.size;
  }

  get idleTimeoutSecs(): number {
    return this.idleMs / 1000;
  }

  /** The session's state, marking it used now; undefined when it has none (never seeded, verified, expired). */
  get(id: string): State | undefined {
    const entry = this.entries.get(id);
    if (entry === undefined) return undefined;
    this.touch(id, entry);
    return entry.state;
  }

  has(id: string): boolean {
    return this.entries.has(id);
  }

  isFull(): boolean {
    return this.entries.size >= this.maxSessions;
  }

  /** Store a session's state; a state it replaces is disposed. */
  set(id: string, state: State): void {
    const previous = this.entries.get(id);
    if (previous !== undefined) {
      this.entries.delete(id);
      if (previous.state !== state) this.dispose(previous.state, 'replaced');
    }
    this.entries.set(id, { state, lastUsed: Date.now() });
    this.startSweeper();
  }

  /** Remove a session and return its state (the caller disposes it). */
  take(id: string): State | undefined {
    const entry = this.entries.get(id);
    if (entry === undefined) return undefined;
    this.entries.delete(id);
    return entry.state;
  }

  /** Drop every session idle for longer than the timeout. Returns how many were dropped. */
  sweep(now = Date.now()): number {
    let dropped = 0;
    for (const [id, entry] of this.entries) {
      if (now - entry.lastUsed < this.idleMs) break; // last-use order: everything after is fresher
      this.entries.delete(id);
      dropped++;
      this.dispose(entry.state, 'expired');
    }
    if (this.entries.size === 0) this.stopSweeper();
    return dropped;
  }

  /** Stop the sweeper and dispose every live session (server shutdown). */
  clear(): void {
    this.stopSweeper();
    const states = [...this.entries.values()];
    this.entries.clear();
    for (const entry of states) this.dispose(entry.state, 'shutdown');
  }

  private touch(id: string, entry: Entry<State>): void {
    const now = Date.now();
    // Re-inserting costs a hash delete and insert: skip it when the entry was used very recently (under a
    // hundredth of the timeout, at most a second), which leaves the map in last-use order all the same.
    if (now - entry.lastUsed < this.touchSlackMs) return;
    entry.lastUsed = now;
    this.entries.delete(id);
    this.entries.set(id, entry);
  }

  private startSweeper(): void {
    if (this.sweeper !== undefined) return;
    // A quarter of the timeout, so a session outlives its timeout by at most 25 %; at most once a minute.
    const every = Math.max(10, Math.min(this.idleMs / 4, 60_000));
    this.sweeper = setInterval(() => this.sweep(), every);
    this.sweeper.unref(); // never keeps the process alive
  }

  private stopSweeper(): void {
    if (this.sweeper === undefined) return;
    clearInterval(this.sweeper);
    this.sweeper = undefined;
  }
}
