// Switchyard routing dashboard. Plain JS, no dependencies, no build step.
//
// Polls router/state and router/events once a second and redraws. Every string from the
// gateway (deployment ids, group names, reasons) reaches the page as text nodes or attribute
// values, never as markup. The master key, when the gateway asks for one, lives in
// sessionStorage only and is sent as `Authorization: Bearer`.
'use strict';

(() => {
  const KEY_STORAGE = 'switchyard.masterKey';
  const POLL_MS = 1000;
  const FEED_MAX = 200;
  const SVG_NS = 'http://www.w3.org/2000/svg';

  const $ = (id) => document.getElementById(id);
  let key = sessionStorage.getItem(KEY_STORAGE) || '';
  let lastSeq = 0;
  let timer = null;

  // ------------------------------------------------------------------ DOM helpers

  /** An element with attributes and children; strings become text nodes. */
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === 'class') e.className = v;
      else e.setAttribute(k, String(v));
    }
    for (const c of children.flat()) {
      if (c === null || c === undefined || c === false) continue;
      e.append(c instanceof Node ? c : String(c));
    }
    return e;
  }

  function svg(tag, attrs) {
    const e = document.createElementNS(SVG_NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    return e;
  }

  // ------------------------------------------------------------------ formatting

  function fmtDuration(seconds) {
    if (seconds === null || seconds === undefined || !isFinite(seconds)) return '–';
    const s = Math.max(0, Math.ceil(seconds));
    if (s < 60) return `${s}s`;
    const m = Math.floor(s / 60);
    if (m < 60) return `${m}m ${String(s % 60).padStart(2, '0')}s`;
    const h = Math.floor(m / 60);
    return `${h}h ${String(m % 60).padStart(2, '0')}m`;
  }

  function fmtMs(ms) {
    if (ms === null || ms === undefined) return '–';
    if (ms < 1) return `${ms.toFixed(2)} ms`;
    if (ms < 1000) return `${ms < 10 ? ms.toFixed(1) : Math.round(ms)} ms`;
    return `${(ms / 1000).toFixed(ms < 10000 ? 2 : 1)} s`;
  }

  function fmtCount(n) {
    if (n === null || n === undefined) return '–';
    if (n >= 1e6) return `${(n / 1e6).toFixed(1)}M`;
    if (n >= 1e4) return `${Math.round(n / 1e3)}k`;
    if (n >= 1e3) return `${(n / 1e3).toFixed(1)}k`;
    return String(n);
  }

  const pct = (x) => (x === null || x === undefined ? '–' : `${Math.round(x * 100)}%`);

  function fmtTime(ms) {
    const d = new Date(ms);
    const two = (n) => String(n).padStart(2, '0');
    return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}.${String(d.getMilliseconds()).padStart(3, '0')}`;
  }

  const STATE_LABEL = {
    healthy: 'healthy',
    unhealthy: 'unhealthy',
    cooling_down: 'cooling down',
    half_open: 'half-open',
    at_limit: 'at limit',
    blocked: 'blocked',
  };

  // ------------------------------------------------------------------ charts

  /** A sparkline of one or more series (nulls break the line), scaled to a shared maximum. */
  function sparkline(series, opts) {
    const w = 120, h = 30, pad = 2;
    const all = series.flatMap((s) => s.values).filter((v) => v !== null && v !== undefined);
    const max = Math.max(opts.floor || 0, ...all, 1e-9);
    const root = svg('svg', { class: 'spark', viewBox: `0 0 ${w} ${h}`, width: w, height: h, role: 'img' });
    root.append(svg('line', { x1: 0, y1: h - 0.5, x2: w, y2: h - 0.5, class: 'axis' }));
    for (const s of series) {
      const n = s.values.length;
      const x = (i) => (n <= 1 ? w : (i / (n - 1)) * w).toFixed(1);
      const y = (v) => (h - pad - (v / max) * (h - 2 * pad)).toFixed(1);
      if (s.bars) {
        const bw = Math.max(1, w / n - 0.5);
        s.values.forEach((v, i) => {
          if (!v) return;
          const top = Number(y(v));
          root.append(svg('rect', { x: ((i / n) * w).toFixed(1), y: top, width: bw.toFixed(1), height: (h - top).toFixed(1), class: s.cls }));
        });
        continue;
      }
      let points = [];
      const flush = () => {
        if (points.length === 1) root.append(svg('circle', { cx: points[0][0], cy: points[0][1], r: 1.2, class: s.cls }));
        else if (points.length > 1) root.append(svg('polyline', { points: points.map((p) => p.join(',')).join(' '), class: s.cls }));
        points = [];
      };
      s.values.forEach((v, i) => {
        if (v === null || v === undefined) flush();
        else points.push([x(i), y(v)]);
      });
      flush();
    }
    const title = svg('title');
    title.textContent = opts.title;
    root.prepend(title);
    return root;
  }

  function meter(label, used, limit) {
    const frac = limit ? Math.min(1, used / limit) : 0;
    const bar = el('span', { class: 'meter-fill' });
    bar.style.width = `${(frac * 100).toFixed(1)}%`;
    const cls = limit && used >= limit ? 'meter full' : frac >= 0.8 ? 'meter warn' : 'meter';
    return el('div', { class: 'meter-row' },
      el('span', { class: 'meter-label' }, label),
      el('span', { class: cls }, bar),
      el('span', { class: 'meter-text' }, limit ? `${fmtCount(used)} / ${fmtCount(limit)}` : `${fmtCount(used)} · no limit`));
  }

  function shareBar(traffic, weight) {
    const fill = el('span', { class: 'share-fill' });
    fill.style.width = `${((traffic || 0) * 100).toFixed(1)}%`;
    const mark = el('span', { class: 'share-mark', title: 'configured weight share' });
    mark.style.left = `${((weight || 0) * 100).toFixed(1)}%`;
    return el('span', { class: 'share' }, fill, mark);
  }

  // ------------------------------------------------------------------ panels

  function stateCell(d, fetchedAt) {
    const cell = el('td', { class: 'state-cell' },
      el('span', { class: `badge state-${d.state}`, 'data-testid': 'state' }, STATE_LABEL[d.state] || d.state));
    const c = d.cooldown || {};
    if (c.status === 'cooling_down') {
      const until = fetchedAt + (c.until_seconds || 0) * 1000;
      cell.append(' ', el('span', { class: 'countdown', 'data-until': until }, fmtDuration(c.until_seconds)));
      const why = el('div', { class: 'reason' });
      if (c.http_status) why.append(el('span', { class: 'http' }, `HTTP ${c.http_status}`), ' ');
      why.append(c.reason || '');
      if (c.strikes) why.append(el('span', { class: 'strikes' }, ` · strike ${c.strikes}`));
      cell.append(why);
    } else if (c.status === 'half_open') {
      cell.append(el('div', { class: 'reason' }, c.probing ? 'a probe request is deciding' : 'waiting for a probe request',
        c.strikes ? ` · strike ${c.strikes}` : ''));
      if (d.state !== 'half_open') cell.append(el('div', { class: 'reason' }, 'half-open'));
    }
    if (d.limits_reached && d.limits_reached.length) {
      cell.append(el('div', { class: 'reason' }, `at its ${d.limits_reached.join(' / ')} limit`));
    }
    const h = d.health;
    if (h) {
      const verdict = h.healthy ? 'probe ok' : `probe failed${h.status ? ` (HTTP ${h.status})` : ''}: ${h.reason}`;
      const when = `${fmtDuration(h.age_seconds)} ago · ${fmtMs(h.latency_ms)}${h.stale ? ' · stale, ignored' : ''}`;
      cell.append(el('div', { class: `reason health ${h.healthy ? 'ok' : 'bad'}`, 'data-testid': 'health' }, `${verdict} · ${when}`));
    }
    return cell;
  }

  function actions(d) {
    const cooling = d.cooldown && d.cooldown.status !== 'available';
    const bench = el('button', { type: 'button', class: 'bench', title: 'Bench: take it out of rotation' }, 'Bench');
    bench.addEventListener('click', () => operate('POST', d.id));
    const readmit = el('button', { type: 'button', class: 'readmit', disabled: !cooling, title: 'Re-admit: end its cooldown now' }, 'Re-admit');
    readmit.addEventListener('click', () => operate('DELETE', d.id));
    return el('td', { class: 'actions' }, bench, readmit);
  }

  function deploymentRow(d, fetchedAt) {
    const w = d.window;
    const s = w.series;
    const errorRate = w.attempts ? w.errors / w.attempts : null;
    const classes = Object.entries(w.errors_by_class || {}).map(([cls, n]) => el('li', {}, `${cls} ${n}`));
    return el('tr', { class: `row state-${d.state}`, 'data-deployment': d.id, 'data-state': d.state },
      el('td', { class: 'name' }, el('strong', {}, d.id), el('div', { class: 'model' }, `${d.model} · ${d.provider}`)),
      stateCell(d, fetchedAt),
      el('td', { class: 'traffic' },
        shareBar(d.traffic_share, d.weight_share),
        el('div', { class: 'small' }, `${pct(d.traffic_share)} of traffic · weight ${pct(d.weight_share)}`)),
      el('td', { class: 'rate' },
        el('div', { class: 'num' }, `${w.requests_per_second.toFixed(1)}/s`),
        sparkline([{ values: s.attempts, bars: true, cls: 'bar' }, { values: s.errors, bars: true, cls: 'bar-err' }],
          { title: 'attempts (errors in red) per second, last 60 s', floor: 1 })),
      el('td', { class: 'errors' },
        el('div', { class: errorRate ? 'num bad' : 'num' }, errorRate === null ? '–' : pct(errorRate)),
        el('ul', { class: 'classes' }, classes)),
      el('td', { class: 'latency' },
        el('div', { class: 'num' }, `p50 ${fmtMs(w.latency_ms.p50)} · p99 ${fmtMs(w.latency_ms.p99)}`),
        sparkline([{ values: s.latency_p99_ms, cls: 'p99' }, { values: s.latency_p50_ms, cls: 'p50' }],
          { title: 'latency p50 / p99 per second, last 60 s' })),
      el('td', { class: 'ttft' },
        el('div', { class: 'num' }, `p50 ${fmtMs(w.ttft_ms.p50)} · p99 ${fmtMs(w.ttft_ms.p99)}`),
        sparkline([{ values: s.ttft_p99_ms, cls: 'p99' }, { values: s.ttft_p50_ms, cls: 'p50' }],
          { title: 'time to first token p50 / p99 per second, last 60 s' })),
      el('td', { class: 'limits' },
        meter('RPM', d.rpm.used, d.rpm.limit),
        meter('TPM', d.tpm.used, d.tpm.limit),
        d.parallel.limit ? meter('parallel', d.parallel.used, d.parallel.limit) : el('div', { class: 'small' }, `${d.parallel.used} in flight`)),
      actions(d));
  }

  function groupPanel(g, fetchedAt) {
    const head = el('tr', {}, [['name', 'deployment'], ['state', 'state'], ['traffic', 'traffic vs weight'],
      ['requests', 'requests'], ['errors', 'errors'], ['latency', 'latency'], ['ttft', 'TTFT'],
      ['limits', 'RPM / TPM'], ['actions', '']].map(([c, t]) => el('th', { class: `c-${c}` }, t)));
    const counts = {};
    for (const d of g.deployments) counts[d.state] = (counts[d.state] || 0) + 1;
    const summary = Object.entries(counts).map(([k, n]) => `${n} ${STATE_LABEL[k] || k}`).join(' · ');
    return el('section', { class: 'group', 'data-group': g.name },
      el('header', {},
        el('h2', {}, g.name),
        el('span', { class: 'meta' }, `${g.requests_per_second.toFixed(1)} req/s · ${g.attempts} attempts in the window · weights by ${g.weight_basis} · ${summary}`)),
      el('table', {}, el('thead', {}, head), el('tbody', {}, g.deployments.map((d) => deploymentRow(d, fetchedAt)))));
  }

  /** A share bar without a weight mark, for pre-routing decisions. */
  function plainShare(frac) {
    const fill = el('span', { class: 'share-fill' });
    fill.style.width = `${((frac || 0) * 100).toFixed(1)}%`;
    return el('span', { class: 'share' }, fill);
  }

  /** An adaptive router's posterior means, one row per request class, one column per group. */
  function posteriorTable(a) {
    const models = a.available_models;
    const byKey = {};
    for (const c of a.cells) byKey[`${c.request_type}|${c.model}`] = c;
    const classes = [...new Set(a.cells.map((c) => c.request_type))];
    const head = el('tr', {}, el('th', { class: 'c-class' }, 'request class'), models.map((m) => el('th', {}, m)));
    const rows = classes.map((rt) => el('tr', {}, el('td', {}, rt), models.map((m) => {
      const c = byKey[`${rt}|${m}`];
      if (!c) return el('td', {}, '—');
      return el('td', { title: `alpha ${c.alpha.toFixed(2)} · beta ${c.beta.toFixed(2)} · prior ${c.prior_mean.toFixed(2)} · explored ${c.explored} of ${c.chosen}` },
        plainShare(c.quality_mean),
        el('span', { class: 'small' }, `${c.quality_mean.toFixed(2)} · ${c.samples.toFixed(1)} obs · ${fmtCount(c.chosen)} calls`));
    })));
    return el('table', { class: 'posteriors' }, el('thead', {}, head), el('tbody', {}, rows));
  }

  function preRoutePanel(name, counts, adaptive) {
    const groups = (counts && counts.groups) || [];
    const total = groups.reduce((n, g) => n + g.calls, 0);
    const head = el('tr', {}, [['name', 'routed to'], ['calls', 'calls'], ['share', 'share'], ['explored', 'explored']]
      .map(([c, t]) => el('th', { class: `c-${c}` }, t)));
    const rows = groups.map((g) => el('tr', {},
      el('td', {}, g.group),
      el('td', {}, fmtCount(g.calls)),
      el('td', {}, plainShare(total ? g.calls / total : 0), el('span', { class: 'small' }, total ? `${(100 * g.calls / total).toFixed(1)}%` : '')),
      el('td', {}, g.explored ? fmtCount(g.explored) : '')));
    let meta = `${fmtCount(total)} calls pre-routed since start`;
    if (adaptive) {
      const share = adaptive.decisions ? (100 * adaptive.explored / adaptive.decisions).toFixed(1) : '0.0';
      meta += ` · adaptive: ${share}% exploration · ${fmtCount(adaptive.outcomes)} outcomes and ${fmtCount(adaptive.feedback)} feedback learned · weights quality ${adaptive.weights.quality} / cost ${adaptive.weights.cost}`;
    }
    return el('section', { class: 'group preroute', 'data-preroute': name },
      el('header', {}, el('h2', {}, `${name}`), el('span', { class: 'meta' }, `pre-routed · ${meta}`)),
      groups.length ? el('table', { class: 'decisions' }, el('thead', {}, head), el('tbody', {}, rows))
        : el('p', { class: 'empty pad' }, 'No call pre-routed yet.'),
      adaptive ? posteriorTable(adaptive) : null);
  }

  function preRoutePanels(pre) {
    if (!pre || !pre.names || !pre.names.length) return [];
    return pre.names.map((name) => preRoutePanel(name,
      (pre.decisions || []).find((d) => d.name === name),
      (pre.adaptive || []).find((a) => a.router_name === name)));
  }

  function renderState(snap, fetchedAt) {
    const groups = $('groups');
    const pre = preRoutePanels(snap.pre_routing);
    if (!snap.groups.length) {
      groups.replaceChildren(...pre, el('p', { class: 'empty' }, 'No deployments are registered.'));
    } else {
      groups.replaceChildren(...pre, ...snap.groups.map((g) => groupPanel(g, fetchedAt)));
    }
    $('meta').textContent = `state: ${snap.backend}${snap.degraded ? ' (degraded: Redis unreachable, local state only)' : ''} · window ${snap.window_seconds} s`;
  }

  // ------------------------------------------------------------------ event feed

  function describe(e) {
    const dep = (d, g) => [el('strong', {}, d), ` (${g})`];
    switch (e.kind) {
      case 'cooldown_set':
        return [...dep(e.deployment, e.group), ` cooling down for ${fmtDuration(e.seconds)}`,
          e.status ? ` · HTTP ${e.status}` : '', ` · ${e.outcome}`, e.by === 'operator' ? ' · by an operator' : '',
          el('div', { class: 'reason' }, e.reason)];
      case 'cooldown_lifted':
        return [...dep(e.deployment, e.group), {
          probe_succeeded: ' serves again: its probe succeeded',
          operator: ' re-admitted by an operator',
          deadline_passed: ' cooldown over',
        }[e.how] || ` lifted (${e.how})`];
      case 'probe_started':
        return [...dep(e.deployment, e.group), ' half-open: probe started'];
      case 'all_cooling_down':
        return [`every deployment of `, el('strong', {}, e.group), ' is cooling down',
          e.retry_in_seconds !== null && e.retry_in_seconds !== undefined ? `; first back in ${fmtDuration(e.retry_in_seconds)}` : ''];
      case 'retry':
        return [`${e.group}: attempt ${e.attempt} on `, el('strong', {}, e.deployment), ` failed (${e.outcome}), retried`,
          e.message ? el('div', { class: 'reason' }, e.message) : ''];
      case 'fallback':
        return [el('strong', {}, e.from), ' → ', el('strong', {}, e.to),
          ` · ${e.reason || e.error || 'failure'} · ${e.table} · hop ${e.hop}`];
      case 'fallback_skipped':
        return [`fallback target `, el('strong', {}, e.name), ` (${e.table}) is not a group: skipped`];
      case 'fallback_succeeded':
        return [el('strong', {}, e.group), ` answered after ${e.hops} hop${e.hops === 1 ? '' : 's'}`];
      case 'fallback_failed':
        return [`call failed after ${e.hops} hop${e.hops === 1 ? '' : 's'}: `, (e.groups || []).join(' → '),
          e.reason ? ` (${e.reason})` : ''];
      default:
        return [e.kind];
    }
  }

  function renderEvents(page) {
    const feed = $('feed');
    for (const e of page.events) {
      if (e.seq <= lastSeq) continue;
      lastSeq = e.seq;
      feed.prepend(el('li', { class: `event kind-${e.kind}`, 'data-kind': e.kind },
        el('time', { datetime: new Date(e.at_ms).toISOString() }, fmtTime(e.at_ms)),
        el('span', { class: 'kind' }, e.kind.replaceAll('_', ' ')),
        el('span', { class: 'what' }, describe(e))));
    }
    while (feed.children.length > FEED_MAX) feed.lastElementChild.remove();
  }

  // ------------------------------------------------------------------ network

  class NeedKey extends Error {}

  async function api(path, init) {
    const headers = Object.assign({ accept: 'application/json' }, (init && init.headers) || {});
    if (key) headers.authorization = `Bearer ${key}`;
    const resp = await fetch(path, Object.assign({ cache: 'no-store', credentials: 'omit' }, init, { headers }));
    if (resp.status === 401) throw new NeedKey('the gateway needs its master key');
    const body = await resp.json().catch(() => null);
    if (!resp.ok) {
      const msg = body && body.error && body.error.message ? body.error.message : `HTTP ${resp.status}`;
      throw new Error(msg);
    }
    return body;
  }

  function setStatus(kind, text) {
    const s = $('status');
    s.dataset.status = kind;
    s.textContent = text;
  }

  function showKeyForm(show) {
    $('key-form').hidden = !show;
    $('forget-key').hidden = show || !key;
  }

  async function poll() {
    clearTimeout(timer);
    try {
      const [snap, page] = await Promise.all([api('router/state'), api(`router/events?after=${lastSeq}`)]);
      const fetchedAt = Date.now();
      renderState(snap, fetchedAt);
      renderEvents(page);
      showKeyForm(false);
      setStatus('live', `live · ${fmtTime(fetchedAt).slice(0, 8)}`);
    } catch (err) {
      if (err instanceof NeedKey) {
        showKeyForm(true);
        setStatus('auth', key ? 'the key was refused' : 'enter the master key');
        $('groups').replaceChildren(el('p', { class: 'empty' }, 'The gateway has a master key: enter it above to see its state.'));
        $('feed').replaceChildren();
        lastSeq = 0;
      } else {
        setStatus('error', `offline: ${err.message}`);
      }
    } finally {
      timer = setTimeout(poll, POLL_MS);
    }
  }

  async function operate(method, id) {
    const path = `router/deployments/${encodeURIComponent(id)}/cooldown`;
    const init = { method };
    if (method === 'POST') {
      const body = { reason: 'benched from the dashboard' };
      const seconds = Number($('bench-seconds').value);
      if ($('bench-seconds').value !== '' && seconds > 0) body.seconds = seconds;
      init.body = JSON.stringify(body);
      init.headers = { 'content-type': 'application/json' };
    }
    try {
      await api(path, init);
    } catch (err) {
      if (err instanceof NeedKey) showKeyForm(true);
      setStatus('error', `${method === 'POST' ? 'bench' : 're-admit'} of ${id} failed: ${err.message}`);
      return;
    }
    poll();
  }

  function tickCountdowns() {
    const now = Date.now();
    for (const c of document.querySelectorAll('.countdown[data-until]')) {
      const left = (Number(c.dataset.until) - now) / 1000;
      c.textContent = left > 0 ? fmtDuration(left) : 'ending…';
    }
  }

  $('key-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const input = $('key');
    key = input.value.trim();
    input.value = '';
    if (key) sessionStorage.setItem(KEY_STORAGE, key);
    poll();
  });
  $('forget-key').addEventListener('click', () => {
    key = '';
    sessionStorage.removeItem(KEY_STORAGE);
    showKeyForm(true);
  });
  setInterval(tickCountdowns, 250);
  poll();
})();
