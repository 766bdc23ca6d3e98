// rayscope's shared page helper, used by every built-in page (and Flow Insight).
// Owns: reading rayscope's JSON APIs (GET only: a page never changes state), building
// DOM without innerHTML, formatting, paged tables over the State API, SVG line charts,
// and the live stream with its connection indicator and 5 s reconnect.
'use strict';
window.RS = (() => {
  const SVG = 'http://www.w3.org/2000/svg';

  /** Build an element: el('td', {class: 'num', text: '3'}, child, ...). */
  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v == null || v === false) continue;
      if (k === 'text') e.textContent = v;
      else if (k === 'class') e.className = v;
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? '' : String(v));
    }
    for (const k of kids.flat()) if (k != null) e.append(k instanceof Node ? k : String(k));
    return e;
  }
  function svg(tag, attrs) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    return e;
  }
  const $ = (sel, root) => (root || document).querySelector(sel);

  // Observing several clusters, a page shows the one its URL names (?cluster=NAME):
  // every request it makes and every same-origin link it follows carries it on.
  const cluster = new URLSearchParams(location.search).get('cluster');
  function withCluster(path) {
    if (!cluster) return path;
    const u = new URL(path, location.href);
    if (u.origin !== location.origin || u.searchParams.has('cluster')) return path;
    u.searchParams.set('cluster', cluster);
    return u.pathname + u.search + u.hash;
  }
  document.addEventListener('click', (e) => {
    const a = cluster && e.target.closest ? e.target.closest('a[href]') : null;
    if (a) a.setAttribute('href', withCluster(a.getAttribute('href')));
  }, true);
  /** A picker of the observed clusters in the header, when there are several. */
  async function clusterPicker() {
    const nav = $('header.top nav');
    if (!nav) return;
    const c = await json('/api/cluster');
    const names = (c && Array.isArray(c.clusters)) ? c.clusters : [];
    if (names.length < 2) return;
    const pick = el('select', {id: 'cluster-pick', 'aria-label': 'Observed cluster', title: 'Observed cluster',
      onchange: () => { const q = new URLSearchParams(location.search); q.set('cluster', pick.value); location.search = q.toString(); }},
    names.map((n) => el('option', {value: n, text: n, selected: n === c.cluster})));
    nav.append(pick);
  }
  document.addEventListener('DOMContentLoaded', () => { clusterPicker().catch(() => {}); });

  /** GET a JSON resource; throws an Error carrying rayscope's error message. */
  async function get(path) {
    const r = await fetch(withCluster(path), {headers: {accept: 'application/json'}, cache: 'no-store'});
    let body = null;
    try { body = await r.json(); } catch (_) { /* not JSON: reported below */ }
    if (!r.ok) {
      const e = new Error((body && body.error) || `${path}: HTTP ${r.status}`);
      e.status = r.status;
      throw e;
    }
    return {body, headers: r.headers};
  }
  const json = async (path) => (await get(path)).body;

  /** One page of a State API list: rows, totals, and the next offset if any. */
  async function list(resource, params) {
    const {body, headers} = await get(`/api/v0/${resource}?${new URLSearchParams(params)}`);
    const d = (body && body.data && body.data.result) || {};
    const next = headers.get('x-rayscope-next-offset');
    return {
      rows: Array.isArray(d.result) ? d.result : [],
      total: num(d.total),
      filtered: d.num_filtered == null ? num(d.total) : num(d.num_filtered),
      next: next == null ? null : Number(next),
      // E.g. rows older than usual while the engine rebuilds its tables.
      warnings: Array.isArray(d.warnings) ? d.warnings : [],
    };
  }
  /** The cluster-wide part of a State API summary. */
  async function summary(resource, params) {
    const body = await json(`/api/v0/${resource}/summarize?${new URLSearchParams(params || {})}`);
    const r = body && body.data && body.data.result && body.data.result.result;
    return (r && r.node_id_to_summary && r.node_id_to_summary.cluster) || {summary: {}};
  }

  // ------------------------------------------------------------- formatting
  // Ray's State API writes 64-bit counts as strings ("num_restarts": "1"): a numeric
  // string is its number, anything else 0.
  const num = (v) => {
    if (typeof v === 'string' && v.trim() !== '') v = Number(v);
    return typeof v === 'number' && isFinite(v) ? v : 0;
  };
  const int = (v) => Math.round(num(v)).toLocaleString('en-US');
  function fixed(v, digits) {
    const n = num(v);
    return Number.isInteger(n) ? n.toLocaleString('en-US') : n.toLocaleString('en-US', {maximumFractionDigits: digits == null ? 1 : digits});
  }
  function bytes(v) {
    let n = num(v), i = 0;
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
    while (Math.abs(n) >= 1024 && i < units.length - 1) { n /= 1024; i++; }
    return `${n.toLocaleString('en-US', {maximumFractionDigits: n < 10 && i ? 1 : 0})} ${units[i]}`;
  }
  const pct = (used, total) => (num(total) > 0 ? (100 * num(used)) / num(total) : 0);
  function duration(seconds) {
    let s = Math.max(0, Math.round(num(seconds)));
    const d = Math.floor(s / 86400), h = Math.floor((s % 86400) / 3600), m = Math.floor((s % 3600) / 60);
    s %= 60;
    if (d) return `${d}d ${h}h`;
    if (h) return `${h}h ${m}m`;
    if (m) return `${m}m ${s}s`;
    return `${s}s`;
  }
  /** A Unix time in ms, as local date and time. */
  function time(ms) {
    if (!num(ms)) return '—';
    const d = new Date(ms), p = (x) => String(x).padStart(2, '0');
    return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
  }
  /** The first `n` hex digits of an id (Ray's ids put their unique bytes first). */
  const short = (id, n) => (typeof id === 'string' && id.length > (n || 12) ? id.slice(0, n || 12) + '…' : id || '—');

  /** A coloured badge for a Ray state name. */
  function badge(state) {
    const s = String(state || 'UNKNOWN');
    const cls = /^(ALIVE|RUNNING|RUNNING_IN_RAY_GET|RUNNING_IN_RAY_WAIT|SUCCEEDED|FINISHED|CREATED|connected)$/.test(s) ? 'ok'
      : /^(DEAD|FAILED|REMOVED|STOPPED)$/.test(s) ? 'bad'
      : /^(PENDING|RESTARTING|PENDING_CREATION|DEPENDENCIES_UNREADY|RESCHEDULING)/.test(s) ? 'warn' : 'info';
    return el('span', {class: `badge ${cls}`, text: s});
  }
  /** A usage bar: used out of total, labelled with `label`. */
  function bar(used, total, label) {
    const p = Math.min(100, pct(used, total));
    const fill = el('span');
    fill.style.width = `${p.toFixed(1)}%`;
    return el('div', {class: p >= 90 ? 'bar hot' : 'bar', title: `${p.toFixed(1)}%`, 'data-used': num(used), 'data-total': num(total)},
      fill, el('em', {text: label}));
  }

  // ------------------------------------------------------------- errors
  let errorTimer = null;
  function fail(err) {
    const box = $('#error');
    if (!box) return;
    box.textContent = String((err && err.message) || err);
    box.hidden = false;
    clearTimeout(errorTimer);
    errorTimer = setTimeout(() => { box.hidden = true; }, 8000);
  }
  const clearError = () => { const b = $('#error'); if (b) b.hidden = true; };

  /** Run `f` now and every `ms`, one call at a time; errors go to the banner. */
  function every(ms, f) {
    let stopped = false;
    const tick = async () => {
      try { await f(); } catch (e) { fail(e); }
      if (!stopped) setTimeout(tick, ms);
    };
    tick();
    return () => { stopped = true; };
  }

  // ------------------------------------------------------------- tables
  /**
   * A table: columns are {title, cell: row => Node|string, num?}. `onRow(row, tr)`
   * makes rows clickable; `rowAttrs(row)` adds attributes to a row (`data-id`).
   */
  function table(columns, rows, opts) {
    const o = opts || {};
    // A column with `sort` has a header button that calls it (`aria-sort` says the order shown).
    const head = el('tr', null, columns.map((c) => el('th', {class: c.num ? 'num' : null, 'aria-sort': c.sorted || null},
      c.sort ? el('button', {type: 'button', class: 'th-sort', text: `${c.title}${c.sorted === 'descending' ? ' ▼' : c.sorted === 'ascending' ? ' ▲' : ''}`, onclick: c.sort}) : c.title)));
    const body = el('tbody');
    if (!rows.length) body.append(el('tr', null, el('td', {class: 'empty', colspan: columns.length, text: o.empty || 'Nothing to show.'})));
    for (const r of rows) {
      const tr = el('tr', Object.assign({class: o.onRow ? 'clickable' : null}, o.rowAttrs ? o.rowAttrs(r) : {}));
      for (const c of columns) {
        let v;
        try { v = c.cell(r); } catch (_) { v = '—'; }
        tr.append(el('td', {class: c.num ? 'num' : null}, v == null || v === '' ? '—' : v));
      }
      if (o.onRow) tr.addEventListener('click', () => o.onRow(r, tr));
      body.append(tr);
    }
    return el('table', {class: 'grid'}, el('thead', null, head), body);
  }

  /**
   * A paged table in `host`. `load(offset, limit)` returns {rows, filtered, next};
   * only one page is ever held. Returns {reload(fromStart), offset()}.
   * `host.dataset.loaded` counts loads and `host.dataset.rows` the rows shown, for tests.
   */
  function pager(host, o) {
    const limit = o.pageSize || 50;
    let offset = 0, last = null, busy = false, loads = 0;
    const prev = el('button', {type: 'button', text: '‹ Prev'});
    const next = el('button', {type: 'button', text: 'Next ›'});
    const info = el('span', {class: 'pager-info'});
    const note = el('span', {class: 'pager-info'});
    const slot = el('div');
    host.replaceChildren(el('div', {class: 'toolbar'}, o.toolbar || [], el('span', {class: 'spacer'}), note, info, prev, next), slot);
    async function load() {
      if (busy) return;
      busy = true;
      try {
        last = await o.load(offset, limit);
        if (!last.rows.length && offset > 0) { offset = Math.max(0, offset - limit); busy = false; return load(); }
        slot.replaceChildren(table(o.columns, last.rows, o));
        const n = num(last.filtered);
        info.textContent = last.rows.length ? `${int(offset + 1)}–${int(offset + last.rows.length)} of ${int(n)}` : `0 of ${int(n)}`;
        note.textContent = (last.warnings || []).join('; ');
        prev.disabled = offset === 0;
        next.disabled = last.next == null && offset + last.rows.length >= n;
        host.dataset.rows = String(last.rows.length);
        host.dataset.filtered = String(n);
        host.dataset.loaded = String(++loads);
        clearError();
      } catch (e) { fail(e); } finally { busy = false; }
    }
    prev.addEventListener('click', () => { offset = Math.max(0, offset - limit); load(); });
    next.addEventListener('click', () => { offset += limit; load(); });
    return {reload: (fromStart) => { if (fromStart) offset = 0; return load(); }, offset: () => offset};
  }

  // ------------------------------------------------------------- charts
  /**
   * A line chart of the last `window` points in `host`, drawn as inline SVG.
   * `fmt` formats values; `max` fixes the y range's top (else it follows the data).
   */
  class Chart {
    constructor(host, o) {
      this.o = Object.assign({window: 50, fmt: (v) => fixed(v), max: null}, o);
      this.points = [];
      this.pushed = 0;
      this.value = el('span', {class: 'chart-value', text: '—'});
      this.scale = el('div', {class: 'chart-scale'});
      this.svg = svg('svg', {viewBox: '0 0 300 100', preserveAspectRatio: 'none', role: 'img', 'aria-label': o.title});
      host.classList.add('chart');
      host.replaceChildren(el('div', {class: 'chart-head'}, el('h2', {text: o.title}), this.value), this.svg, this.scale);
      this.host = host;
      this.draw();
    }
    push(v) {
      if (typeof v !== 'number' || !isFinite(v)) return;
      this.points.push(v);
      this.pushed++;
      if (this.points.length > this.o.window) this.points.splice(0, this.points.length - this.o.window);
      this.draw();
    }
    draw() {
      const W = 300, H = 100, pts = this.points, n = this.o.window;
      const top = this.o.max != null ? this.o.max : Math.max(1e-9, ...pts) * 1.15;
      const kids = [];
      for (const f of [0, 0.5, 1]) kids.push(svg('line', {class: 'grid-line', x1: 0, x2: W, y1: H - f * H * 0.96, y2: H - f * H * 0.96}));
      if (pts.length) {
        const x = (i) => ((i + n - pts.length) / (n - 1)) * W;
        const y = (v) => H - (Math.min(v, top) / top) * H * 0.96;
        const d = pts.map((v, i) => `${i ? 'L' : 'M'}${x(i).toFixed(1)},${y(v).toFixed(1)}`).join('');
        kids.push(svg('path', {class: 'area', d: `${d}L${x(pts.length - 1).toFixed(1)},${H}L${x(0).toFixed(1)},${H}Z`}));
        kids.push(svg('path', {class: 'line', d}));
        this.value.textContent = this.o.fmt(pts[pts.length - 1]);
      }
      this.svg.replaceChildren(...kids);
      const peak = this.o.max != null ? this.o.max : top / 1.15;
      this.scale.textContent = `last ${this.o.window} points · scale 0 – ${this.o.fmt(pts.length || this.o.max != null ? peak : 0)}`;
      this.svg.setAttribute('aria-label', `${this.o.title}: scale 0 to ${this.o.fmt(peak)}`);
      this.host.dataset.points = String(pts.length);
      this.host.dataset.pushed = String(this.pushed);
    }
  }

  // ------------------------------------------------------------- live stream
  /**
   * Open `path` as a WebSocket on this origin and pass each JSON message to
   * `onMessage`. The header's indicator shows the state; after a drop it retries
   * every 5 s, forever.
   */
  function stream(path, onMessage, opts) {
    const retryMs = (opts && opts.retryMs) || 5000;
    const ind = $('#conn');
    const label = {connecting: 'Connecting…', connected: 'Live', disconnected: 'Disconnected: retrying every 5 s'};
    function set(state) {
      if (!ind) return;
      ind.hidden = false;
      ind.dataset.state = state;
      ind.textContent = label[state];
    }
    function open() {
      set('connecting');
      let ws;
      try { ws = new WebSocket(`${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}${withCluster(path)}`); } catch (e) { set('disconnected'); setTimeout(open, retryMs); return; }
      ws.onopen = () => set('connected');
      ws.onmessage = (e) => {
        let m;
        try { m = JSON.parse(e.data); } catch (_) { return; }
        try { onMessage(m); } catch (err) { fail(err); }
      };
      ws.onclose = () => { set('disconnected'); setTimeout(open, retryMs); };
    }
    open();
  }

  return {el, svg, $, cluster, withCluster, get, json, list, summary, num, int, fixed, bytes, pct, duration, time, short, badge, bar, fail, every, table, pager, Chart, stream};
})();
