/**
 * The index page: a run's summary, its live section (in-flight rollouts from `<stem>_status.json` and the rows that
 * landed last, refreshed in place by /assets/live.js), its charts, and the rollouts table, filtered by status and
 * paged. Only the rows of the page shown are read back from disk (for their steps and error excerpts).
 */
import { runCharts } from './charts.js';
import { href, html, page, type SafeHtml } from './html.js';
import { fieldText, RowReader, STATUSES, type RolloutIndex, type RowEntry, type Status } from './rollout-index.js';
import { describeSteps, trajectoryOf } from './trajectory.js';
import type { RunStatus } from './status-file.js';

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

export function parsePageNumber(query: URLSearchParams): number {
  const pageText = query.get('page') ?? '1';
  const pageNumber = Number(pageText);
  if (!/^\d+$/.test(pageText) || pageNumber < 1)
    throw new ViewRequestError(400, `Page '${pageText}' is not a page number (1, 2, …).`);
  return pageNumber;
}

export function parseIndexQuery(query: URLSearchParams): IndexQuery {
  const statusText = query.get('status') ?? '';
  let statuses: Status[] | undefined;
  if (statusText !== '') {
    const given = statusText.split(',').map((part) => part.trim());
    const unknown = given.filter((part) => !(STATUSES as readonly string[]).includes(part));
    if (unknown.length > 0) {
      throw new ViewRequestError(
        400,
        `Unknown status '${unknown.join(',')}': use ${STATUSES.join(', ')}, or several joined by commas.`,
      );
    }
    statuses = given as Status[];
  }
  return { statuses, page: parsePageNumber(query) };
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
  return href('/rollout', { run: entry.run, file: entry.source, line: entry.line });
}

const ERROR_EXCERPT_CHARS = 160;

function excerpt(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  const flat = (typeof value === 'string' ? value : JSON.stringify(value)).replace(/\s+/g, ' ').trim();
  return flat.length > ERROR_EXCERPT_CHARS ? `${flat.slice(0, ERROR_EXCERPT_CHARS)}…` : flat;
}

function summaryLine(index: RolloutIndex): SafeHtml {
  const { ok, failed, failedTerminal, rewardSumOk } = index.counts;
  const total = ok + failed + failedTerminal;
  const mean =
    ok > 0 ? `mean reward ${formatNumber(rewardSumOk / ok)} over ${ok} successes` : 'no successes to average';
  return html`<p class="summary"><strong>${total} rollouts</strong>: ${ok} ok, ${failed + failedTerminal} failed (${failed} retryable, ${failedTerminal} terminal) · ${mean}</p>`;
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
    status === currentText
      ? html`<strong>${label} (${count})</strong>`
      : html`<a href="${href('/', { run: index.runParam, status })}">${label} (${count})</a>`,
  )}</nav>`;
}

/** Shown while a big file's first indexing is still going on. */
export function indexingNotice(index: RolloutIndex): SafeHtml {
  const progress = index.progress();
  if (!progress || progress.totalBytes === 0 || progress.indexedBytes >= progress.totalBytes) return html``;
  const mb = (bytes: number): string => `${Math.round(bytes / 1e6)} MB`;
  const pct = Math.floor((100 * progress.indexedBytes) / progress.totalBytes);
  return html`<div class="notice indexing">Indexing: ${mb(progress.indexedBytes)} of ${mb(progress.totalBytes)} read (${pct}%); the counts and the table show the ${index.size} rows indexed so far — reload for more.</div>`;
}

function skippedNotice(index: RolloutIndex): SafeHtml {
  const skipped = index.skipped;
  if (skipped.length === 0) return html``;
  const shown = skipped.slice(0, 10);
  const total = index.skippedCount;
  const fileOf = (source: string): string => (source === 'main' ? index.rolloutsPath : index.failuresPath);
  return html`<div class="notice">${total} unreadable line${total === 1 ? '' : 's'} skipped:
<ul>${shown.map((skip) => html`<li><code>${fileOf(skip.source)}:${skip.line}</code> — ${skip.reason}</li>`)}</ul>${
    total > shown.length ? html`<span class="muted">… and ${total - shown.length} more</span>` : ''
  }</div>`;
}

async function rowHtml(entry: RowEntry, reader: RowReader): Promise<SafeHtml> {
  let steps = '';
  let error: string | undefined;
  try {
    const row = await reader.read(entry);
    steps = describeSteps(trajectoryOf(row));
    error = excerpt(row.error);
  } catch {
    error = 'this line changed since it was indexed; reload the page';
  }
  return html`<tr>
