/**
 * What one run of `gym agent check` has found so far: the failures and warnings under each check, the note a
 * passing check shows, the checks that could not be judged and why, and how many responses and tool asks were
 * inspected. Every detail is scrubbed of secret values on the way in, because a service may echo what it received.
 */
import { redactSecrets } from '../http/service-auth.js';
import type { EchoSource } from '../contract/echo-fill.js';
import { inspectResponse, type Finding, type Level, type Reading } from './inspect.js';

export class CheckLedger {
  private readonly findings: Finding[] = [];
  private readonly passNotes = new Map<string, string>();
  private readonly skipReasons = new Map<string, string>();
  private inspectedResponses = 0;
  private inspectedAsks = 0;
  private completedResponses = 0;

  /** `fillEchoFields`: judge each answer completed from its request, as the remote agent's opt-in would (D24). */
  constructor(
    private readonly secrets: readonly string[],
    private readonly fillEchoFields = false,
  ) {}

  /** Record a failure or warning under `check`; `fix` replaces the check's usual fix for this finding. */
  add(check: string, level: Level, detail: string, fix?: string): void {
    const safe = redactSecrets(detail, this.secrets);
    this.findings.push({ check, level, detail: safe, ...(fix ? { fix } : {}) });
  }

  /**
   * Inspect one answer to the request `sent` against the tools it declared, recording every finding under `where`
   * (with the finding's own fix, when it has one).
   */
  judgeAnswer(body: Record<string, unknown>, sent: EchoSource, declared: readonly string[], where: string): Reading {
    const reading = inspectResponse(body, declared, { sent, fillEchoFields: this.fillEchoFields });
    this.inspectedResponses += 1;
    this.inspectedAsks += reading.asks.length;
    if (reading.filled.length > 0) this.completedResponses += 1;
    for (const finding of reading.findings)
      this.add(finding.check, finding.level, `${where}: ${finding.detail}`, finding.fix);
    return reading;
  }

  /** What `check` says when it passes, in place of its default note. */
  notePass(check: string, note: string): void {
    this.passNotes.set(check, note);
  }

  /** Mark `check` as not judged, saying why. */
  skip(check: string, reason: string): void {
    this.skipReasons.set(check, reason);
  }

  findingsOf(check: string): Finding[] {
    return this.findings.filter((finding) => finding.check === check);
  }

  passNote(check: string): string | undefined {
    return this.passNotes.get(check);
  }

  skipReason(check: string): string | undefined {
    return this.skipReasons.get(check);
  }

  get responses(): number {
    return this.inspectedResponses;
  }

  get asks(): number {
    return this.inspectedAsks;
  }

  /** Answers that were completed from their request before being judged (`--fill-echo-fields`). */
  get completed(): number {
    return this.completedResponses;
  }
}
