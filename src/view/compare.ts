/**
 * `gym view A.jsonl B.jsonl`: two runs side by side. Each rollout counts by its final row (the highest attempt;
 * the success when an attempt has both), a failure as reward 0, and each task by the mean over its rollouts; a
 * task is improved, regressed or unchanged by the sign of B − A. Every task links to a page showing both runs'
 * trajectories of that task next to each other.
 */
import { href, html, page, type SafeHtml } from './html.js';
import { detailHref, formatNumber, formatReward, parsePageNumber, ViewRequestError } from './render-index.js';
import { inputHtml, itemsHtml } from './render-rollout.js';
import { RowReader, type RolloutIndex, type RowEntry } from './rollout-index.js';
import { trajectoryOf } from './trajectory.js';
import { studentT, verdictOf } from '../metrics/intervals.js';

export type Verdict = 'improved' | 'regressed' | 'unchanged' | 'only-a' | 'only-b';
const VERDICTS: readonly Verdict[] = ['improved', 'regressed', 'unchanged', 'only-a', 'only-b'];
const EPSILON = 1e-9;

interface TaskScore {
  sum: number;
  rollouts: number;
  /** A representative row id per rollout (the final one), in rollout order. */
  finals: number[];
}

/** Per task key, the mean final reward and the final rows. */
function scoreTasks(index: RolloutIndex): Map<number | string, TaskScore> {
  const order = index.order();
  const tasks = new Map<number | string, TaskScore>();
  for (let i = 0; i < order.length; i++) {
    const id = order[i]!;
    const next = order[i + 1];
    // Sorted by (task, rollout, attempt, failures first): the last row of a (task, rollout) run is its final one.
    if (next !== undefined && index.taskKey(next) === index.taskKey(id) && sameRollout(index, id, next)) continue;
    const key = index.taskKey(id);
    let score = tasks.get(key);
    if (!score) tasks.set(key, (score = { sum: 0, rollouts: 0, finals: [] }));
    const reward = index.statusOf(id) === 'ok' ? index.rewardNumber(id) : 0;
    score.sum += Number.isNaN(reward) ? 0 : reward;
    score.rollouts++;
    if (score.finals.length < 64) score.finals.push(id);
  }
  return tasks;
}

function sameRollout(index: RolloutIndex, a: number, b: number): boolean {
  return index.rolloutKey(a) === index.rolloutKey(b);
}

export interface TaskComparison {
  task: number | string;
  label: string;
  meanA: number | undefined;
  meanB: number | undefined;
  delta: number | undefined;
  verdict: Verdict;
}

export function compareRuns(a: RolloutIndex, b: RolloutIndex): TaskComparison[] {
  const scoresA = scoreTasks(a);
  const scoresB = scoreTasks(b);
  const keys = [...new Set([...scoresA.keys(), ...scoresB.keys()])].sort((x, y) =>
    typeof x === 'number' && typeof y === 'number'
      ? x - y
      : typeof x === 'number'
        ? -1
        : typeof y === 'number'
          ? 1
          : x.localeCompare(y),
  );
  return keys.map((task) => {
    const sa = scoresA.get(task);
    const sb = scoresB.get(task);
    const meanA = sa ? sa.sum / sa.rollouts : undefined;
    const meanB = sb ? sb.sum / sb.rollouts : undefined;
    const delta = meanA !== undefined && meanB !== undefined ? meanB - meanA : undefined;
    const verdict: Verdict =
      meanA === undefined
        ? 'only-b'
        : meanB === undefined
          ? 'only-a'
          : delta! > EPSILON
            ? 'improved'
            : delta! < -EPSILON
              ? 'regressed'
              : 'unchanged';
    return { task, label: labelOf(task), meanA, meanB, delta, verdict };
  });
}

function labelOf(task: number | string): string {
  return typeof task === 'number' ? String(task) : String(JSON.parse(task.slice(1)) as unknown);
}

const fmt = (value: number | undefined): string => (value === undefined ? '—' : formatNumber(value));
const signed = (value: number): string => `${value > 0 ? '+' : ''}${formatNumber(value)}`;

