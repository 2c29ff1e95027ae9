/** The detail page of one rollout: its task input, every trajectory item in order, usage, reward, error, raw row. */
import { isPlainObject } from '../config/types.js';
import { NG } from '../runfiles/ng-keys.js';
import type { Row } from '../runfiles/row.js';
import { href, html, page, type SafeHtml } from './html.js';
import { detailHref, formatReward } from './render-index.js';
import { fieldText, type RolloutIndex, type RowEntry } from './rollout-index.js';
import { describeSteps, itemType, responseOf, trajectoryOf } from './trajectory.js';

/** JSON text shown indented when it parses as an object or array; anything else as written. */
function prettyJsonText(text: string): string {
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value === 'object' && value !== null) return JSON.stringify(value, null, 2);
  } catch {
    // not JSON: shown as written
  }
  return text;
}

function prettyValue(value: unknown): string {
  return typeof value === 'string' ? prettyJsonText(value) : (JSON.stringify(value, null, 2) ?? String(value));
}

function block(text: string): SafeHtml {
  return html`<pre>${text}</pre>`;
}

/** Message content: a string, or parts (`output_text`, `input_text`, `refusal`, anything else as JSON). */
function contentHtml(content: unknown): SafeHtml {
  if (typeof content === 'string') return block(content);
  if (!Array.isArray(content)) return block(prettyValue(content));
  return html`${content.map((part) => {
    if (isPlainObject(part) && typeof part.text === 'string') return block(part.text);
    if (isPlainObject(part) && typeof part.refusal === 'string')
      return html`<div class="muted">refusal:</div>${block(part.refusal)}`;
    return block(prettyValue(part));
  })}`;
}

function textsOf(parts: unknown): string[] {
  if (!Array.isArray(parts)) return [];
  return parts
    .filter((part) => isPlainObject(part) && typeof part.text === 'string')
    .map((part) => (part as Row).text as string);
}

function itemCard(type: string, title: SafeHtml, meta: string | undefined, body: SafeHtml): SafeHtml {
  const known = ['function_call', 'function_call_output', 'message', 'reasoning'].includes(type) ? type : 'other';
  return html`<div class="item item-${known}"><h3>${title}${meta ? html` <span class="meta">${meta}</span>` : ''}</h3>${body}</div>`;
}

/** One trajectory or input item. `callNames` maps call ids to tool names, so an output says what it answers. */
function itemHtml(item: unknown, position: number, callNames: ReadonlyMap<string, string>): SafeHtml {
  const type = itemType(item);
  const row = isPlainObject(item) ? item : {};
  const callId = typeof row.call_id === 'string' ? row.call_id : undefined;
  switch (type) {
    case 'function_call':
      return itemCard(
        type,
        html`${position}. call <code>${fieldText(row.name, '?')}</code>`,
        callId,
        block(prettyValue(row.arguments ?? '')),
      );
    case 'function_call_output': {
      const name = callId === undefined ? undefined : callNames.get(callId);
      const title =
        name === undefined ? html`${position}. tool output` : html`${position}. output of <code>${name}</code>`;
      const output = row.output;
      return itemCard(
        type,
        title,
        callId,
        Array.isArray(output) ? contentHtml(output) : block(prettyValue(output ?? '')),
      );
    }
    case 'message':
      return itemCard(
        type,
        html`${position}. ${fieldText(row.role, 'assistant')} message`,
        undefined,
        contentHtml(row.content),
      );
    case 'reasoning': {
      const texts = [...textsOf(row.summary), ...textsOf(row.content)];
      const body =
        texts.length > 0
          ? html`${texts.map(block)}`
          : html`<div class="muted">${row.encrypted_content ? 'encrypted reasoning only' : 'no reasoning text'}</div>`;
      return itemCard(type, html`${position}. reasoning`, undefined, body);
    }
    default:
      return itemCard(
        type,
        html`${position}. ${type}`,
        undefined,
        block(JSON.stringify(item, null, 2) ?? String(item)),
      );
  }
}

export function itemsHtml(items: readonly unknown[]): SafeHtml {
  const callNames = new Map<string, string>();
  for (const item of items) {
    if (
      isPlainObject(item) &&
      itemType(item) === 'function_call' &&
      typeof item.call_id === 'string' &&
      typeof item.name === 'string'
    ) {
      callNames.set(item.call_id, item.name);
    }
  }
  return html`${items.map((item, i) => itemHtml(item, i + 1, callNames))}`;
}

