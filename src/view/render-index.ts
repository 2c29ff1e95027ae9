/** The index page: a run's summary line and its rollouts table, filtered by status and paged. */
import { href, html, page, type SafeHtml } from './html.js';
import { STATUSES, type RolloutIndex, type RowEntry, type Status } from './rollout-index.js';

export interface IndexQuery {
  /** undefined: every status. */
  statuses: Status[] | undefined;
  /** 1-based. */
  page: number;
}

/** A request the viewer cannot answer as asked: shown as an HTML page with this status. */
export class ViewRequestError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'ViewRequestError';
  }
}

export function parseIndexQuery(query: URLSearchParams): IndexQuery {
  const statusText = query.get('status') ?? '';
  let statuses: Status[] | undefined;
  if (statusText !== '') {
    const given = statusText.split(',').map((part) => part.trim());
    const unknown = given.filter((part) => !(STATUSES as readonly string[]).includes(part));
    if (unknown.length > 0) {
      throw new ViewRequestError(400, `Unknown status '${unknown.join(',')}': use ${STATUSES.join(', ')}, or several joined by commas.`);
    }
    statuses = given as Status[];
  }
  const pageText = query.get('page') ?? '1';
  const pageNumber = Number(pageText);
  if (!/^\d+$/.test(pageText) || pageNumber < 1) throw new ViewRequestError(400, `Page '${pageText}' is not a page number (1, 2, …).`);
  return { statuses, page: pageNumber };
}

/** Rewards as the rest of tsgym prints them: at most four decimals. */
export function formatNumber(value: number): string {
  return Number.isInteger(value) ? String(value) : String(Number(value.toFixed(4)));
}

export function formatReward(reward: unknown): string {
  if (reward === undefined) return '—';
  return typeof reward === 'number' ? formatNumber(reward) : JSON.stringify(reward);
}

export function detailHref(entry: RowEntry): string {
  return href('/rollout', { file: entry.source, line: entry.line });
}

function summaryLine(index: RolloutIndex): SafeHtml {
  const { ok, failed, failedTerminal, rewardSumOk } = index.counts;
  const total = ok + failed + failedTerminal;
  const mean = ok > 0 ? `mean reward ${formatNumber(rewardSumOk / ok)} over ${ok} successes` : 'no successes to average';
  return html`<p><strong>${total} rollouts</strong>: ${ok} ok, ${failed + failedTerminal} failed (${failed} retryable, ${failedTerminal} terminal) · ${mean}</p>`;
}

function filterLinks(index: RolloutIndex, current: Status[] | undefined): SafeHtml {
  const { ok, failed, failedTerminal } = index.counts;
  const options: Array<[string, string, number]> = [
    ['all', '', ok + failed + failedTerminal],
    ['ok', 'ok', ok],
    ['failed', 'failed', failed],
    ['failed-terminal', 'failed-terminal', failedTerminal],
    ['all failures', 'failed,failed-terminal', failed + failedTerminal],
  ];
  const currentText = current?.join(',') ?? '';
  return html`<nav class="filters">Show: ${options.map(([label, status, count]) =>
    status === currentText ? html`<strong>${label} (${count})</strong>` : html`<a href="${href('/', { status })}">${label} (${count})</a>`,
  )}</nav>`;
}

function skippedNotice(index: RolloutIndex): SafeHtml {
  if (index.skipped.length === 0) return html``;
  const shown = index.skipped.slice(0, 10);
  const fileOf = (source: string): string => (source === 'main' ? index.rolloutsPath : index.failuresPath);
  return html`<div class="notice">${index.skipped.length} unreadable line${index.skipped.length === 1 ? '' : 's'} skipped:
<ul>${shown.map((skip) => html`<li><code>${fileOf(skip.source)}:${skip.line}</code> — ${skip.reason}</li>`)}</ul>${
    index.skipped.length > shown.length ? html`<span class="muted">… and ${index.skipped.length - shown.length} more</span>` : ''
  }</div>`;
}

function rowHtml(entry: RowEntry): SafeHtml {
  return html`<tr>
<td class="num"><a href="${detailHref(entry)}">${String(entry.task ?? '—')}</a></td><td class="num">${String(entry.rollout ?? '—')}</td>
<td class="num">${entry.attempt}</td><td>${entry.agent}</td><td class="num">${formatReward(entry.reward)}</td>
<td class="status-${entry.status}">${entry.status}</td><td>${entry.steps || html`<span class="muted">none</span>`}</td>
<td>${entry.errorExcerpt ?? ''}</td><td><a href="${detailHref(entry)}">view</a></td></tr>`;
}

function pager(query: IndexQuery, pages: number, from: number, to: number, matching: number): SafeHtml {
  const status = query.statuses?.join(',');
  const link = (target: number, label: string): SafeHtml => html`<a href="${href('/', { status, page: target > 1 ? target : undefined })}">${label}</a>`;
  return html`<nav class="pages">Page ${query.page} of ${pages} (rows ${matching === 0 ? 0 : from + 1}–${to} of ${matching})
${query.page > 1 ? link(query.page - 1, '← previous') : ''}${query.page < pages ? link(query.page + 1, 'next →') : ''}</nav>`;
}

export function renderIndexPage(index: RolloutIndex, query: IndexQuery, pageSize: number): string {
  const wanted = query.statuses;
  const matching = wanted ? index.rows.filter((entry) => wanted.includes(entry.status)) : index.rows;
  const pages = Math.max(1, Math.ceil(matching.length / pageSize));
  const shown = { ...query, page: Math.min(query.page, pages) };
  const from = (shown.page - 1) * pageSize;
  const rows = matching.slice(from, from + pageSize);
  const failuresLine = index.failuresPresent
    ? html`Failures: <code>${index.failuresPath}</code>`
    : html`No failures sidecar (<code>${index.failuresPath}</code> does not exist).`;
  const body = html`<h1>Rollouts: <code>${index.rolloutsPath}</code></h1>
<p class="muted">${failuresLine}</p>
${summaryLine(index)}
${skippedNotice(index)}
${filterLinks(index, wanted)}
${pager(shown, pages, from, from + rows.length, matching.length)}
<table><thead><tr><th>Task</th><th>Rollout</th><th>Attempt</th><th>Agent</th><th>Reward</th><th>Status</th><th>Steps</th><th>Error</th><th></th></tr></thead>
<tbody>${rows.length > 0 ? rows.map(rowHtml) : html`<tr><td colspan="9" class="muted">No rollouts match.</td></tr>`}</tbody></table>
${pages > 1 ? pager(shown, pages, from, from + rows.length, matching.length) : ''}`;
  return page(`Rollouts — ${index.rolloutsPath}`, body);
}
