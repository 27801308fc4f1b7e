/* Trend charts drawn as inline SVG: the trend panel of a listing or group, and a group row's sparkline. */
import {el, svg} from './dom.js';
import {isInt, plural} from './format.js';

const DAY_MS = 86400000;
export const TREND_DAYS = 30;   // the charts: the last 30 UTC days, today included

/* A UTC day (days since 1970) as 2026-11-24, and as "Nov 24". */
function dayISO(day) { return new Date(day * DAY_MS).toISOString().slice(0, 10); }
function dayShort(day) {
  return new Date(day * DAY_MS).toLocaleDateString('en-US', {month: 'short', day: 'numeric', timeZone: 'UTC'});
}

/* The counts of a trend answer ({"from_day", "days": [...]}), or null. */
function trendCounts(trend) {
  if (!trend || !isInt(trend.from_day) || !Array.isArray(trend.days) || !trend.days.length) return null;
  return trend.days.map((c) => (isInt(c) && c > 0 ? c : 0));
}

/* The top of a count axis and its step: 1, 2 or 5 times a power of ten,
 * at most four steps. */
function niceScale(max) {
  if (max <= 0) return {top: 1, step: 1};
  for (let p = 1; ; p *= 10) {
    for (const m of [1, 2, 5]) {
      if (max / (m * p) <= 4) return {top: Math.ceil(max / (m * p)) * m * p, step: m * p};
    }
  }
}

/* A bar per day; the count on hover (each day's <title>), a few dates on the axis. */
function trendChart(trend, what) {
  const days = trendCounts(trend);
  if (!days) return el('p', {class: 'dim'}, 'No trend in the answer.');
  const n = days.length, from = trend.from_day, today = from + n - 1;
  const W = 1200, H = 200, L = 44, R = 14, T = 12, B = 28;
  const pw = W - L - R, ph = H - T - B, slot = pw / n, bw = Math.max(2, slot * 0.7);
  const total = days.reduce((a, b) => a + b, 0);
  const {top, step} = niceScale(Math.max(...days));
  const y = (v) => T + ph - (v / top) * ph;
  const ticks = [];
  for (let v = 0; v <= top; v += step) {
    ticks.push(svg('line', {class: v ? 'grid' : 'axis', x1: L, x2: W - R, y1: y(v), y2: y(v)}),
      svg('text', {class: 'tick', x: L - 7, y: y(v) + 4, 'text-anchor': 'end', testid: 'trend-ytick'}, String(v)));
  }
  const cols = days.map((c, i) => {
    const day = from + i, x = L + i * slot, h = (c / top) * ph;
    return svg('g', {class: 'day', testid: 'trend-day', 'data-day': dayISO(day), 'data-count': c},
      svg('title', null, `${dayISO(day)}${day === today ? ' (today)' : ''}: ${plural(c, 'report')}`),
      svg('rect', {class: 'hit', x, y: T, width: slot, height: ph}),
      c ? svg('rect', {class: 'bar', testid: 'trend-bar', x: x + (slot - bw) / 2, y: T + ph - h, width: bw, height: h}) : null);
  });
  // a date every week back from today
  const labels = days.map((c, i) => ((n - 1 - i) % 7 === 0
    ? svg('text', {class: 'tick', x: L + (i + 0.5) * slot, y: H - 8, 'text-anchor': 'middle', testid: 'trend-xtick'},
      i === n - 1 ? 'today' : dayShort(from + i))
    : null));
  return svg('svg', {class: 'chart', viewBox: `0 0 ${W} ${H}`, role: 'img', testid: 'trend-chart',
    'aria-label': `${what}: ${plural(total, 'report')} in the last ${n} days, ${days[n - 1]} today`,
    'data-from-day': from, 'data-top': top, 'data-total': total},
  svg('rect', {class: 'plot', testid: 'trend-plot', x: L, y: T, width: pw, height: ph}),
  ticks, cols, svg('line', {class: 'axis', x1: L, x2: W - R, y1: T + ph, y2: T + ph}), labels,
  total ? null : svg('text', {class: 'empty', x: L + pw / 2, y: T + ph / 2, 'text-anchor': 'middle'}, `No reports in the last ${n} days`));
}

/* A chart with its title and a one-line summary. */
export function trendPanel(testid, title, trend) {
  const days = trendCounts(trend) || [];
  const total = days.reduce((a, b) => a + b, 0);
  let busiest = -1;
  days.forEach((c, i) => { if (c && (busiest < 0 || c >= days[busiest])) busiest = i; });
  return el('section', {class: 'panel trend', testid},
    el('h2', null, title, el('span', {class: 'dim'}, ` · last ${days.length || TREND_DAYS} days, UTC`)),
    el('p', {class: 'summary', testid: 'trend-summary'},
      el('strong', null, plural(total, 'report')), ', ', days.length ? days[days.length - 1] : 0, ' today',
      busiest >= 0 ? `, busiest day ${dayShort(trend.from_day + busiest)} (${days[busiest]})` : null),
    trendChart(trend, title));
}

/* A group's last days as a row-sized bar strip. */
export function sparkline(trend) {
  const days = trendCounts(trend);
  if (!days) return null;
  const n = days.length, W = n * 4 + 1, H = 24;
  const max = Math.max(1, ...days);
  const total = days.reduce((a, b) => a + b, 0);
  return svg('svg', {class: 'spark', viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: 'img', testid: 'group-spark',
    'aria-label': `${plural(total, 'report')} in the last ${n} days`, 'data-counts': days.join(',')},
  svg('title', null, `Last ${n} days: ${plural(total, 'report')}, ${days[n - 1]} today`),
  svg('line', {class: 'spark-base', x1: 0, x2: W, y1: H - 0.5, y2: H - 0.5}),
  days.map((c, i) => {
    if (!c) return null;
    const h = Math.max(2, (c / max) * (H - 2));
    return svg('rect', {class: 'bar', x: 1 + i * 4, y: H - 1 - h, width: 3, height: h},
      svg('title', null, `${dayISO(trend.from_day + i)}: ${plural(c, 'report')}`));
  }));
}
