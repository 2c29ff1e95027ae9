/**
 * The human form of an agent-check report (the default output of `gym agent check`; `--json` prints the report
 * itself): one line per check with the fix beside each FAIL and WARN, then a summary that says whether to go ahead.
 */
import type { AgentCheckReport } from './agent-check.js';
import type { CheckStatus } from './checks.js';

const LABEL: Record<CheckStatus, string> = { pass: 'PASS', warn: 'WARN', fail: 'FAIL', skip: 'SKIP' };

/** The human report: one line per check (status, name, detail, and the fix when it is not a pass), then a summary. */
export function formatReport(report: AgentCheckReport): string {
  const width = Math.max(...report.checks.map((check) => check.name.length));
  const lines = [`gym agent check ${report.endpoint}`];
  for (const check of report.checks) {
    const fix = check.fix && (check.status === 'fail' || check.status === 'warn') ? ` Fix: ${check.fix}` : '';
    lines.push(`${LABEL[check.status]}  ${check.name.padEnd(width)}  ${sentence(check.detail)}${fix}`);
  }
  const { pass, warn, fail, skip } = report.summary;
  const { calls, p50_ms, max_ms } = report.latency;
  const latency = calls > 0 ? ` ${calls} calls, p50 ${p50_ms} ms, max ${max_ms} ms.` : '';
  lines.push(
    `Summary: ${pass} passed, ${warn} warning${warn === 1 ? '' : 's'}, ${fail} failed${skip ? `, ${skip} skipped` : ''}.${latency}`,
  );
  lines.push(
    report.ok
      ? warn > 0
        ? 'Ready for a run; the warnings are worth a look.'
        : 'Ready for a run.'
      : 'Not ready: fix the FAIL lines above before a big run.',
  );
  return `${lines.join('\n')}\n`;
}

function sentence(text: string): string {
  return /[.?!]$/.test(text) ? text : `${text}.`;
}
