/**
 * The viewer's charts, drawn server-side as inline SVG (no script, no external asset, no library): rollouts/s and
 * failures by class over time from the status file's history, per-step service latency percentiles from its
 * `step_latency_secs` (rows do not carry latencies, decision C4), and from the index the reward distribution and
 * tokens per rollout. Each chart is a `<figure data-chart=NAME>`; a chart without data says why instead of drawing
 * empty axes.
 */
import { html, SafeHtml } from './html.js';
import type { RolloutIndex } from './rollout-index.js';
import type { RunStatus } from './status-file.js';

const WIDTH = 380;
const HEIGHT = 210;
const MARGIN = { left: 46, right: 12, top: 12, bottom: 34 };
const COLORS = ['#3367d6', '#d9822b', '#2a9d8f', '#b3261e', '#8e44ad', '#6d8b1f', '#c9a227', '#555'];

export interface Series {
  name: string;
  points: Array<[number, number]>;
}

/** Round numbers for axis ticks: 1, 2 or 5 times a power of ten. */
function niceStep(span: number, ticks: number): number {
  if (!(span > 0)) return 1;
  const raw = span / ticks;
  const power = 10 ** Math.floor(Math.log10(raw));
  const scaled = raw / power;
  return (scaled <= 1 ? 1 : scaled <= 2 ? 2 : scaled <= 5 ? 5 : 10) * power;
}

function label(value: number): string {
  if (value === 0) return '0';
  if (Math.abs(value) >= 1000) return `${Number((value / 1000).toFixed(1))}k`;
  return String(Number(value.toPrecision(3)));
}

function num(value: number): string {
  return value.toFixed(1);
}

function frame(id: string, title: string, svgBody: string, xLabel: string, legend: SafeHtml | string = ''): SafeHtml {
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${WIDTH} ${HEIGHT}" width="${WIDTH}" height="${HEIGHT}" role="img">${svgBody}<text x="${
    MARGIN.left + (WIDTH - MARGIN.left - MARGIN.right) / 2
  }" y="${HEIGHT - 4}" text-anchor="middle" class="axis-label">${escapeText(xLabel)}</text></svg>`;
  return html`<figure class="chart" data-chart="${id}"><figcaption>${title}</figcaption>${new SafeHtml(svg)}${legend}</figure>`;
}