/** The paired difference over the tasks both runs have, with the same interval and verdict as gym eval compare. */
function differenceHtml(all: readonly TaskComparison[]): SafeHtml {
  const deltas = all.flatMap((t) => (t.delta === undefined ? [] : [t.delta]));
  const estimate = studentT(deltas);
  if (!estimate) return html`<p class="compare-verdict muted">No task is in both runs: nothing to compare.</p>`;
  const verdict = verdictOf(estimate.ci95, 0);
  const interval =
    estimate.ci95 === null
      ? 'no interval (it needs two paired tasks or more)'
      : `95% CI [${signed(estimate.ci95[0])}, ${signed(estimate.ci95[1])}]`;
  return html`<p class="compare-verdict" data-verdict="${verdict}">Mean difference B − A over ${estimate.n} paired tasks: <strong>${signed(estimate.mean)}</strong>, ${interval} (paired Student t) — verdict: <strong class="verdict-${verdict}">${verdict}</strong> <span class="muted">(gym eval compare A B gives the same, with --margin and --json)</span></p>`;
}

export function renderComparePage(a: RolloutIndex, b: RolloutIndex, query: URLSearchParams, pageSize: number): string {
  const verdictText = query.get('verdict') ?? '';
  if (verdictText !== '' && !(VERDICTS as readonly string[]).includes(verdictText)) {
    throw new ViewRequestError(400, `Unknown verdict '${verdictText}': use one of ${VERDICTS.join(', ')}.`);
  }
  const all = compareRuns(a, b);
  const counts = Object.fromEntries(VERDICTS.map((v) => [v, all.filter((t) => t.verdict === v).length])) as Record<
    Verdict,
    number
  >;
  const matching = verdictText === '' ? all : all.filter((t) => t.verdict === verdictText);
  const pages = Math.max(1, Math.ceil(matching.length / pageSize));
  const pageNumber = Math.min(parsePageNumber(query), pages);
  const shown = matching.slice((pageNumber - 1) * pageSize, pageNumber * pageSize);
  const filters = html`<nav class="filters">Show: ${[['all', ''] as const, ...VERDICTS.map((v) => [v, v] as const)].map(
    ([label, value]) => {
      const count = value === '' ? all.length : counts[value];
      return value === verdictText
        ? html`<strong>${label} (${count})</strong>`
        : html`<a href="${href('/compare', { verdict: value })}">${label} (${count})</a>`;
    },
  )}</nav>`;
  const pager = html`<nav class="pages">Page ${pageNumber} of ${pages}${pageNumber > 1 ? html` <a href="${href('/compare', { verdict: verdictText, page: pageNumber - 1 })}">← previous</a>` : ''}${
    pageNumber < pages
      ? html` <a href="${href('/compare', { verdict: verdictText, page: pageNumber + 1 })}">next →</a>`
      : ''
  }</nav>`;
  const body = html`<h1>Compare runs</h1>
<dl class="kv"><dt>A</dt><dd><a href="/"><code>${a.rolloutsPath}</code></a> (${a.size} rows)</dd><dt>B</dt><dd><a href="/?run=b"><code>${b.rolloutsPath}</code></a> (${b.size} rows)</dd></dl>
<p class="compare-summary"><strong>${all.length} tasks</strong>: <span class="verdict-improved">${counts.improved} improved</span>, <span class="verdict-regressed">${counts.regressed} regressed</span>, ${counts.unchanged} unchanged${
    counts['only-a'] + counts['only-b'] > 0 ? `, ${counts['only-a']} only in A, ${counts['only-b']} only in B` : ''
  } <span class="muted">(per task: mean reward over its rollouts' final rows, failures as 0)</span></p>
${differenceHtml(all)}
${filters}${pager}
<table id="compare"><thead><tr><th>Task</th><th>Mean reward A</th><th>Mean reward B</th><th>B − A</th><th>Verdict</th><th></th></tr></thead><tbody>${shown.map(
    (
      t,
    ) => html`<tr data-task="${t.label}" class="verdict-row-${t.verdict}"><td class="num">${t.label}</td><td class="num">${fmt(t.meanA)}</td><td class="num">${fmt(t.meanB)}</td>
<td class="num">${t.delta === undefined ? '—' : `${t.delta > 0 ? '+' : ''}${formatNumber(t.delta)}`}</td><td class="verdict-${t.verdict}">${t.verdict}</td>
<td><a href="${href('/compare/task', { task: String(t.task) })}">side by side</a></td></tr>`,
  )}</tbody></table>`;
  return page('Compare runs', body);
}