export function inputHtml(row: Row): SafeHtml {
  const params = isPlainObject(row.responses_create_params) ? row.responses_create_params : {};
  const parts: SafeHtml[] = [];
  if (typeof params.instructions === 'string' && params.instructions !== '') {
    parts.push(itemCard('message', html`instructions`, undefined, block(params.instructions)));
  }
  if (typeof params.input === 'string')
    parts.push(itemCard('message', html`1. user message`, undefined, block(params.input)));
  else if (Array.isArray(params.input)) parts.push(itemsHtml(params.input));
  if (Array.isArray(params.tools) && params.tools.length > 0) {
    const names = params.tools.map((tool) =>
      isPlainObject(tool) && typeof tool.name === 'string' ? tool.name : itemType(tool),
    );
    parts.push(html`<p class="muted">Tools offered: ${names.join(', ')}</p>`);
  }
  return parts.length > 0 ? html`${parts}` : html`<p class="muted">The row has no responses_create_params.input.</p>`;
}

function flatten(value: unknown, prefix: string, out: Array<[string, string]>): void {
  if (isPlainObject(value)) {
    for (const [key, inner] of Object.entries(value)) flatten(inner, prefix ? `${prefix}.${key}` : key, out);
  } else {
    out.push([prefix, typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value))]);
  }
}

function keyValues(pairs: ReadonlyArray<[string, SafeHtml | string]>): SafeHtml {
  return html`<dl class="kv">${pairs.map(([key, value]) => html`<dt>${key}</dt><dd>${value}</dd>`)}</dl>`;
}

function usageHtml(response: Row | undefined): SafeHtml {
  if (!response || response.usage === undefined || response.usage === null)
    return html`<p class="muted">No usage recorded.</p>`;
  const pairs: Array<[string, string]> = [];
  flatten(response.usage, '', pairs);
  return keyValues(pairs);
}

function errorHtml(row: Row, entry: RowEntry): SafeHtml {
  if (entry.status === 'ok') return html``;
  const error = typeof row.error === 'string' ? row.error : JSON.stringify(row.error ?? null, null, 2);
  return html`<h2>Error</h2><div class="error">${block(error)}
<p class="muted">failure class <code>${fieldText(row[NG.failureClass], '—')}</code> · ${
    entry.status === 'failed-terminal' ? 'terminal (never retried)' : 'retryable (resume runs it again)'
  }</p></div>`;
}

function neighbours(index: RolloutIndex, entry: RowEntry): SafeHtml {
  const order = index.order();
  const position = order.indexOf(entry.id);
  const previous = position > 0 ? index.entry(order[position - 1]!) : undefined;
  const next = position >= 0 && position + 1 < order.length ? index.entry(order[position + 1]!) : undefined;
  return html`<nav class="pages"><a href="${href('/', { run: index.runParam })}">↑ all rollouts</a>${previous ? html`<a href="${detailHref(previous)}">← previous</a>` : ''}${
    next ? html`<a href="${detailHref(next)}">next →</a>` : ''
  }</nav>`;
}

export function renderRolloutPage(index: RolloutIndex, entry: RowEntry, row: Row): string {
  const response = responseOf(row);
  const items = trajectoryOf(row);
  const file = entry.source === 'main' ? index.rolloutsPath : index.failuresPath;
  const facts: Array<[string, SafeHtml | string]> = [
    ['status', html`<span class="status-${entry.status}">${entry.status}</span>`],
    ['reward', formatReward(entry.reward)],
    ['agent', entry.agent],
    ['attempt', String(entry.attempt)],
    ['steps', describeSteps(items) || 'none'],
    ['row', html`<code>${file}:${entry.line}</code>`],
  ];
  const recorded = row[NG.stepLatencySecs];
  const latencies = Array.isArray(recorded) ? recorded.filter((v): v is number => typeof v === 'number') : [];
  if (latencies.length > 0)
    facts.push([
      'service latency per step',
      latencies
        .slice(0, 200)
        .map((v) => `${v}s`)
        .join(', '),
    ]);
  if (response && typeof response.model === 'string') facts.push(['model', response.model]);
  if (response && typeof response.status === 'string') facts.push(['response status', response.status]);

  const trajectoryTitle = entry.status === 'ok' ? 'Trajectory' : 'Partial trajectory';
  const trajectory =
    items.length > 0
      ? itemsHtml(items)
      : html`<p class="muted">${entry.status === 'ok' ? 'The response has no output items.' : 'No partial trajectory was recorded (the rollout failed before any step returned).'}</p>`;
  const title = `Task ${fieldText(entry.task, '—')} · rollout ${fieldText(entry.rollout, '—')}`;
  const body = html`${neighbours(index, entry)}
<h1>${title}${entry.attempt > 0 ? ` · attempt ${entry.attempt}` : ''}</h1>
${keyValues(facts)}
${errorHtml(row, entry)}
<h2>Task input</h2>
${inputHtml(row)}
<h2>${trajectoryTitle}</h2>
${trajectory}
<h2>Usage</h2>
${usageHtml(response)}
<h2>Raw row</h2>
<details><summary>JSON of <code>${file}:${entry.line}</code></summary>${block(JSON.stringify(row, null, 2))}</details>`;
  return page(`${title} — ${index.rolloutsPath}`, body);
}