function escapeText(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

export function emptyChart(id: string, title: string, why: string): SafeHtml {
  return html`<figure class="chart chart-empty" data-chart="${id}"><figcaption>${title}</figcaption><p class="muted">${why}</p></figure>`;
}

function axes(
  xMin: number,
  xMax: number,
  yMax: number,
): { x: (v: number) => number; y: (v: number) => number; svg: string } {
  const plotW = WIDTH - MARGIN.left - MARGIN.right;
  const plotH = HEIGHT - MARGIN.top - MARGIN.bottom;
  const ySpan = yMax > 0 ? yMax : 1;
  const xSpan = xMax > xMin ? xMax - xMin : 1;
  const x = (v: number): number => MARGIN.left + ((v - xMin) / xSpan) * plotW;
  const y = (v: number): number => MARGIN.top + plotH - (v / ySpan) * plotH;
  let svg = `<line x1="${MARGIN.left}" y1="${MARGIN.top + plotH}" x2="${MARGIN.left + plotW}" y2="${MARGIN.top + plotH}" class="axis"/>`;
  svg += `<line x1="${MARGIN.left}" y1="${MARGIN.top}" x2="${MARGIN.left}" y2="${MARGIN.top + plotH}" class="axis"/>`;
  const yStep = niceStep(ySpan, 4);
  for (let v = 0; v <= ySpan + 1e-9; v += yStep) {
    svg += `<line x1="${MARGIN.left}" y1="${num(y(v))}" x2="${MARGIN.left + plotW}" y2="${num(y(v))}" class="grid"/><text x="${MARGIN.left - 4}" y="${num(y(v) + 3)}" text-anchor="end" class="tick">${label(v)}</text>`;
  }
  return { x, y, svg };
}

export function lineChart(id: string, title: string, xLabel: string, series: readonly Series[]): SafeHtml {
  const all = series.flatMap((s) => s.points);
  if (all.length === 0) return emptyChart(id, title, 'No data yet.');
  const xMin = Math.min(...all.map((p) => p[0]));
  const xMax = Math.max(...all.map((p) => p[0]));
  const yMax = Math.max(...all.map((p) => p[1]));
  const { x, y, svg: axisSvg } = axes(xMin, xMax, yMax * 1.05);
  let svg = axisSvg;
  const xStep = niceStep(xMax - xMin, 5);
  for (let v = Math.ceil(xMin / xStep) * xStep; v <= xMax + 1e-9; v += xStep) {
    svg += `<text x="${num(x(v))}" y="${HEIGHT - MARGIN.bottom + 13}" text-anchor="middle" class="tick">${label(v)}</text>`;
  }
  series.forEach((s, i) => {
    const color = COLORS[i % COLORS.length]!;
    const path = s.points.map((p, k) => `${k === 0 ? 'M' : 'L'}${num(x(p[0]))},${num(y(p[1]))}`).join('');
    svg += `<path d="${path}" fill="none" stroke="${color}" stroke-width="1.8" class="series"><title>${escapeText(s.name)}</title></path>`;
    if (s.points.length === 1)
      svg += `<circle cx="${num(x(s.points[0]![0]))}" cy="${num(y(s.points[0]![1]))}" r="3" fill="${color}"/>`;
  });
  const legend = html`<div class="legend">${series.map((s, i) => html`<span><i style="background:${COLORS[i % COLORS.length]}"></i>${s.name}</span>`)}</div>`;
  return frame(id, title, svg, xLabel, legend);
}

export interface Bar {
  label: string;
  value: number;
}

export function barChart(id: string, title: string, xLabel: string, bars: readonly Bar[]): SafeHtml {
  if (bars.length === 0 || bars.every((bar) => bar.value === 0)) return emptyChart(id, title, 'No data yet.');
  const yMax = Math.max(...bars.map((bar) => bar.value));
  const { y, svg: axisSvg } = axes(0, 1, yMax * 1.05);
  let svg = axisSvg;
  const plotW = WIDTH - MARGIN.left - MARGIN.right;
  const slot = plotW / bars.length;
  const every = Math.ceil(bars.length / 6);
  bars.forEach((bar, i) => {
    const left = MARGIN.left + i * slot + 1;
    svg += `<rect x="${num(left)}" y="${num(y(bar.value))}" width="${num(Math.max(1, slot - 2))}" height="${num(y(0) - y(bar.value))}" fill="${COLORS[0]}" class="bar"><title>${escapeText(`${bar.label}: ${bar.value}`)}</title></rect>`;
    if (i % every === 0)
      svg += `<text x="${num(left + slot / 2)}" y="${HEIGHT - MARGIN.bottom + 13}" text-anchor="middle" class="tick">${escapeText(bar.label)}</text>`;
  });
  return frame(id, title, svg, xLabel);
}

/** Equal-width bins over [min, max] of the values `pick` yields (NaN skipped). */
export function histogram(count: number, pick: (i: number) => number, bins = 12): Bar[] {
  let min = Infinity;
  let max = -Infinity;
  for (let i = 0; i < count; i++) {
    const v = pick(i);
    if (Number.isNaN(v)) continue;
    if (v < min) min = v;
    if (v > max) max = v;
  }
  if (min === Infinity) return [];
  if (min === max) {
    let n = 0;
    for (let i = 0; i < count; i++) if (!Number.isNaN(pick(i))) n++;
    return [{ label: label(min), value: n }];
  }
  const width = (max - min) / bins;
  const values = new Array<number>(bins).fill(0);
  for (let i = 0; i < count; i++) {
    const v = pick(i);
    if (Number.isNaN(v)) continue;
    values[Math.min(bins - 1, Math.floor((v - min) / width))]!++;
  }
  return values.map((value, b) => ({ label: label(min + b * width), value }));
}

const NO_HISTORY = 'No history: it comes from <stem>_status.json, which gym eval run writes while it runs.';

const NO_LATENCY =
  'No latency data: per-step service latency comes from <stem>_status.json, which gym eval run writes (a run without one, e.g. from NeMo Gym, has none).';

/** The five charts of a run. */
export function runCharts(index: RolloutIndex, status: RunStatus | undefined): SafeHtml {
  const history = status?.history ?? [];
  const rate: Series = { name: 'rollouts/s', points: [] };
  for (let i = 1; i < history.length; i++) {
    const dt = history[i]!.t_s - history[i - 1]!.t_s;
    if (dt > 0) rate.points.push([history[i]!.t_s, (history[i]!.done - history[i - 1]!.done) / dt]);
  }
  const classes = [...new Set(history.flatMap((point) => Object.keys(point.failed_by_class)))].sort();
  const failures: Series[] = classes.map((name) => ({
    name,
    points: history.map((point) => [point.t_s, point.failed_by_class[name] ?? 0] as [number, number]),
  }));
  const okReward = (i: number): number => (index.statusOf(i) === 'ok' ? index.rewardNumber(i) : Number.NaN);
  const steps = status?.step_latency_secs ?? [];
  const latency: Series[] = (['p50', 'p90', 'p99'] as const).map((q) => ({
    name: `${q} (s)`,
    points: steps.map((s) => [s.step, s[q]] as [number, number]),
  }));
  return html`<div class="charts">
${history.length > 1 ? lineChart('rate', 'Rollouts/s over time', 'seconds into the run', [rate]) : emptyChart('rate', 'Rollouts/s over time', NO_HISTORY)}
${barChart('reward', 'Reward distribution (successes)', 'reward', histogram(index.size, okReward))}
${steps.length > 0 ? lineChart('latency', 'Service latency per step', 'loop step', latency) : emptyChart('latency', 'Service latency per step', NO_LATENCY)}
${barChart(
  'tokens',
  'Tokens per rollout',
  'total tokens',
  histogram(index.size, (i) => index.tokensNumber(i)),
)}
${
  history.length === 0
    ? emptyChart('failures', 'Failures by class over time', NO_HISTORY)
    : classes.length === 0
      ? emptyChart('failures', 'Failures by class over time', 'No failures so far.')
      : lineChart('failures', 'Failures by class over time', 'seconds into the run', failures)
}
</div>`;
}
