/**
 * What one run of `gym agent check` has found so far: the failures and warnings under each check, the note a
 * passing check shows, the checks that could not be judged and why, and how many responses and tool asks were
 * inspected. Every detail is scrubbed of secret values on the way in, because a service may echo what it received.
 */
import { redactSecrets } from '../http/service-auth.js';
import { inspectResponse, type Finding, type Level, type Reading } from './inspect.js';

export class CheckLedger {
  private readonly findings: Finding[] = [];
  private readonly passNotes = new Map<string, string>();
  private readonly skipReasons = new Map<string, string>();
  private inspectedResponses = 0;
  private inspectedAsks = 0;

  constructor(private readonly secrets: readonly string[]) {}

  /** Record a failure or warning under `check`; `fix` replaces the check's usual fix for this finding. */
  add(check: string, level: Level, detail: string, fix?: string): void {
    const safe = redactSecrets(detail, this.secrets);
    this.findings.push({ check, level, detail: safe, ...(fix ? { fix } : {}) });
  }

  /** Inspect one answer against the tools its request declared, recording every finding under `where`. */
  judgeAnswer(body: Record<string, unknown>, declared: readonly string[], where: string): Reading {
    const reading = inspectResponse(body, declared);
    this.inspectedResponses += 1;
    this.inspectedAsks += reading.asks.length;
    for (const finding of reading.findings) this.add(finding.check, finding.level, `${where}: ${finding.detail}`);
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
}
