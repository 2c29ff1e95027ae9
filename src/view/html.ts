/**
 * HTML building for the viewer. Rollout files hold agent output, which is untrusted: every interpolated value is
 * escaped unless it is already `SafeHtml` (produced by this module), so forgetting to escape is impossible rather
 * than merely unlikely.
 */

export class SafeHtml {
  constructor(readonly text: string) {}

  toString(): string {
    return this.text;
  }
}

/** A value a template may interpolate: escaped text, trusted fragments, or lists of either. */
export type HtmlValue = SafeHtml | string | number | boolean | null | undefined | readonly HtmlValue[];

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => ESCAPES[char]!);
}

function render(value: HtmlValue): string {
  if (value instanceof SafeHtml) return value.text;
  if (Array.isArray(value)) return value.map(render).join('');
  if (value === null || value === undefined || value === false) return '';
  return escapeHtml(String(value));
}

/** Tagged template: `html\`<td>${text}</td>\`` escapes `text`; nested `html` fragments pass through. */
export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): SafeHtml {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += render(values[i]) + strings[i + 1]!;
  return new SafeHtml(out);
}

/** A link target with query parameters, e.g. `href('/rollout', { file: 'main', line: 3 })`. */
export function href(path: string, params: Record<string, string | number | undefined>): string {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params))
    if (value !== undefined && value !== '') query.set(key, String(value));
  const text = query.toString();
  return text ? `${path}?${text}` : path;
}

const STYLE = `
:root { color-scheme: light dark; --muted: #777; --line: #8884; --ok: #2a7d2a; --bad: #b3261e; --warn: #a05a00; }
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5rem auto; max-width: 72rem; padding: 0 1rem; }
h1 { font-size: 1.3rem; margin: 0 0 .3rem; } h2 { font-size: 1.05rem; margin: 1.6rem 0 .5rem; }
a { color: #3367d6; } .muted { color: var(--muted); } code, pre { font: 12.5px/1.4 ui-monospace, monospace; }
pre { white-space: pre-wrap; word-break: break-word; margin: .3rem 0; max-height: 32rem; overflow: auto; }
table { border-collapse: collapse; width: 100%; } th, td { text-align: left; padding: .25rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { font-weight: 600; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.status-ok { color: var(--ok); } .status-failed { color: var(--warn); } .status-failed-terminal { color: var(--bad); }
.notice { border-left: 3px solid var(--warn); padding: .3rem .7rem; margin: .6rem 0; }
.error { border-left: 3px solid var(--bad); padding: .3rem .7rem; margin: .6rem 0; }
.item { border: 1px solid var(--line); border-left-width: 4px; border-radius: 4px; padding: .4rem .7rem; margin: .5rem 0; }
.item h3 { font-size: .9rem; margin: 0; font-weight: 600; } .item .meta { color: var(--muted); font-weight: 400; }
.item-function_call { border-left-color: #3367d6; } .item-function_call_output { border-left-color: #2a9d8f; }
.item-message { border-left-color: #8e44ad; } .item-reasoning { border-left-color: #c9a227; } .item-other { border-left-color: #888; }
nav.pages, nav.filters { margin: .6rem 0; } nav a, nav strong { margin-right: .7rem; }
details summary { cursor: pointer; } dl.kv { display: grid; grid-template-columns: max-content auto; gap: .1rem 1rem; margin: .3rem 0; }
dl.kv dt { color: var(--muted); } dl.kv dd { margin: 0; }
.live-grid { display: grid; grid-template-columns: 1fr 1fr; gap: 1.5rem; } @media (max-width: 60rem) { .live-grid { grid-template-columns: 1fr; } }
tr.stalled td { background: #b3261e22; } strong.stalled, .state-interrupted { color: var(--bad); } .state-running { color: var(--warn); } .state-finished { color: var(--ok); }
.charts { display: flex; flex-wrap: wrap; gap: 1rem; } figure.chart { margin: 0; border: 1px solid var(--line); border-radius: 4px; padding: .4rem .6rem; width: 380px; }
figure.chart figcaption { font-weight: 600; font-size: .9rem; } figure.chart svg { display: block; max-width: 100%; height: auto; }
svg .axis { stroke: var(--muted); } svg .grid { stroke: var(--line); } svg text { fill: currentColor; font-size: 10px; } svg .axis-label { fill: var(--muted); }
.legend span { margin-right: .8rem; font-size: .8rem; } .legend i { display: inline-block; width: .8rem; height: .5rem; margin-right: .25rem; }
.side-by-side { display: grid; grid-template-columns: 1fr 1fr; gap: 1rem; } .side-by-side > div { min-width: 0; }
.verdict-improved, .verdict-better { color: var(--ok); } .verdict-regressed, .verdict-worse { color: var(--bad); } .verdict-unchanged, .verdict-inconclusive { color: var(--muted); }
`;

/**
 * A whole page: no external assets (the viewer runs offline); `live` pages load the viewer's own /assets/live.js,
 * the only script there is.
 */
export function page(title: string, body: SafeHtml, options: { live?: boolean } = {}): string {
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title><style>${new SafeHtml(STYLE)}</style>${options.live ? new SafeHtml('<script src="/assets/live.js" defer></script>') : ''}</head>
<body>${body}</body></html>
`.text;
}
