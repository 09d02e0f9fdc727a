// The interactive part of Joiner's HTML reports: timelines drawn with the
// embedded uPlot (hover for values, drag across a chart to zoom every chart
// of the page to that span, double-click to zoom out), tables that sort on
// a header's click, and a node's life and pods on a click of its row. It
// reads the run from the page's own JSON (#joiner-data) and fetches
// nothing.
(function () {
  'use strict';
  const data = JSON.parse(document.getElementById('joiner-data').textContent);
  const charts = [];
  window.joinerCharts = charts; // for the browser test and the curious
  const palette = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf', '#bcbd22', '#7f7f7f'];
  const utc = (ts) => uPlot.tzDate(new Date(ts * 1e3), 'Etc/UTC');

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === 'class') e.className = v; else e.setAttribute(k, v);
    }
    for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(c == null ? '' : String(c)));
    return e;
  }
  const pad = (n) => String(n).padStart(2, '0');
  const days = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
  function when(ts) {
    if (ts == null) return '';
    const d = new Date(ts * 1e3);
    return `${days[d.getUTCDay()]} ${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`;
  }
  // clock labels a time axis on the 24-hour UTC clock, with the date where
  // it changes (and on the first label).
  function clock(u, splits) {
    let day = '';
    return splits.map((ts) => {
      const d = new Date(ts * 1e3);
      const hm = `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}`;
      const date = `${days[d.getUTCDay()]} ${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`;
      if (date === day) return hm;
      day = date;
      return hm + '\n' + date;
    });
  }
  function num(v) {
    if (v == null) return '–';
    return Number.isInteger(v) ? String(v) : v.toFixed(2);
  }
  const dollars = (v) => (v == null ? '–' : '$' + v.toFixed(2));

  // Zoom: a drag on one chart sets the x span of every chart in its group.
  let syncing = false;
  function spread(u) {
    if (syncing) return;
    syncing = true;
    for (const c of charts) {
      if (c !== u && c.joinerGroup === u.joinerGroup) c.setScale('x', { min: u.scales.x.min, max: u.scales.x.max });
    }
    syncing = false;
  }

  // band shades a span (a node's life) on every chart of a group.
  function band(u) {
    const b = u.joinerBand;
    if (!b) return;
    const x0 = u.valToPos(b[0], 'x', true), x1 = u.valToPos(b[1], 'x', true);
    const ctx = u.ctx;
    ctx.save();
    ctx.fillStyle = 'rgba(255, 200, 0, 0.18)';
    ctx.fillRect(Math.max(x0, u.bbox.left), u.bbox.top, Math.min(x1, u.bbox.left + u.bbox.width) - Math.max(x0, u.bbox.left), u.bbox.height);
    ctx.restore();
  }

  // lineChart draws series over xs (seconds since the epoch) into parent.
  function lineChart(parent, title, group, xs, series, opts) {
    opts = opts || {};
    const box = el('div', { class: 'chart' });
    parent.append(box);
    const width = Math.max(360, Math.min(parent.clientWidth || 900, 1100));
    const u = new uPlot({
      title, width, height: 230, tzDate: utc,
      cursor: { sync: { key: group }, drag: { x: true, y: false } },
      scales: { x: { time: true } },
      legend: { live: true },
      axes: [{ values: clock, space: 60 }, { label: opts.unit || '', size: 60 }],
      series: [{ label: 'time (UTC)', value: (u, v) => (v == null ? '–' : when(v)) }].concat(series.map((s, i) => ({
        label: s.label,
        stroke: s.color || palette[i % palette.length],
        dash: s.dash,
        width: 1.5,
        points: s.points || { show: false },
        paths: s.paths,
        spanGaps: s.spanGaps !== false,
        value: (u, v) => (v == null ? '–' : (opts.money ? dollars(v) : num(v))),
      }))),
      hooks: { setScale: [(u, key) => { if (key === 'x') spread(u); }], draw: [band] },
    }, [xs].concat(series.map((s) => s.values)), box);
    u.joinerGroup = group;
    charts.push(u);
    return u;
  }

  // sortable renders rows as a table whose headers sort it (again: the
  // other way); onRow, if given, is called with a clicked row.
  function sortable(parent, cls, cols, rows, onRow) {
    const table = el('table', { class: 'sortable ' + cls });
    const head = el('tr');
    const body = el('tbody');
    let by = -1, dir = 1;
    cols.forEach((c, i) => {
      const th = el('th', { tabindex: '0', 'aria-sort': 'none', title: 'sort by ' + c.label }, c.label);
      const sort = () => {
        dir = by === i ? -dir : 1;
        by = i;
        rows.sort((a, b) => {
          const x = c.get(a), y = c.get(b);
          if (x === y) return 0;
          if (x == null) return 1;
          if (y == null) return -1;
          return (x < y ? -1 : 1) * dir;
        });
        head.querySelectorAll('th').forEach((h, j) => h.setAttribute('aria-sort', j === i ? (dir > 0 ? 'ascending' : 'descending') : 'none'));
        fill();
      };
      th.addEventListener('click', sort);
      th.addEventListener('keydown', (e) => { if (e.key === 'Enter' || e.key === ' ') sort(); });
      head.append(th);
    });
    function fill() {
      body.replaceChildren(...rows.map((r) => {
        const tr = el('tr', {}, ...cols.map((c) => el('td', c.num ? { class: 'num' } : {}, c.show ? c.show(r) : c.get(r))));
        if (onRow) {
          tr.className = 'clickable';
          tr.addEventListener('click', () => onRow(r));
        }
        return tr;
      }));
    }
    table.append(el('thead', {}, head), body);
    fill();
    parent.append(table);
    return table;
  }

  // series by name ({name: [values]}) in name order, as chart series.
  const named = (m) => Object.keys(m || {}).sort().map((k) => ({ label: k, values: m[k] }));

  function run(r, idx) {
    const root = document.getElementById('run-' + idx);
    const group = 'run-' + idx;
    const area = root.querySelector('.charts');
    const xs = r.minutes.map((m) => r.start + m * 60);
    if (xs.length > 0) {
      lineChart(area, 'Nodes by NodePool', group, xs, named(r.pools), { unit: 'nodes' });
      lineChart(area, 'Nodes by capacity type', group, xs, named(r.capacityTypes), { unit: 'nodes' });
      lineChart(area, 'Cost rate (USD/hour)', group, xs, [{ label: 'cost', values: r.cost }], { unit: 'USD/hour', money: true });
      lineChart(area, 'Pending pods', group, xs, [{ label: 'pending', values: r.pending }, { label: 'nodes disrupting', values: r.disrupting, color: '#ff7f0e' }], { unit: 'pods / nodes' });
    }
    disruptionsChart(area, r, group);
    histogram(area, r);
    tables(root, r, group);
  }

  // disruptionsChart marks each disruption at its time, a row per NodePool
  // and a colour per reason.
  function disruptionsChart(parent, r, group) {
    if (!r.disruptions || r.disruptions.length === 0) {
      parent.append(el('p', { class: 'note' }, 'No node was disrupted.'));
      return;
    }
    const pools = [...new Set(r.disruptions.map((d) => d.nodePool))].sort();
    const reasons = [...new Set(r.disruptions.map((d) => d.reason))].sort();
    const times = [...new Set(r.disruptions.map((d) => r.start + d.minute * 60))].sort((a, b) => a - b);
    const at = new Map(times.map((t, i) => [t, i]));
    const cols = reasons.map(() => times.map(() => null));
    for (const d of r.disruptions) cols[reasons.indexOf(d.reason)][at.get(r.start + d.minute * 60)] = pools.indexOf(d.nodePool);
    const u = lineChart(parent, 'Disruptions by reason (a row per NodePool)', group, times,
      reasons.map((name, i) => ({ label: name, values: cols[i], paths: () => null, points: { show: true, size: 8, fill: palette[i % palette.length] }, spanGaps: false })),
      { unit: 'NodePool' });
    u.axes[1].values = (u, vals) => vals.map((v) => (Number.isInteger(v) && pools[v] ? pools[v] : ''));
    u.setScale('y', { min: -0.5, max: pools.length - 0.5 });
    u.redraw();
  }

  function histogram(parent, r) {
    const h = r.histogram || [];
    if (h.length === 0) return;
    let prev = 0;
    const counts = h.map((b) => { const c = b.count - prev; prev = b.count; return c; });
    const labels = h.map((b) => (b.upToSeconds < 0 ? 'more' : '≤' + b.upToSeconds + 's'));
    const box = el('div', { class: 'chart' });
    parent.append(box);
    const title = r.ran === 0 ? 'Pod startup latency (pending → running): no pod ran' : 'Pod startup latency (pending → running)';
    const u = new uPlot({
      title, width: Math.max(360, Math.min(parent.clientWidth || 900, 1100)), height: 200,
      scales: { x: { time: false, range: [-0.5, labels.length - 0.5] } },
      axes: [{ values: (u, vals) => vals.map((v) => (Number.isInteger(v) ? labels[v] || '' : '')), splits: () => labels.map((_, i) => i) }, { label: 'pods', size: 60 }],
      series: [{ label: 'up to', value: (u, v) => (v == null ? '–' : labels[v]) },
        { label: 'pods', fill: 'rgba(44,160,44,0.6)', stroke: '#2ca02c', paths: uPlot.paths.bars({ size: [0.7, 60] }), points: { show: false }, value: (u, v) => num(v) }],
    }, [labels.map((_, i) => i), counts], box);
    u.joinerGroup = 'histogram';
    charts.push(u);
  }

  function tables(root, r, group) {
    const byName = new Map(r.nodes.map((n) => [n.name, n]));
    const detail = root.querySelector('.node-detail');
    const show = (name) => { const n = byName.get(name); if (n) showNode(detail, r, n, group); };
    const nodes = root.querySelector('.nodes');
    nodes.append(el('h3', {}, `Nodes (${r.nodes.length}) — click one for its life and pods`));
    sortable(nodes, 'node-table', [
      { label: 'node', get: (n) => n.name },
      { label: 'NodePool', get: (n) => n.nodePool },
      { label: 'instance type', get: (n) => n.instanceType },
      { label: 'zone', get: (n) => n.zone },
      { label: 'capacity type', get: (n) => n.capacityType },
      { label: 'launched', get: (n) => n.launched, show: (n) => when(n.launched) },
      { label: 'deleted', get: (n) => n.deleted, show: (n) => (n.deleted == null ? 'running at the end' : when(n.deleted)) },
      { label: 'reason', get: (n) => n.deletedReason || '' },
      { label: 'pods ran', get: (n) => n.podsRan, num: true },
      { label: 'peak pods', get: (n) => n.peakPods, num: true },
    ], r.nodes.slice(), (n) => showNode(detail, r, n, group));

    const dis = root.querySelector('.disruptions');
    dis.append(el('h3', {}, `Disruptions (${(r.disruptions || []).length})`));
    if ((r.disruptions || []).length > 0) {
      sortable(dis, 'disruption-table', [
        { label: 'when', get: (d) => d.minute, show: (d) => when(r.start + d.minute * 60) },
        { label: 'NodePool', get: (d) => d.nodePool },
        { label: 'node', get: (d) => d.node },
        { label: 'reason', get: (d) => d.reason },
      ], r.disruptions.slice(), (d) => show(d.node));
    }
    const held = root.querySelector('.blocked');
    held.append(el('h3', {}, `What held nodes back (${(r.blocked || []).length})`));
    if ((r.blocked || []).length > 0) {
      sortable(held, 'blocked-table', [
        { label: 'node', get: (b) => b.node },
        { label: 'NodePool', get: (b) => b.nodePool },
        { label: 'code', get: (b) => b.code },
        { label: 'why', get: (b) => b.why },
        { label: 'passes', get: (b) => b.passes, num: true },
        { label: 'first', get: (b) => b.firstMinute, show: (b) => when(r.start + b.firstMinute * 60) },
        { label: 'last', get: (b) => b.lastMinute, show: (b) => when(r.start + b.lastMinute * 60) },
      ], r.blocked.slice(), (b) => show(b.node));
    }
  }

  // showNode fills the detail panel with one node's life and pods, and
  // shades its life on the run's charts.
  function showNode(detail, r, n, group) {
    const row = (k, v) => [el('dt', {}, k), el('dd', {}, v)];
    const life = [
      ['NodePool', n.nodePool], ['instance type', n.instanceType], ['zone', n.zone], ['capacity type', n.capacityType],
    ];
    if (n.reservation) life.push(['reservation', n.reservation]);
    life.push(['launched', when(n.launched)]);
    if (n.failed != null) life.push(['failed', when(n.failed)]);
    life.push(['deleted', n.deleted == null ? 'running at the end' : when(n.deleted) + (n.deletedReason ? ' (' + n.deletedReason + ')' : '')]);
    const end = n.deleted == null ? r.end : n.deleted;
    life.push(['lived', hours(end - n.launched)]);
    life.push(['pods ran', String(n.podsRan)], ['most pods at once', String(n.peakPods)]);
    const pods = Object.entries(n.podsByWorkload || {}).map(([w, c]) => ({ w, c }));
    const events = (r.disruptions || []).filter((d) => d.node === n.name);
    const holds = (r.blocked || []).filter((b) => b.node === n.name);
    detail.replaceChildren(
      el('h3', {}, 'Node ' + n.name),
      el('dl', {}, ...life.flatMap(([k, v]) => row(k, v))));
    if (pods.length > 0) {
      detail.append(el('h4', {}, 'Its pods, by workload'));
      sortable(detail, 'pods-table', [
        { label: 'workload', get: (p) => p.w },
        { label: 'pods', get: (p) => p.c, num: true },
      ], pods.sort((a, b) => b.c - a.c || (a.w < b.w ? -1 : 1)));
    } else {
      detail.append(el('p', { class: 'note' }, 'No pod ran on it (DaemonSet pods are not counted).'));
    }
    for (const d of events) detail.append(el('p', {}, `Disrupted ${when(r.start + d.minute * 60)}: ${d.reason}.`));
    for (const b of holds) detail.append(el('p', {}, `Held back in ${b.passes} pass${b.passes === 1 ? '' : 'es'} (${when(r.start + b.firstMinute * 60)} to ${when(r.start + b.lastMinute * 60)}): ${b.why}.`));
    detail.hidden = false;
    for (const c of charts) {
      if (c.joinerGroup === group) {
        c.joinerBand = [n.launched, end];
        c.redraw(false, false);
      }
    }
  }

  function hours(s) {
    const h = Math.floor(s / 3600), m = Math.round((s % 3600) / 60);
    return h > 0 ? `${h} h ${m} min` : `${m} min`;
  }

  // compare draws two runs' totals on one chart each, by time from start.
  function compare(runs) {
    const parent = document.getElementById('compare');
    if (!parent || runs.length < 2) return;
    const grid = [...new Set(runs.flatMap((r) => r.minutes))].sort((a, b) => a - b);
    const col = (r, f) => { const at = new Map(r.minutes.map((m, i) => [m, i])); return grid.map((m) => (at.has(m) ? f(r, at.get(m)) : null)); };
    const total = (r, i) => Object.values(r.pools || {}).reduce((s, v) => s + v[i], 0);
    const xs = grid.map((m) => runs[0].start + m * 60);
    const styles = [{ color: '#1f77b4' }, { color: '#d62728', dash: [6, 4] }];
    const two = (f) => runs.map((r, k) => Object.assign({ label: r.title, values: col(r, f) }, styles[k]));
    lineChart(parent, 'Nodes (both runs, aligned at their start)', 'compare', xs, two(total), { unit: 'nodes' });
    lineChart(parent, 'Cost rate (USD/hour, both runs)', 'compare', xs, two((r, i) => r.cost[i]), { unit: 'USD/hour', money: true });
    lineChart(parent, 'Pending pods (both runs)', 'compare', xs, two((r, i) => r.pending[i]), { unit: 'pods' });
  }

  // backtest draws the recorded and the simulated cluster on one chart per
  // figure.
  function backtest(bt) {
    const parent = document.getElementById('backtest');
    const grid = [...new Set(bt.recorded.map((p) => p.seconds).concat(bt.simulated.map((p) => p.seconds)))].sort((a, b) => a - b);
    const xs = grid.map((s) => bt.start + s);
    const col = (pts, f) => { const at = new Map(pts.map((p) => [p.seconds, p])); return grid.map((s) => (at.has(s) ? f(at.get(s)) : null)); };
    const two = (f) => [
      { label: 'recorded', values: col(bt.recorded, f), color: '#1f77b4' },
      { label: 'simulated', values: col(bt.simulated, f), color: '#d62728', dash: [6, 4] },
    ];
    lineChart(parent, 'Nodes: recorded and simulated', 'backtest', xs, two((p) => p.nodes), { unit: 'nodes' });
    const types = [...new Set(bt.recorded.concat(bt.simulated).flatMap((p) => Object.keys(p.nodesByCapacityType || {})))].sort();
    if (types.length > 0) {
      lineChart(parent, 'Nodes by capacity type: recorded and simulated', 'backtest', xs, types.flatMap((t, i) => [
        { label: 'recorded ' + t, values: col(bt.recorded, (p) => (p.nodesByCapacityType || {})[t] || 0), color: palette[(2 * i) % 10] },
        { label: 'simulated ' + t, values: col(bt.simulated, (p) => (p.nodesByCapacityType || {})[t] || 0), color: palette[(2 * i + 1) % 10], dash: [6, 4] },
      ]), { unit: 'nodes' });
    }
    lineChart(parent, 'Cost rate: recorded and simulated', 'backtest', xs, two((p) => p.costPerHourUSD), { unit: 'USD/hour', money: true });
    lineChart(parent, 'Pending pods: recorded and simulated', 'backtest', xs, two((p) => p.pending), { unit: 'pods' });
    const div = document.getElementById('divergences');
    if (bt.divergences.length > 0) {
      div.append(el('h2', {}, 'Largest divergences'));
      sortable(div, 'divergence-table', [
        { label: 'when', get: (d) => d.at, show: (d) => when(d.at) },
        { label: 'recorded nodes', get: (d) => d.recordedNodes, num: true },
        { label: 'simulated nodes', get: (d) => d.simulatedNodes, num: true },
        { label: 'recorded $/h', get: (d) => d.recordedCost, show: (d) => dollars(d.recordedCost), num: true },
        { label: 'simulated $/h', get: (d) => d.simulatedCost, show: (d) => dollars(d.simulatedCost), num: true },
        { label: 'what happened before', get: (d) => d.why },
      ], bt.divergences.slice());
    }
  }

  if (data.runs) {
    data.runs.forEach(run);
    compare(data.runs);
  }
  if (data.backtest) backtest(data.backtest);
  document.body.dataset.ready = 'true';
})();