<td class="num"><a href="${detailHref(entry)}">${fieldText(entry.task, '—')}</a></td><td class="num">${fieldText(entry.rollout, '—')}</td>
<td class="num">${entry.attempt}</td><td>${entry.agent}</td><td class="num">${formatReward(entry.reward)}</td>
<td class="status-${entry.status}">${entry.status}</td><td>${steps || html`<span class="muted">none</span>`}</td>
<td>${error ?? ''}</td><td><a href="${detailHref(entry)}">view</a></td></tr>`;
}

function pager(
  index: RolloutIndex,
  query: IndexQuery,
  pages: number,
  from: number,
  to: number,
  matching: number,
): SafeHtml {
  const status = query.statuses?.join(',');
  const link = (target: number, label: string): SafeHtml =>
    html`<a href="${href('/', { run: index.runParam, status, page: target > 1 ? target : undefined })}">${label}</a>`;
  return html`<nav class="pages">Page ${query.page} of ${pages} (rows ${matching === 0 ? 0 : from + 1}–${to} of ${matching})
${query.page > 1 ? link(query.page - 1, '← previous') : ''}${query.page < pages ? link(query.page + 1, 'next →') : ''}</nav>`;
}

function seconds(value: number): string {
  if (value < 60) return `${value.toFixed(1)}s`;
  const m = Math.floor(value / 60);
  return m < 60
    ? `${m}m${String(Math.round(value % 60)).padStart(2, '0')}s`
    : `${Math.floor(m / 60)}h${String(m % 60).padStart(2, '0')}m`;
}

/** A `running` status the collector stopped rewriting (killed, or its machine went away) is not live any more. */
function staleNote(status: RunStatus): SafeHtml | string {
  const age = (Date.now() - Date.parse(status.updated_at)) / 1000;
  if (status.state !== 'running' || !(age > STALE_STATUS_SECS)) return '';
  return html` <strong class="stalled stale-status">not updated for ${seconds(age)}: the collector may have stopped</strong>`;
}

const STALE_STATUS_SECS = 10;

const keyAttr = (task: unknown, rollout: unknown, attempt: number): string =>
  `${String(task)}:${String(rollout)}:${attempt}`;

/** The part of the index page /assets/live.js replaces every second: totals, in-flight table, last rows landed. */
export function liveSection(index: RolloutIndex, status: RunStatus | undefined): SafeHtml {
  const totals = status?.totals ?? {};
  const n = (key: string): number => (typeof totals[key] === 'number' ? totals[key] : 0);
  const eta = typeof totals.eta_s === 'number' ? seconds(totals.eta_s) : '?';
  const state = status ? status.state : 'no-status';
  const stateLine = status
    ? html`<p class="run-state">Run <strong class="state-${status.state}">${status.state}</strong>: ${n('done')}/${n('total')} done · ${n('in_flight')} in flight · ${n('rollouts_per_s')} rollouts/s · ETA ${eta}${
        n('stalled') > 0 ? html` · <strong class="stalled">${n('stalled')} stalled</strong>` : ''
      } <span class="muted">(status updated ${status.updated_at})</span>${staleNote(status)}</p>`
    : html`<p class="muted run-state">No live status (<code>${index.rolloutsPath.replace(/\.jsonl$/, '')}_status.json</code> is written by gym eval run while it runs).</p>`;
  const inFlight = status?.in_flight ?? [];
  const inFlightTable =
    inFlight.length === 0
      ? html`<p class="muted" id="in-flight-empty">Nothing in flight.</p>`
      : html`<table id="in-flight"><thead><tr><th>Task</th><th>Rollout</th><th>Attempt</th><th>Agent</th><th>Stage</th><th>Step</th><th>Elapsed</th><th>No progress for</th></tr></thead><tbody>${inFlight.map(
          (
            entry,
          ) => html`<tr data-key="${keyAttr(entry.task_index, entry.rollout_index, entry.attempt)}" class="${entry.stalled ? 'stalled' : ''}">
<td class="num">${String(entry.task_index)}</td><td class="num">${String(entry.rollout_index)}</td><td class="num">${entry.attempt}</td><td>${entry.agent}</td>
<td>${entry.stage}${entry.tool ? html` <code>${entry.tool}</code>` : ''}</td><td class="num">${entry.step}</td><td class="num">${seconds(entry.elapsed_s)}</td>
<td class="num">${seconds(entry.since_progress_s)}${entry.stalled ? ' (stalled)' : ''}</td></tr>`,
        )}</tbody></table>${status && status.in_flight_hidden > 0 ? html`<p class="muted">… and ${status.in_flight_hidden} more in flight.</p>` : ''}`;
  const recent = index.recent(10);
  const recentTable =
    recent.length === 0
      ? html`<p class="muted">No rows yet.</p>`
      : html`<table id="recent"><thead><tr><th>Task</th><th>Rollout</th><th>Attempt</th><th>Agent</th><th>Reward</th><th>Status</th><th></th></tr></thead><tbody>${recent.map(
          (
            entry,
          ) => html`<tr data-key="${keyAttr(entry.task, entry.rollout, entry.attempt)}"><td class="num">${fieldText(entry.task, '—')}</td><td class="num">${fieldText(entry.rollout, '—')}</td>
<td class="num">${entry.attempt}</td><td>${entry.agent}</td><td class="num">${formatReward(entry.reward)}</td><td class="status-${entry.status}">${entry.status}</td><td><a href="${detailHref(entry)}">view</a></td></tr>`,
        )}</tbody></table>`;
  return html`<div id="live-body" data-state="${index.progress() ? 'running' : state}" data-generation="${index.generation}">
