// Formatting of times, durations, sizes and ids for display.

// parseTime returns the Date of an RFC 3339 string, or null.
export function parseTime(value) {
  if (!value) return null;
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? null : d;
}

// relativeTime renders how long ago date was: "just now", "3m ago", "2h ago", "5d ago".
export function relativeTime(date, now = Date.now()) {
  if (!date) return '—';
  const seconds = Math.round((now - date.getTime()) / 1000);
  if (seconds < 0) return 'in the future';
  if (seconds < 10) return 'just now';
  if (seconds < 60) return `${seconds}s ago`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m ago`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours}h ago`;
  const days = Math.floor(hours / 24);
  if (days < 60) return `${days}d ago`;
  return date.toLocaleDateString();
}

// fromNow renders how far date is from now: "in 45s", "in 5m", "in 2h",
// "in 3d" for a time to come, and relativeTime's "3m ago" for a past one.
export function fromNow(date, now = Date.now()) {
  if (!date) return '—';
  const seconds = Math.round((date.getTime() - now) / 1000);
  if (seconds < 0) return relativeTime(date, now);
  if (seconds < 10) return 'in a few seconds';
  if (seconds < 60) return `in ${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `in ${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `in ${hours}h`;
  const days = Math.floor(hours / 24);
  if (days < 60) return `in ${days}d`;
  return `on ${date.toLocaleDateString()}`;
}

// duration renders milliseconds: "850 ms", "12.3 s", "4m 05s", "1h 02m", "3d 4h".
export function duration(ms) {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return '—';
  if (ms < 0) ms = 0;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const totalSeconds = ms / 1000;
  if (totalSeconds < 60) return `${totalSeconds.toFixed(totalSeconds < 10 ? 2 : 1)} s`;
  const s = Math.floor(totalSeconds);
  const days = Math.floor(s / 86400);
  const hours = Math.floor((s % 86400) / 3600);
  const minutes = Math.floor((s % 3600) / 60);
  const seconds = s % 60;
  if (days > 0) return `${days}d ${hours}h`;
  if (hours > 0) return `${hours}h ${String(minutes).padStart(2, '0')}m`;
  return `${minutes}m ${String(seconds).padStart(2, '0')}s`;
}

// between returns the milliseconds from start to end (Dates or strings),
// end defaulting to now; null without a start.
export function between(start, end, now = Date.now()) {
  const a = start instanceof Date ? start : parseTime(start);
  if (!a) return null;
  const b = end instanceof Date ? end : parseTime(end);
  return (b ? b.getTime() : now) - a.getTime();
}

// bytes renders a size in decimal units: "512 B", "1.2 kB", "3.4 MB".
export function bytes(n) {
  if (n === null || n === undefined || !Number.isFinite(n)) return '';
  const units = ['B', 'kB', 'MB', 'GB', 'TB', 'PB'];
  let i = 0;
  let v = n;
  while (v >= 1000 && i < units.length - 1) {
    v /= 1000;
    i++;
  }
  return i === 0 ? `${v} B` : `${v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`;
}

// dateTime renders a time in the viewer's zone, or in timeZone (an IANA
// name) when given: "23 Nov 2026, 10:00:03". It returns null for a zone
// the browser does not know.
export function dateTime(value, timeZone) {
  const d = value instanceof Date ? value : parseTime(value);
  if (!d) return '—';
  try {
    return d.toLocaleString(undefined, {
      day: 'numeric', month: 'short', year: 'numeric',
      hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false, timeZone,
    });
  } catch {
    return null;
  }
}

// clock renders the time of day with milliseconds: "10:00:03.125".
export function clock(value) {
  const d = value instanceof Date ? value : parseTime(value);
  if (!d) return '—';
  const pad = (n, w = 2) => String(n).padStart(w, '0');
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

// shortId shortens a long id, keeping its start and its random tail:
// "01a2081e-baaa-76ec-8213-145ce019ed2b" → "01a2081e…19ed2b".
export function shortId(id) {
  const s = String(id ?? '');
  return s.length > 18 ? `${s.slice(0, 8)}…${s.slice(-6)}` : s;
}

// attemptNumber parses a decimal attempt id; 0 when absent or not a number.
export function attemptNumber(id) {
  const n = Number.parseInt(id ?? '', 10);
  return Number.isFinite(n) ? n : 0;
}
