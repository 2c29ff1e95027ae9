/**
 * The model server's open rollouts: which ids may be called through `/ng-rollout/<id>/…`, and the records of their
 * calls until the remote agent closes them. Everything is bounded, so a collector that crashed between open and close
 * leaks nothing: a cap on open rollouts, a cap on records per rollout (the calls over it are counted as a gap), and an
 * idle expiry that drops a rollout no call and no close touched for `idleMs`.
 *
 * A call holds the `OpenRollout` it started under, not its id: a record that finishes after its rollout was closed
 * (or replaced by a fresh open of the same id) is dropped, never written into whatever holds the id now.
 */
import type { CaptureGap, ModelCallRecord } from './records.js';

export interface RolloutBookLimits {
  maxOpen: number;
  maxCallsPerRollout: number;
  idleMs: number;
  /**
   * Token ids and log-probs held per rollout (prompt + generation of every captured call): past it a call's arrays
   * are dropped and the rollout carries a gap, so its row is masked rather than trained on. Unset: the default.
   */
  maxCapturedTokensPerRollout?: number;
  /**
   * How long a close waits for the rollout's running calls to finish before it answers them as a gap. A service that
   * drops a model call and replies at once races the model server's noticing of the dropped connection; the wait lets
   * that call end as what it was (`client_gone`). Unset: the default.
   */
  closeSettleMs?: number;
}

export const DEFAULT_MAX_CAPTURED_TOKENS_PER_ROLLOUT = 4_000_000;
/** Well under the remote agent's 30 s bookkeeping timeout, so a close always answers before the agent gives up on it. */
const DEFAULT_CLOSE_SETTLE_MS = 10_000;

export class OpenRollout {
  readonly calls: ModelCallRecord[] = [];
  readonly gaps: CaptureGap[] = [];
  private nextIndex = 0;
  private dropped = 0;
  private capturedTokens = 0;
  private tokensDropped = 0;
  private running = 0;
  private settled: (() => void)[] = [];
  closed = false;
  lastTouched = Date.now();

  constructor(
    readonly id: string,
    private readonly maxCalls: number,
    private readonly maxTokens = DEFAULT_MAX_CAPTURED_TOKENS_PER_ROLLOUT,
  ) {}

  /** The next call's index in this rollout. */
  takeIndex(): number {
    return this.nextIndex++;
  }

  /** Calls started and not yet recorded. */
  get inFlight(): number {
    return this.running;
  }

  callStarted(): void {
    this.running++;
  }

  /** A started call's end: its record (kept unless the rollout is closed), and a wake-up for a close waiting on it. */
  callFinished(call: ModelCallRecord): void {
    this.running--;
    this.record(call);
    if (this.running === 0) for (const wake of this.settled.splice(0)) wake();
  }

  /** Resolves when no call is running, or after `ms`, whichever is first. */
  async settle(ms: number): Promise<void> {
    if (this.running === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await new Promise<void>((resolve) => {
      this.settled.push(resolve);
      timer = setTimeout(resolve, ms).unref();
    });
    clearTimeout(timer);
  }

  private record(call: ModelCallRecord): void {
    if (this.closed) return;
    this.lastTouched = Date.now();
    if (this.calls.length < this.maxCalls) this.calls.push(this.withinTokenCap(call));
    else this.dropped++;
  }

  /** The call, its token arrays dropped (and counted) when they would take the rollout past its cap. */
  private withinTokenCap(call: ModelCallRecord): ModelCallRecord {
    const size = (call.prompt_token_ids?.length ?? 0) + 2 * (call.generation_token_ids?.length ?? 0);
    if (size === 0) return call;
    if (this.capturedTokens + size <= this.maxTokens) {
      this.capturedTokens += size;
      return call;
    }
    this.tokensDropped++;
    const { prompt_token_ids: _p, generation_token_ids: _g, generation_log_probs: _l, ...rest } = call;
    return rest;
  }

  /** The gaps as the row shows them: the fixed ones plus the count of records over the cap. */
  allGaps(): CaptureGap[] {
    const over: CaptureGap[] =
      this.dropped > 0
        ? [{ code: 'model_call_capture_records_dropped', detail: `count=${this.dropped} (max_calls_per_rollout)` }]
        : [];
    if (this.tokensDropped > 0) {
      over.push({
        code: 'token_id_capture_over_cap',
        detail: `the token ids of ${this.tokensDropped} call(s) were dropped (max_captured_tokens_per_rollout)`,
      });
    }
    return [...this.gaps, ...over];
  }
}

export type OpenResult = { ok: true; replaced: boolean } | { ok: false; reason: string };

export class RolloutBook {
  private readonly open = new Map<string, OpenRollout>();
  private readonly sweeper: NodeJS.Timeout;
  /** Rollouts dropped by idle expiry since start (shown on /metrics). */
  expired = 0;

  /** `onExpire` hears of each rollout dropped by idle expiry. */
  constructor(
    private readonly limits: RolloutBookLimits,
    private readonly onExpire: () => void = () => {},
  ) {
    this.sweeper = setInterval(() => this.sweep(), Math.max(50, Math.min(limits.idleMs / 4, 60_000)));
    this.sweeper.unref();
  }

  get size(): number {
    return this.open.size;
  }

  /** Open `id`; an id already open is replaced with an empty one (a new attempt never inherits old records). */
  openRollout(id: string): OpenResult {
    const existing = this.open.get(id);
    if (!existing && this.open.size >= this.limits.maxOpen) {
      return {
        ok: false,
        reason:
          `${this.open.size} rollouts are open, the most this model server keeps (max_open_rollouts); close ` +
          'finished rollouts, or raise max_open_rollouts',
      };
    }
    if (existing) existing.closed = true;
    this.open.set(id, new OpenRollout(id, this.limits.maxCallsPerRollout, this.limits.maxCapturedTokensPerRollout));
    return { ok: true, replaced: existing !== undefined };
  }

  /** The open rollout of `id`, touched; undefined when it was never opened, was closed, or expired. */
  get(id: string): OpenRollout | undefined {
    const rollout = this.open.get(id);
    if (rollout) rollout.lastTouched = Date.now();
    return rollout;
  }

  /**
   * Close `id` and hand back what it recorded; undefined when it is not open. The id takes no new call from the start
   * of the close; calls already running are waited for (bounded by `closeSettleMs`), and any still running then are a
   * gap.
   */
  async close(id: string): Promise<OpenRollout | undefined> {
    const rollout = this.open.get(id);
    if (!rollout) return undefined;
    this.open.delete(id);
    await rollout.settle(this.limits.closeSettleMs ?? DEFAULT_CLOSE_SETTLE_MS);
    rollout.closed = true;
    if (rollout.inFlight > 0) {
      rollout.gaps.push({ code: 'model_call_capture_incomplete', detail: `${rollout.inFlight} call(s) still running` });
    }
    return rollout;
  }

  /** Drop rollouts idle longer than the limit (none of their calls in flight). */
  sweep(now = Date.now()): void {
    for (const [id, rollout] of this.open) {
      if (rollout.inFlight === 0 && now - rollout.lastTouched > this.limits.idleMs) {
        this.open.delete(id);
        rollout.closed = true;
        this.expired++;
        this.onExpire();
      }
    }
  }

  stop(): void {
    clearInterval(this.sweeper);
  }
}
