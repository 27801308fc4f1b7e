/* Formatting of values: times, counts with their noun, integer checks. */

export function fmtTime(ms) {
  if (typeof ms !== 'number') return '';
  const d = new Date(ms);
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

export function isInt(v) { return Number.isInteger(v); }
export function plural(n, one, many) { return n + ' ' + (n === 1 ? one : (many || one + 's')); }