function parseTaskKey(query: URLSearchParams): number | string {
  const text = query.get('task');
  if (text === null || text === '')
    throw new ViewRequestError(400, 'task is missing: /compare/task?task=<task index>.');
  return /^-?\d+(\.\d+)?$/.test(text) ? Number(text) : text;
}

async function column(
  index: RolloutIndex,
  name: string,
  task: number | string,
  rolloutText: string | null,
): Promise<SafeHtml> {
  const finals = scoreTasks(index).get(task)?.finals ?? [];
  if (finals.length === 0)
    return html`<div class="run-column" data-run="${name}"><h2>Run ${name}</h2><p class="muted">No rollout of this task in <code>${index.rolloutsPath}</code>.</p></div>`;
  const entries = finals.map((id) => index.entry(id));
  const chosen = entries.find((entry) => String(entry.rollout) === rolloutText) ?? entries[0]!;
  const reader = new RowReader(index);
  let trajectory: SafeHtml;
  try {
    const row = await reader.read(chosen);
    const items = trajectoryOf(row);
    trajectory = items.length > 0 ? itemsHtml(items) : html`<p class="muted">No trajectory recorded.</p>`;
  } catch (err) {
    trajectory = html`<p class="error">${(err as Error).message}; reload the page.</p>`;
  } finally {
    await reader.close();
  }
  const tabs = entries.map((entry: RowEntry) =>
    entry === chosen
      ? html`<strong>rollout ${String(entry.rollout)}</strong>`
      : html`<a href="${href('/compare/task', { task: String(task), rollout: String(entry.rollout) })}">rollout ${String(entry.rollout)}</a>`,
  );
  return html`<div class="run-column" data-run="${name}"><h2>Run ${name}: <code>${index.rolloutsPath}</code></h2>
<nav class="pages">${tabs}</nav>
<p>reward <strong>${formatReward(chosen.reward)}</strong> · <span class="status-${chosen.status}">${chosen.status}</span> · attempt ${chosen.attempt} · <a href="${detailHref(chosen)}">full rollout page</a></p>
${trajectory}</div>`;
}

export async function renderTaskSideBySide(a: RolloutIndex, b: RolloutIndex, query: URLSearchParams): Promise<string> {
  const task = parseTaskKey(query);
  const rollout = query.get('rollout');
  const comparison = compareRuns(a, b).find((t) => t.task === task);
  if (!comparison) throw new ViewRequestError(404, `Neither run has task ${String(task)}.`);
  const anyFinal = scoreTasks(a).get(task)?.finals[0] ?? undefined;
  let input: SafeHtml = html``;
  if (anyFinal !== undefined) {
    const reader = new RowReader(a);
    try {
      input = inputHtml(await reader.read(a.entry(anyFinal)));
    } catch {
      input = html``;
    } finally {
      await reader.close();
    }
  }
  const body = html`<nav class="pages"><a href="/compare">↑ comparison</a></nav>
<h1>Task ${comparison.label}: <span class="verdict-${comparison.verdict}">${comparison.verdict}</span></h1>
<p>Mean reward A ${fmt(comparison.meanA)} → B ${fmt(comparison.meanB)}${comparison.delta === undefined ? '' : ` (${comparison.delta > 0 ? '+' : ''}${formatNumber(comparison.delta)})`}</p>
<details><summary>Task input</summary>${input}</details>
<div class="side-by-side">${await column(a, 'A', task, rollout)}${await column(b, 'B', task, rollout)}</div>`;
  return page(`Task ${comparison.label} — A vs B`, body);
}