${indexingNotice(index)}${summaryLine(index)}${stateLine}
<div class="live-grid"><div><h2>In flight</h2>${inFlightTable}</div><div><h2>Finished last</h2>${recentTable}</div></div></div>`;
}

export async function renderIndexPage(
  index: RolloutIndex,
  status: RunStatus | undefined,
  query: IndexQuery,
  pageSize: number,
  extras: { compareLink?: SafeHtml; health?: string } = {},
): Promise<string> {
  const { compareLink, health } = extras;
  const wanted = query.statuses;
  const order = index.order();
  let matching: ArrayLike<number> = order;
  if (wanted) {
    const picked: number[] = [];
    for (const id of order) if (wanted.includes(index.statusOf(id))) picked.push(id);
    matching = picked;
  }
  const pages = Math.max(1, Math.ceil(matching.length / pageSize));
  const shown = { ...query, page: Math.min(query.page, pages) };
  const from = (shown.page - 1) * pageSize;
  const to = Math.min(matching.length, from + pageSize);
  const reader = new RowReader(index);
  let rows: SafeHtml[];
  try {
    // All at once: read one by one, each would queue behind a background indexing read.
    const entries: RowEntry[] = [];
    for (let i = from; i < to; i++) entries.push(index.entry(matching[i]!));
    rows = await Promise.all(entries.map((entry) => rowHtml(entry, reader)));
  } finally {
    await reader.close();
  }
  const failuresLine = index.failuresPresent
    ? html`Failures: <code>${index.failuresPath}</code>`
    : html`No failures sidecar (<code>${index.failuresPath}</code> does not exist).`;
  const live = href('/live', { run: index.runParam });
  const body = html`<h1>Rollouts: <code>${index.rolloutsPath}</code></h1>
<p class="muted">${failuresLine}${compareLink ? html` · ${compareLink}` : ''}</p>
${health === undefined ? '' : html`<p class="health">${health}</p>`}
<section id="live" data-src="${live}">${liveSection(index, status)}</section>
<h2>Charts</h2>
<section id="charts" data-src="${href('/charts', { run: index.runParam })}">${runCharts(index, status)}</section>
<h2>All rollouts</h2>
${skippedNotice(index)}
${filterLinks(index, wanted)}
${pager(index, shown, pages, from, to, matching.length)}
<table id="rollouts"><thead><tr><th>Task</th><th>Rollout</th><th>Attempt</th><th>Agent</th><th>Reward</th><th>Status</th><th>Steps</th><th>Error</th><th></th></tr></thead>
<tbody>${rows.length > 0 ? rows : html`<tr><td colspan="9" class="muted">No rollouts match.</td></tr>`}</tbody></table>
${pages > 1 ? pager(index, shown, pages, from, to, matching.length) : ''}`;
  return page(`Rollouts — ${index.rolloutsPath}`, body, { live: true });
}
