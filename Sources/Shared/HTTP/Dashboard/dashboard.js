// Tributary dashboard: follows /api/events (Server-Sent Events, one snapshot a second) and updates the page in
// place. Every string from the server goes into the page through textContent or an attribute, never as markup.
'use strict';

(function () {
  const TOKEN_KEY = 'tributary.dashboard.token';
  const STALLED_AFTER_MS = 5000;
  const LATE_HEARTBEAT_SECONDS = 10;
  const MAX_MESSAGES = 5;
  const QUEUED_SHOWN = 10; // queued jobs shown before "show all"
  const SLOW_QUEUE_SECONDS = 60; // a queue's latency above this is shown amber
  const STUCK_QUEUE_SECONDS = 600; // and above this red
  const SVG_NS = 'http://www.w3.org/2000/svg';

  const state = {
    snapshot: null, // the newest snapshot shown
    lastSnapshotAt: 0, // Date.now() when it came
    source: null, // the EventSource
    connection: '',
    everLive: false,
    reconnectDelay: 1000,
    reconnectAt: 0,
    reconnectTimer: null,
    pendingAction: null, // the action to repeat once a token is entered
    hoverTime: null, // the chart's cursor, as a sample time
    memoryToken: null, // when sessionStorage is unavailable
    reportedErrors: new Set(),
  };

  const $ = (id) => document.getElementById(id);

  // ---------------------------------------------------------------------------------------------- formatting

  const integerFormat = new Intl.NumberFormat(undefined, { maximumFractionDigits: 0 });
  const oneDecimalFormat = new Intl.NumberFormat(undefined, { minimumFractionDigits: 1, maximumFractionDigits: 1 });

  function isNumber(value) {
    return typeof value === 'number' && Number.isFinite(value);
  }

  function formatInteger(value) {
    return isNumber(value) ? integerFormat.format(Math.round(value)) : '–';
  }

  function formatRate(value) {
    if (!isNumber(value)) return '–';
    return Math.abs(value) >= 100 ? integerFormat.format(Math.round(value)) : oneDecimalFormat.format(value);
  }

  function trimZeros(text) {
    return text.indexOf('.') >= 0 ? text.replace(/\.?0+$/, '') : text;
  }

  // Axis labels: 41000 -> "41k", 1250000 -> "1.25M", 0.5 -> "0.5".
  function formatCompact(value) {
    const magnitude = Math.abs(value);
    if (magnitude >= 1e9) return trimZeros((value / 1e9).toFixed(2)) + 'G';
    if (magnitude >= 1e6) return trimZeros((value / 1e6).toFixed(2)) + 'M';
    if (magnitude >= 1e3) return trimZeros((value / 1e3).toFixed(2)) + 'k';
    return trimZeros(value.toFixed(2));
  }

  function formatBytes(value) {
    if (!isNumber(value)) return '–';
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
    let amount = value;
    let unit = 0;
    while (Math.abs(amount) >= 1024 && unit < units.length - 1) {
      amount /= 1024;
      unit += 1;
    }
    if (unit === 0) return integerFormat.format(amount) + ' B';
    return (amount >= 100 ? integerFormat.format(amount) : oneDecimalFormat.format(amount)) + ' ' + units[unit];
  }

  function pad2(value) {
    return value < 10 ? '0' + value : String(value);
  }

  // Unix seconds -> local "HH:MM:SS" (or "HH:MM").
  function formatClock(seconds, withSeconds) {
    if (!isNumber(seconds)) return '–';
    const date = new Date(seconds * 1000);
    const text = pad2(date.getHours()) + ':' + pad2(date.getMinutes());
    return withSeconds === false ? text : text + ':' + pad2(date.getSeconds());
  }

  // Unix seconds -> local "YYYY-MM-DD HH:MM:SS".
  function formatDateTime(seconds) {
    if (!isNumber(seconds)) return '–';
    const date = new Date(seconds * 1000);
    return date.getFullYear() + '-' + pad2(date.getMonth() + 1) + '-' + pad2(date.getDate()) + ' ' +
      formatClock(seconds);
  }

  function formatDuration(seconds) {
    if (!isNumber(seconds)) return '–';
    const value = Math.max(0, seconds);
    if (value < 10) return oneDecimalFormat.format(value) + ' s';
    if (value < 90) return Math.round(value) + ' s';
    if (value < 90 * 60) return Math.round(value / 60) + ' min';
    if (value < 36 * 3600) {
      const hours = Math.floor(value / 3600);
      const minutes = Math.round((value - hours * 3600) / 60);
      return minutes > 0 ? hours + ' h ' + minutes + ' min' : hours + ' h';
    }
    return Math.round(value / 86400) + ' d';
  }

  // Ages are measured against the snapshot's own time, so a skewed browser clock does not matter.
  function formatAgo(seconds, now) {
    return isNumber(seconds) && isNumber(now) ? formatDuration(now - seconds) + ' ago' : '–';
  }

  // ---------------------------------------------------------------------------------------------- DOM helpers

  function el(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function button(className, text, onClick) {
    const node = el('button', className, text);
    node.type = 'button';
    node.addEventListener('click', onClick);
    return node;
  }

  function setText(node, text) {
    const value = text === undefined || text === null ? '' : String(text);
    if (node.textContent !== value) node.textContent = value;
  }

  function setTitle(node, text) {
    const value = text === undefined || text === null ? '' : String(text);
    if (node.title !== value) node.title = value;
  }

  function setWidth(node, fraction) {
    const clamped = isNumber(fraction) ? Math.min(1, Math.max(0, fraction)) : 0;
    const value = (clamped * 100).toFixed(2) + '%';
    if (node.style.width !== value) node.style.width = value;
  }

  function show(node, visible) {
    if (node.hidden === visible) node.hidden = !visible;
  }

  function text(value) {
    return value === undefined || value === null ? '' : String(value);
  }

  function list(value) {
    return Array.isArray(value) ? value : [];
  }

  function object(value) {
    return value && typeof value === 'object' ? value : {};
  }

  // Makes a table body show one row per item, in order, keyed by keyOf. Rows of items that stay are kept and
  // only updated (so an open <details>, an inline confirmation or a focused button survive each snapshot).
  // With limit, rows past it are hidden until the table's "show all" is clicked (see setUpShowAll).
  function reconcile(table, items, keyOf, create, update, emptyText, limit) {
    const body = table.tBodies[0];
    const columns = table.tHead.rows[0].cells.length;
    const previous = body._rows || new Map();
    const rows = new Map();
    const ordered = [];
    for (const item of items) {
      const key = String(keyOf(item));
      if (rows.has(key)) continue;
      let row = previous.get(key);
      if (!row) row = create(item);
      update(row, item);
      rows.set(key, row);
      ordered.push(row);
    }
    for (const [key, row] of previous) {
      if (!rows.has(key)) row.remove();
    }
    body._rows = rows;

    if (ordered.length === 0) {
      if (!body._empty) {
        const row = el('tr', 'empty');
        const cell = el('td', null, emptyText);
        cell.colSpan = columns;
        row.appendChild(cell);
        body._empty = row;
      }
      if (body._empty.parentNode !== body) body.appendChild(body._empty);
      return;
    }
    if (body._empty && body._empty.parentNode === body) body._empty.remove();
    let next = body.firstElementChild;
    for (const row of ordered) {
      if (row === next) {
        next = next.nextElementSibling;
      } else {
        body.insertBefore(row, next);
      }
    }
    if (limit) {
      const showAll = table._showAll;
      const all = showAll && showAll.expanded;
      ordered.forEach((row, index) => show(row, all || index < limit));
      if (showAll) {
        show(showAll.button, ordered.length > limit);
        setText(showAll.button, all ? 'show the first ' + limit : 'show all ' + formatInteger(ordered.length));
      }
    }
  }

  // A "show all" button beside a table's count, for reconcile's limit.
  function setUpShowAll(table, countNode) {
    const toggle = { expanded: false, button: null };
    toggle.button = button('link show-all', '', () => {
      toggle.expanded = !toggle.expanded;
      if (state.snapshot) render(state.snapshot);
    });
    toggle.button.hidden = true;
    countNode.after(toggle.button);
    table._showAll = toggle;
  }

  function cells(row, count) {
    for (let index = 0; index < count; index += 1) row.appendChild(el('td'));
    return row.cells;
  }

  // A progress bar and its figures: returns {root, fill, figures}.
  function progressBar(fillClass) {
    const root = el('div', 'progress');
    const bar = el('div', 'bar');
    const fill = el('div', 'fill' + (fillClass ? ' ' + fillClass : ''));
    bar.appendChild(fill);
    const figures = el('span', 'figures');
    root.append(bar, figures);
    return { root, fill, figures };
  }

  // ---------------------------------------------------------------------------------------------- messages

  function showMessage(kind, message, timeoutMs) {
    const area = $('messages');
    for (const existing of Array.from(area.children)) {
      if (existing._text === message) existing.remove();
    }
    const node = el('div', 'message ' + kind);
    node._text = message;
    node.setAttribute('role', kind === 'error' ? 'alert' : 'status');
    node.appendChild(el('span', 'text', message));
    node.appendChild(button('close', '×', () => node.remove()));
    node.lastChild.setAttribute('aria-label', 'dismiss');
    area.appendChild(node);
    while (area.children.length > MAX_MESSAGES) area.firstElementChild.remove();
    if (timeoutMs) setTimeout(() => node.remove(), timeoutMs);
  }

  // Reports an unexpected failure (a bad snapshot, a rendering error) once per distinct message.
  function reportOnce(message) {
    if (state.reportedErrors.has(message)) return;
    state.reportedErrors.add(message);
    showMessage('error', message);
  }

  // ---------------------------------------------------------------------------------------------- token

  function getToken() {
    try {
      return window.sessionStorage.getItem(TOKEN_KEY) || state.memoryToken;
    } catch (error) {
      return state.memoryToken;
    }
  }

  function setToken(token) {
    state.memoryToken = token || null;
    try {
      if (token) window.sessionStorage.setItem(TOKEN_KEY, token);
      else window.sessionStorage.removeItem(TOKEN_KEY);
    } catch (error) {
      // sessionStorage is unavailable (a privacy setting): the token lasts as long as the page.
    }
    show($('forget-token'), Boolean(token));
  }

  // ?token=... is kept in sessionStorage and taken out of the address bar (and so out of the history).
  function takeTokenFromAddress() {
    const params = new URLSearchParams(window.location.search);
    const token = params.get('token');
    if (token === null) return;
    setToken(token);
    params.delete('token');
    const query = params.toString();
    const address = window.location.pathname + (query ? '?' + query : '') + window.location.hash;
    try {
      window.history.replaceState(null, '', address);
    } catch (error) {
      // Leave the address as it is.
    }
  }

  function askForToken(reason, action) {
    state.pendingAction = action;
    setText($('token-reason'), reason);
    show($('token-form'), true);
    const input = $('token-input');
    input.value = '';
    input.focus();
  }

  function setUpTokenForm() {
    $('token-form').addEventListener('submit', (event) => {
      event.preventDefault();
      const token = $('token-input').value.trim();
      if (!token) return;
      setToken(token);
      $('token-input').value = '';
      show($('token-form'), false);
      const action = state.pendingAction;
      state.pendingAction = null;
      if (action) action();
    });
    $('token-dismiss').addEventListener('click', () => {
      state.pendingAction = null;
      $('token-input').value = '';
      show($('token-form'), false);
    });
    $('forget-token').addEventListener('click', () => {
      setToken(null);
      showMessage('info', 'Token forgotten.', 4000);
    });
    show($('forget-token'), Boolean(getToken()));
  }

  // ---------------------------------------------------------------------------------------------- actions

  // method, path: the request; what: "Retry job 9"; success: "Job 9 is queued again."; buttons: disabled while
  // it runs.
  async function act(method, path, what, success, buttons) {
    const run = () => act(method, path, what, success, buttons);
    const token = getToken();
    // The coordinator takes an action only with this header: a page of another site cannot send it unasked.
    const headers = authorization({ Accept: 'application/json', 'X-Tributary-Action': '1' });
    for (const node of buttons) node.disabled = true;
    try {
      let response;
      try {
        response = await fetch(path, { method, headers, cache: 'no-store', credentials: 'same-origin' });
      } catch (error) {
        showMessage('error', what + ' failed: the coordinator cannot be reached (' + error.message + ').');
        return false;
      }
      const body = await response.text();
      let json = null;
      try {
        json = body ? JSON.parse(body) : null;
      } catch (error) {
        json = null;
      }
      if (response.status === 401) {
        if (token) setToken(null);
        askForToken(token
          ? 'The coordinator refused the token. ' + what + ' needs another one:'
          : 'The coordinator needs a token to ' + what.toLowerCase() + ':', run);
        return false;
      }
      if (!response.ok) {
        const problem = object(object(json).error);
        const message = problem.message ? text(problem.message) : body.trim().slice(0, 300);
        const code = problem.code ? ' [' + text(problem.code) + ']' : '';
        showMessage('error', what + ' failed: ' + (message || 'HTTP ' + response.status) + code);
        return false;
      }
      showMessage('info', success, 5000);
      refresh();
      return true;
    } finally {
      for (const node of buttons) node.disabled = false;
    }
  }

  function jobPath(id) {
    return '/api/jobs/' + encodeURIComponent(String(id));
  }

  function cancelJob(id, buttons) {
    return act('POST', jobPath(id) + '/cancel', 'Cancel job ' + text(id), 'Job ' + text(id) + ' cancelled.', buttons);
  }

  function authorization(headers) {
    const token = getToken();
    if (token) headers.Authorization = 'Bearer ' + token;
    return headers;
  }

  // ---------------------------------------------------------------------------------------------- header and cards

  function renderHeader(snapshot) {
    const store = object(snapshot.store);
    setText($('store-path'), store.path);
    setTitle($('store-path'), store.path ? 'store: ' + store.path : '');
    show($('not-ready'), snapshot.ready === false);
    // A cluster's primary: its epoch and each standby with how far behind it is.
    const cluster = snapshot.cluster ? object(snapshot.cluster) : null;
    show($('cluster'), cluster !== null);
    show($('writes-blocked'), cluster !== null && cluster.writesBlocked === true);
    if (cluster !== null) {
      const standbys = list(cluster.standbys).map((standby) => {
        const entry = object(standby);
        return entry.name + (entry.inSync ? ' in sync' : ' catching up') + (entry.connected === false ? ' (gone)' : '')
          + ', lag ' + formatInteger(entry.lagRecords);
      });
      setText($('cluster'), 'primary ' + cluster.node + ' of ' + cluster.cluster + ' · epoch ' + cluster.epoch
        + ' · ' + (standbys.length > 0 ? standbys.join(' · ') : 'no standby'));
    }
    setText($('updated'), formatClock(snapshot.time));
    setTitle($('updated'), formatDateTime(snapshot.time));
    const dead = object(snapshot.jobs).dead;
    const title = isNumber(dead) && dead > 0 ? '(' + formatInteger(dead) + ' dead) Tributary' : 'Tributary';
    if (document.title !== title) document.title = title;
  }

  // The time the snapshot's `recent` rates are over: the time since the start until it is a minute.
  function recentSpan(seconds) {
    if (!isNumber(seconds) || seconds <= 0) return null;
    return seconds >= 59.5 ? '1 min' : formatDuration(seconds);
  }

  function renderCards(snapshot) {
    const jobs = object(snapshot.jobs);
    for (const name of ['waiting', 'queued', 'running', 'done', 'dead', 'cancelled']) {
      setText($('jobs-' + name), formatInteger(jobs[name]));
    }
    $('jobs-dead').parentNode.classList.toggle('nonzero', isNumber(jobs.dead) && jobs.dead > 0);

    const totals = object(snapshot.totals);
    setText($('rows-committed'), formatInteger(totals.rowsCommitted));
    setText($('commits'), formatInteger(totals.commits) + ' commits · ' + formatInteger(totals.jobsDone) + ' jobs');

    const rates = list(snapshot.rates);
    const last = rates.length > 0 ? object(rates[rates.length - 1]) : {};
    setText($('rows-per-second'), formatRate(last.rowsPerSecond));
    setText($('jobs-per-second'), formatRate(last.jobsPerSecond));
    const recent = object(snapshot.recent);
    const span = recentSpan(recent.seconds);
    setText($('rows-per-second-avg'), span === null ? '' : formatRate(recent.rowsPerSecond) + ' over ' + span);
    setText($('jobs-per-second-avg'), span === null ? '' : formatRate(recent.jobsPerSecond) + ' over ' + span);

    const feed = object(snapshot.feed);
    setText($('last-seq'), formatInteger(feed.lastSeq));
    setText($('oldest-seq'), isNumber(feed.oldestSeq) ? 'oldest kept ' + formatInteger(feed.oldestSeq) : '');

    const store = object(snapshot.store);
    setText($('store-size'), formatBytes(store.bytes));
    setText($('wal-size'), isNumber(store.walBytes) ? 'WAL ' + formatBytes(store.walBytes) : '');
  }

  // "40,000 / 100,000 rows · 40%"
  function progressText(done, total, unit) {
    const percent = isNumber(done) && isNumber(total) && total > 0 ? Math.floor(done / total * 100) + '%' : '–';
    return formatInteger(done) + ' / ' + formatInteger(total) + ' ' + unit + ' · ' + percent;
  }

  function countText(shown, total) {
    if (isNumber(total) && total > shown) return 'showing ' + formatInteger(shown) + ' of ' + formatInteger(total);
    return 'showing ' + formatInteger(shown);
  }

  // ---------------------------------------------------------------------------------------------- chart

  const chart = { svg: null, samples: [], scale: null };

  function svgNode(tag, attributes, content) {
    const node = document.createElementNS(SVG_NS, tag);
    for (const name of Object.keys(attributes || {})) node.setAttribute(name, String(attributes[name]));
    if (content !== undefined) node.textContent = content;
    return node;
  }

  // The smallest round number (1, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 times a power of ten) at least value.
  function niceStep(value) {
    if (!(value > 0)) return 1;
    const power = Math.pow(10, Math.floor(Math.log10(value)));
    for (const nice of [1, 1.5, 2, 2.5, 3, 4, 5, 6, 8]) {
      if (value <= nice * power * (1 + 1e-9)) return nice * power;
    }
    return 10 * power;
  }

  function setUpChart() {
    const root = svgNode('svg', { role: 'img', 'aria-label': 'rows per second and jobs per second' });
    chart.grid = svgNode('g');
    chart.axes = svgNode('g', { class: 'axis' });
    chart.plot = svgNode('g');
    chart.cursor = svgNode('line', { class: 'cursor', visibility: 'hidden' });
    chart.overlay = svgNode('rect', { fill: 'transparent' });
    root.append(chart.grid, chart.plot, chart.axes, chart.cursor, chart.overlay);
    chart.svg = root;
    $('chart').appendChild(root);
    chart.overlay.addEventListener('mousemove', (event) => {
      if (!chart.scale) return;
      const bounds = root.getBoundingClientRect();
      state.hoverTime = chart.scale.timeAt(event.clientX - bounds.left);
      drawCursor();
    });
    chart.overlay.addEventListener('mouseleave', () => {
      state.hoverTime = null;
      drawCursor();
    });
    let pending = false;
    window.addEventListener('resize', () => {
      if (pending) return;
      pending = true;
      window.requestAnimationFrame(() => {
        pending = false;
        if (state.snapshot) renderChart(list(state.snapshot.rates));
      });
    });
  }

  // Lines broken where samples are missing (a coordinator restart), as SVG path data.
  function pathData(samples, field, x, y, area, baseline) {
    let data = '';
    let segment = [];
    const flush = () => {
      if (segment.length === 0) return;
      let part = 'M' + segment.map((point) => point[0].toFixed(1) + ',' + point[1].toFixed(1)).join('L');
      if (area) {
        part += 'L' + segment[segment.length - 1][0].toFixed(1) + ',' + baseline.toFixed(1) +
          'L' + segment[0][0].toFixed(1) + ',' + baseline.toFixed(1) + 'Z';
      }
      data += part;
      segment = [];
    };
    let previousTime = null;
    for (const sample of samples) {
      if (!isNumber(sample.time) || !isNumber(sample[field])) {
        flush();
        previousTime = null;
        continue;
      }
      if (previousTime !== null && sample.time - previousTime > 3.5) flush();
      segment.push([x(sample.time), y(sample[field])]);
      previousTime = sample.time;
    }
    flush();
    return data;
  }

  function renderChart(rates) {
    if (!chart.svg) setUpChart();
    const samples = rates.filter((sample) => sample && isNumber(sample.time));
    chart.samples = samples;
    const bounds = chart.svg.getBoundingClientRect();
    const width = Math.max(200, Math.round(bounds.width));
    const height = Math.max(120, Math.round(bounds.height));
    chart.svg.setAttribute('viewBox', '0 0 ' + width + ' ' + height);
    chart.grid.replaceChildren();
    chart.axes.replaceChildren();
    chart.plot.replaceChildren();
    const margin = { left: 52, right: 50, top: 20, bottom: 22 };
    const left = margin.left;
    const right = width - margin.right;
    const top = margin.top;
    const bottom = height - margin.bottom;
    chart.overlay.setAttribute('x', left);
    chart.overlay.setAttribute('y', top);
    chart.overlay.setAttribute('width', Math.max(0, right - left));
    chart.overlay.setAttribute('height', Math.max(0, bottom - top));

    if (samples.length < 2) {
      chart.scale = null;
      chart.axes.appendChild(svgNode('text', {
        class: 'empty', x: (left + right) / 2, y: (top + bottom) / 2, 'text-anchor': 'middle',
      }, 'collecting samples…'));
      drawCursor();
      return;
    }

    const end = samples[samples.length - 1].time;
    const start = Math.min(samples[0].time, end - 60);
    const x = (time) => left + (time - start) / (end - start) * (right - left);
    const ticks = 4;
    let rowsMax = 0;
    let jobsMax = 0;
    for (const sample of samples) {
      if (isNumber(sample.rowsPerSecond)) rowsMax = Math.max(rowsMax, sample.rowsPerSecond);
      if (isNumber(sample.jobsPerSecond)) jobsMax = Math.max(jobsMax, sample.jobsPerSecond);
    }
    const rowsStep = niceStep(rowsMax / ticks);
    const jobsStep = niceStep(jobsMax / ticks);
    const yRows = (value) => bottom - value / (rowsStep * ticks) * (bottom - top);
    const yJobs = (value) => bottom - value / (jobsStep * ticks) * (bottom - top);

    for (let index = 0; index <= ticks; index += 1) {
      const y = bottom - index / ticks * (bottom - top);
      chart.grid.appendChild(svgNode('line', {
        class: index === 0 ? 'baseline' : 'gridline', x1: left, x2: right, y1: y, y2: y,
      }));
      chart.axes.appendChild(svgNode('text', {
        class: 'rows', x: left - 6, y: y + 4, 'text-anchor': 'end',
      }, formatCompact(rowsStep * index)));
      chart.axes.appendChild(svgNode('text', {
        class: 'jobs', x: right + 6, y: y + 4, 'text-anchor': 'start',
      }, formatCompact(jobsStep * index)));
    }
    chart.axes.appendChild(svgNode('text', { class: 'rows', x: left - 6, y: 11, 'text-anchor': 'end' }, 'rows/s'));
    chart.axes.appendChild(svgNode('text', { class: 'jobs', x: right + 6, y: 11, 'text-anchor': 'start' }, 'jobs/s'));

    const span = end - start;
    const pixels = right - left;
    const steps = [5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600];
    let step = steps[steps.length - 1];
    for (const candidate of steps) {
      if (span / candidate <= Math.max(2, Math.floor(pixels / 80))) {
        step = candidate;
        break;
      }
    }
    for (let time = Math.ceil(start / step) * step; time <= end + 0.001; time += step) {
      const tickX = x(time);
      chart.grid.appendChild(svgNode('line', { class: 'gridline', x1: tickX, x2: tickX, y1: top, y2: bottom }));
      chart.axes.appendChild(svgNode('text', {
        x: tickX, y: bottom + 15, 'text-anchor': 'middle',
      }, formatClock(time, step < 60)));
    }

    chart.plot.appendChild(svgNode('path', {
      class: 'area rows', d: pathData(samples, 'rowsPerSecond', x, yRows, true, bottom),
    }));
    chart.plot.appendChild(svgNode('path', {
      class: 'series rows', d: pathData(samples, 'rowsPerSecond', x, yRows, false, bottom),
    }));
    chart.plot.appendChild(svgNode('path', {
      class: 'series jobs', d: pathData(samples, 'jobsPerSecond', x, yJobs, false, bottom),
    }));

    chart.scale = {
      x, top, bottom,
      timeAt: (pixel) => start + (Math.min(right, Math.max(left, pixel)) - left) / (right - left) * (end - start),
    };
    drawCursor();
  }

  function nearestSample(samples, time) {
    let low = 0;
    let high = samples.length - 1;
    while (low < high) {
      const middle = (low + high) >> 1;
      if (samples[middle].time < time) low = middle + 1;
      else high = middle;
    }
    if (low > 0 && Math.abs(samples[low - 1].time - time) < Math.abs(samples[low].time - time)) low -= 1;
    return samples[low];
  }

  function drawCursor() {
    const samples = chart.samples;
    let sample = samples.length > 0 ? samples[samples.length - 1] : null;
    const hovering = state.hoverTime !== null && chart.scale && samples.length > 0;
    if (hovering) {
      sample = nearestSample(samples, state.hoverTime);
      const cursorX = chart.scale.x(sample.time);
      chart.cursor.setAttribute('x1', cursorX);
      chart.cursor.setAttribute('x2', cursorX);
      chart.cursor.setAttribute('y1', chart.scale.top);
      chart.cursor.setAttribute('y2', chart.scale.bottom);
      chart.cursor.setAttribute('visibility', 'visible');
    } else {
      chart.cursor.setAttribute('visibility', 'hidden');
    }
    setText($('chart-rows'), sample ? formatRate(sample.rowsPerSecond) : '–');
    setText($('chart-jobs'), sample ? formatRate(sample.jobsPerSecond) : '–');
    setText($('chart-at'), sample ? (hovering ? 'at ' : 'latest, ') + formatClock(sample.time) : '');
  }

  // ---------------------------------------------------------------------------------------------- tables

  function renderBatches(snapshot) {
    const batches = list(snapshot.batches);
    setText($('batches-count'), formatInteger(batches.length));
    reconcile($('batches'), batches, (batch) => batch.batch, () => {
      const row = el('tr');
      const [name, rows, jobs] = cells(row, 3);
      name.className = 'id';
      rows.className = 'wide';
      row._bar = progressBar();
      rows.appendChild(row._bar.root);
      jobs.className = 'jobs-figures';
      row._done = el('span');
      row._dead = el('span', 'dead');
      row._cancelled = el('span', 'cancelled');
      jobs.append(row._done, row._dead, row._cancelled);
      return row;
    }, (row, batch) => {
      setText(row.cells[0], batch.batch);
      const useRows = isNumber(batch.totalRows) && batch.totalRows > 0;
      const done = useRows ? batch.doneRows : batch.doneJobs;
      const total = useRows ? batch.totalRows : batch.totalJobs;
      const fraction = isNumber(done) && isNumber(total) && total > 0 ? done / total : 0;
      setWidth(row._bar.fill, fraction);
      setText(row._bar.figures, progressText(done, total, useRows ? 'rows' : 'jobs'));
      setText(row._done, formatInteger(batch.doneJobs) + ' / ' + formatInteger(batch.totalJobs) + ' done');
      setText(row._dead, batch.deadJobs > 0 ? ' · ' + formatInteger(batch.deadJobs) + ' dead' : '');
      const cancelled = batch.cancelledJobs;
      setText(row._cancelled, cancelled > 0 ? ' · ' + formatInteger(cancelled) + ' cancelled' : '');
    }, 'No batches.');
  }

  function stateBadgeClass(value) {
    const name = text(value).toLowerCase();
    if (['ready', 'idle', 'busy', 'running', 'connected'].includes(name)) return 'badge ok';
    if (['lost', 'dead', 'gone', 'failed', 'disconnected', 'expired'].includes(name)) return 'badge bad';
    if (name) return 'badge warn';
    return 'badge';
  }

  function renderWorkers(snapshot) {
    const workers = list(snapshot.workers);
    setText($('workers-count'), formatInteger(workers.length));
    reconcile($('workers'), workers, (worker) => worker.workerId, () => {
      const row = el('tr');
      const [name, pid, status, heartbeat] = cells(row, 5);
      row._name = el('span');
      row._id = el('span', 'muted mono');
      name.append(row._name, document.createTextNode(' '), row._id);
      pid.className = 'num';
      row._state = el('span', 'badge');
      status.appendChild(row._state);
      heartbeat.className = 'num';
      return row;
    }, (row, worker) => {
      setText(row._name, worker.name || worker.workerId);
      setText(row._id, worker.name ? worker.workerId : '');
      setText(row.cells[1], isNumber(worker.pid) ? worker.pid : '–');
      setText(row._state, worker.state || 'unknown');
      if (row._state.className !== stateBadgeClass(worker.state)) row._state.className = stateBadgeClass(worker.state);
      const age = worker.secondsSinceHeartbeat;
      setText(row.cells[3], formatDuration(age) + ' ago');
      row.cells[3].classList.toggle('late', isNumber(age) && age > LATE_HEARTBEAT_SECONDS);
      setTitle(row.cells[3], isNumber(age) && age > LATE_HEARTBEAT_SECONDS
        ? 'no heartbeat for more than ' + LATE_HEARTBEAT_SECONDS + ' s' : '');
      // The running jobs listed (at most 50) that this worker holds.
      const jobs = list(snapshot.running).filter((job) => job.workerId === worker.workerId).map((job) => job.jobId);
      const key = jobs.join(',');
      if (row._jobsKey !== key) {
        row._jobsKey = key;
        const cell = row.cells[4];
        cell.replaceChildren();
        if (jobs.length === 0) cell.appendChild(el('span', 'muted', 'idle'));
        for (const id of jobs) cell.appendChild(el('span', 'job-ref', '#' + text(id)));
      }
    }, 'No workers connected.');
  }

  // A snapshot without `queues` comes from a coordinator without named queues: no panel and no Queue columns.
  function renderQueues(snapshot) {
    const known = Array.isArray(snapshot.queues);
    show($('queues-panel'), known);
    document.body.classList.toggle('without-queues', !known);
    if (!known) return;
    const queues = snapshot.queues.map(object);
    setText($('queues-count'), formatInteger(queues.length));
    reconcile($('queues'), queues, (queue) => queue.name, (queue) => {
      const row = el('tr');
      const [name, queued, latency, actions] = cells(row, 4);
      row.dataset.queue = text(queue.name);
      name.className = 'wide queue-name';
      queued.className = 'num';
      latency.className = 'num';
      row._latency = el('span', 'latency');
      latency.appendChild(row._latency);
      actions.className = 'actions';
      // Pause or Resume, as the queue is now: `tributary queues pause|resume` from the page.
      row._toggle = button('pause', 'Pause', () => {
        const resume = row._paused === true;
        const path = '/api/queues/' + encodeURIComponent(text(queue.name)) + (resume ? '/resume' : '/pause');
        act('POST', path, (resume ? 'Resume queue ' : 'Pause queue ') + text(queue.name),
          'Queue ' + text(queue.name) + (resume ? ' resumed.' : ' paused: none of its jobs is claimed until it is resumed.'),
          [row._toggle]);
      });
      actions.appendChild(row._toggle);
      return row;
    }, (row, queue) => {
      row._paused = queue.paused === true;
      const toggle = row._paused ? 'resume' : 'pause';
      if (row._toggle.className !== toggle) {
        row._toggle.className = toggle;
        setText(row._toggle, row._paused ? 'Resume' : 'Pause');
      }
      // A paused queue (`tributary queues pause`) is marked: its latency grows while none of its jobs is claimed.
      setText(row.cells[0], queue.paused === true ? queue.name + ' (paused)' : queue.name);
      setTitle(row.cells[0], queue.paused === true ? 'paused: none of its jobs is claimed until it is resumed' : '');
      setText(row.cells[1], formatInteger(queue.queued));
      const seconds = queue.latencySeconds;
      let level = 'latency';
      let note = '';
      if (isNumber(seconds) && seconds > STUCK_QUEUE_SECONDS) {
        level = 'latency stuck';
        note = ' (more than ' + formatDuration(STUCK_QUEUE_SECONDS) + ')';
      } else if (isNumber(seconds) && seconds > SLOW_QUEUE_SECONDS) {
        level = 'latency slow';
        note = ' (more than ' + formatDuration(SLOW_QUEUE_SECONDS) + ')';
      } else if (isNumber(seconds) && seconds <= 0) {
        level = 'latency idle';
      }
      setText(row._latency, isNumber(seconds) && seconds <= 0 ? '0 s' : formatDuration(seconds));
      if (row._latency.className !== level) row._latency.className = level;
      setTitle(row._latency, isNumber(seconds) ? 'the job at the head of the queue has waited ' + formatDuration(seconds) + note
        : '');
    }, 'No queued jobs.');
  }

  // A job's queue in a Queue column ("–" from a coordinator without named queues); a long name is cut short on
  // the page, so it is the cell's title too.
  function setQueue(cell, job) {
    const known = job.queue !== undefined && job.queue !== null && job.queue !== '';
    setText(cell, known ? job.queue : '–');
    setTitle(cell, known ? 'queue ' + text(job.queue) : '');
  }

  function renderRunning(snapshot) {
    const running = list(snapshot.running);
    setText($('running-count'), countText(running.length, object(snapshot.jobs).running));
    const workerNames = new Map();
    for (const worker of list(snapshot.workers)) workerNames.set(text(worker.workerId), text(worker.name || worker.workerId));
    reconcile($('running-jobs'), running, (job) => job.jobId, (job) => {
      const row = el('tr');
      row.dataset.jobId = text(job.jobId);
      const [id, , queue, , , attempt, progress, actions] = cells(row, 8);
      id.className = 'id';
      queue.className = 'queue-col';
      attempt.className = 'num';
      progress.className = 'wide';
      row._bar = progressBar('running');
      progress.appendChild(row._bar.root);
      actions.className = 'actions';
      const cancel = button('cancel', 'Cancel', () => cancelJob(job.jobId, [cancel]));
      actions.appendChild(cancel);
      return row;
    }, (row, job) => {
      setText(row.cells[0], job.jobId);
      setText(row.cells[1], job.kind);
      setQueue(row.cells[2], job);
      setText(row.cells[3], job.batch);
      setText(row.cells[4], workerNames.get(text(job.workerId)) || job.workerId);
      setTitle(row.cells[4], job.workerId ? 'worker ' + text(job.workerId) : '');
      setText(row.cells[5], text(job.attemptsCounted) + ' / ' + text(job.maxAttempts));
      setTitle(row.cells[5], job.attempt === job.attemptsCounted ? '' : 'attempt #' + text(job.attempt));
      const known = isNumber(job.total) && job.total > 0;
      setWidth(row._bar.fill, known ? job.done / job.total : 0);
      setText(row._bar.figures, known ? progressText(job.done, job.total, 'rows') : formatInteger(job.done) + ' rows');
    }, 'No job is running.');
  }

  function lastError(job) {
    const errors = list(job.errors);
    return errors.length > 0 ? object(errors[errors.length - 1]) : null;
  }

  function renderDead(snapshot) {
    const dead = list(snapshot.dead);
    setText($('dead-count'), countText(dead.length, object(snapshot.jobs).dead));
    reconcile($('dead-jobs'), dead, (job) => job.jobId, (job) => {
      const row = el('tr');
      row.dataset.jobId = text(job.jobId);
      const [id, , queue, , attempts, died, error, actions] = cells(row, 8);
      id.className = 'id';
      queue.className = 'queue-col';
      attempts.className = 'num';
      error.className = 'wide error-cell';

      const details = el('details', 'history');
      const summary = el('summary');
      row._last = el('span', 'last-error');
      row._historyLabel = el('span', 'history-label');
      summary.append(row._last, row._historyLabel);
      row._history = el('ol', 'errors');
      details.append(summary, row._history);
      error.appendChild(details);
      row._details = details;

      actions.className = 'actions';
      const normal = el('span', 'normal');
      const confirm = el('span', 'confirm');
      confirm.hidden = true;
      const label = 'job ' + text(job.jobId);
      const retry = button('retry', 'Retry', () => act('POST', jobPath(job.jobId) + '/retry', 'Retry ' + label,
        'Job ' + text(job.jobId) + ' is queued again.', [retry, remove]));
      const remove = button('delete', 'Delete', () => {
        normal.hidden = true;
        confirm.hidden = false;
        yes.focus();
      });
      const yes = button('confirm-yes', 'Delete', async () => {
        normal.hidden = false;
        confirm.hidden = true;
        await act('DELETE', jobPath(job.jobId), 'Delete ' + label, 'Job ' + text(job.jobId) + ' deleted.', [retry, remove]);
      });
      const no = button('secondary confirm-no', 'Keep', () => {
        normal.hidden = false;
        confirm.hidden = true;
      });
      normal.append(retry, remove);
      confirm.append(el('span', 'confirm-text', 'Delete ' + label + '?'), yes, no);
      actions.append(normal, confirm);
      return row;
    }, (row, job) => {
      setText(row.cells[0], job.jobId);
      setText(row.cells[1], job.kind);
      setQueue(row.cells[2], job);
      setText(row.cells[3], job.batch);
      setText(row.cells[4], text(job.attemptsCounted) + ' / ' + text(job.maxAttempts));
      setText(row.cells[5], formatAgo(job.updatedAt, snapshot.time));
      setTitle(row.cells[5], formatDateTime(job.updatedAt));

      const errors = list(job.errors);
      const last = lastError(job);
      setText(row._last, last ? text(last.message) : 'no error recorded');
      setText(row._historyLabel, 'error history: ' + errors.length + (errors.length === 1 ? ' attempt' : ' attempts'));
      const key = JSON.stringify(errors);
      if (row._historyKey !== key) {
        row._historyKey = key;
        const items = errors.map((entry) => {
          const item = el('li');
          const failure = object(entry);
          const when = 'attempt ' + text(failure.attempt) + ' · ' + formatDateTime(failure.at);
          item.appendChild(el('span', 'when', when));
          item.appendChild(el('span', 'error-text', failure.message));
          return item;
        });
        row._history.replaceChildren(...items);
      }
    }, 'No dead jobs.');
  }

  function renderQueued(snapshot) {
    const queued = list(snapshot.queued);
    setText($('queued-count'), countText(queued.length, object(snapshot.jobs).queued));
    reconcile($('queued-jobs'), queued, (job) => job.jobId, (job) => {
      const row = el('tr');
      row.dataset.jobId = text(job.jobId);
      const [id, , queue, , , , actions] = cells(row, 7);
      id.className = 'id';
      queue.className = 'queue-col';
      actions.className = 'actions';
      const cancel = button('cancel', 'Cancel', () => cancelJob(job.jobId, [cancel]));
      actions.appendChild(cancel);
      return row;
    }, (row, job) => {
      setText(row.cells[0], job.jobId);
      setText(row.cells[1], job.kind);
      setQueue(row.cells[2], job);
      setText(row.cells[3], job.batch);
      setText(row.cells[4], formatAgo(job.createdAt, snapshot.time));
      setTitle(row.cells[4], formatDateTime(job.createdAt));
      // A job's runAt is 0 when it may run at once.
      const runAt = isNumber(job.runAt) && job.runAt > 0 ? job.runAt : null;
      const waiting = runAt !== null && isNumber(snapshot.time) && runAt > snapshot.time;
      setText(row.cells[5], waiting ? 'retry in ' + formatDuration(runAt - snapshot.time) : 'now');
      setTitle(row.cells[5], runAt !== null ? formatDateTime(runAt) : '');
    }, 'No job is queued.', QUEUED_SHOWN);
  }

  function renderSubscribers(snapshot) {
    const subscribers = list(snapshot.subscribers);
    const feed = object(snapshot.feed);
    setText($('subscribers-count'), formatInteger(subscribers.length));
    reconcile($('subscribers'), subscribers, (subscriber) => subscriber.name, () => {
      const row = el('tr');
      cells(row, 3);
      row.cells[1].className = 'num';
      row.cells[2].className = 'wide';
      row._lag = el('span');
      row._badge = el('span', 'badge');
      row.cells[2].append(row._lag, document.createTextNode(' '), row._badge);
      return row;
    }, (row, subscriber) => {
      setText(row.cells[0], subscriber.name);
      setText(row.cells[1], formatInteger(subscriber.position));
      const lag = isNumber(feed.lastSeq) && isNumber(subscriber.position)
        ? Math.max(0, feed.lastSeq - subscriber.position) : null;
      setText(row._lag, formatInteger(lag) + (lag === 1 ? ' change' : ' changes'));
      const position = subscriber.position;
      const behind = isNumber(feed.oldestSeq) && isNumber(position) && position + 1 < feed.oldestSeq;
      let badge = '';
      let badgeClass = 'badge';
      if (behind) {
        badge = 'behind the oldest kept change';
        badgeClass = 'badge bad';
      } else if (lag === 0) {
        badge = 'caught up';
        badgeClass = 'badge ok';
      }
      setText(row._badge, badge);
      show(row._badge, badge !== '');
      if (row._badge.className !== badgeClass) row._badge.className = badgeClass;
      row._lag.classList.toggle('lagging', isNumber(lag) && lag > 0 && !behind);
    }, 'No durable subscribers.');
  }

  // ---------------------------------------------------------------------------------------------- snapshots

  function render(snapshot) {
    // The queues panel first: whether it is shown sets the chart's width.
    const parts = [renderHeader, renderCards, renderQueues, renderBatches, renderWorkers, renderRunning, renderDead,
      renderQueued, renderSubscribers, (value) => renderChart(list(value.rates))];
    for (const part of parts) {
      try {
        part(snapshot);
      } catch (error) {
        reportOnce('The dashboard could not show part of the snapshot (' + part.name + '): ' + error.message);
      }
    }
  }

  function apply(snapshot, fromStream) {
    if (!snapshot || typeof snapshot !== 'object') return;
    // A fetched snapshot can arrive after a newer one from the stream; the stream's own are always taken (so a
    // coordinator whose clock stepped back is still followed).
    const current = state.snapshot;
    if (!fromStream && current && isNumber(current.time) && isNumber(snapshot.time) && snapshot.time < current.time) {
      return;
    }
    state.snapshot = snapshot;
    state.lastSnapshotAt = Date.now();
    if (fromStream) setConnection('live');
    render(snapshot);
  }

  // Fetches one snapshot: at the start, after an action, and to learn why the event stream was refused.
  async function refresh() {
    let response;
    try {
      const headers = authorization({ Accept: 'application/json' });
      response = await fetch('/api/dashboard', { cache: 'no-store', headers, credentials: 'same-origin' });
    } catch (error) {
      return; // The event stream reports the connection's state.
    }
    if (response.status === 401) {
      if (!$('token-form').hidden) return;
      const refused = Boolean(getToken());
      if (refused) setToken(null);
      askForToken(refused
        ? 'The coordinator refused the token. The dashboard needs another one:'
        : 'This coordinator needs a token to show the dashboard:', () => {
        connect();
        refresh();
      });
      return;
    }
    if (!response.ok) {
      const problem = object(object(await response.json().catch(() => null)).error);
      reportOnce('The coordinator refused the dashboard: ' + (problem.message ? text(problem.message)
        : 'HTTP ' + response.status));
      return;
    }
    try {
      apply(await response.json(), false);
    } catch (error) {
      reportOnce('The coordinator sent a snapshot that is not JSON: ' + error.message);
    }
  }

  // ---------------------------------------------------------------------------------------------- connection

  function setConnection(name, detail) {
    const labels = {
      connecting: 'connecting…',
      live: 'live',
      reconnecting: 'reconnecting…',
      stalled: 'stalled',
      down: 'disconnected',
    };
    const label = labels[name] + (detail ? ': ' + detail : '');
    const node = $('connection');
    setText(node, label);
    if (state.connection !== name) {
      node.className = 'connection ' + name;
      state.connection = name;
    }
    if (name === 'live') state.everLive = true;
  }

  function onStreamMessage(event) {
    let snapshot;
    try {
      snapshot = JSON.parse(event.data);
    } catch (error) {
      reportOnce('The coordinator sent a snapshot that is not JSON: ' + error.message);
      return;
    }
    apply(snapshot, true);
  }

  // `event: failure`: the coordinator could not make a snapshot this time ({"error": {"code", "message"}}).
  function onStreamFailure(event) {
    let problem = {};
    try {
      problem = object(object(JSON.parse(event.data)).error);
    } catch (error) {
      problem = { message: text(event.data) };
    }
    const reason = problem.message || problem.code || 'no reason given';
    reportOnce('The coordinator could not make a snapshot: ' + text(reason));
  }

  function connect() {
    if (state.source) state.source.close();
    clearTimeout(state.reconnectTimer);
    state.reconnectTimer = null;
    setConnection(state.everLive ? 'reconnecting' : 'connecting');
    // An EventSource cannot send headers: the coordinator takes the token from the query here.
    const token = getToken();
    const source = new EventSource('/api/events' + (token ? '?token=' + encodeURIComponent(token) : ''));
    state.source = source;
    source.addEventListener('snapshot', onStreamMessage);
    source.addEventListener('message', onStreamMessage);
    source.addEventListener('failure', onStreamFailure);
    source.addEventListener('open', () => {
      state.reconnectDelay = 1000;
    });
    source.addEventListener('error', () => {
      if (state.source !== source) return;
      if (source.readyState === EventSource.CLOSED) {
        // The browser gave up (an HTTP error, a wrong content type): try again later, waiting longer each time.
        const delay = state.reconnectDelay;
        state.reconnectDelay = Math.min(30000, delay * 2);
        state.reconnectAt = Date.now() + delay;
        state.reconnectTimer = setTimeout(connect, delay);
        setConnection('down', 'retrying in ' + Math.ceil(delay / 1000) + ' s');
        refresh(); // says why, when it can: a 401 asks for a token
      } else {
        setConnection('reconnecting');
      }
    });
  }

  // Says so when the stream is open but no snapshot came for a while, and counts down to a reconnection.
  function watch() {
    const age = Date.now() - state.lastSnapshotAt;
    if ((state.connection === 'live' || state.connection === 'stalled') && age > STALLED_AFTER_MS) {
      setConnection('stalled', 'no update for ' + Math.round(age / 1000) + ' s');
    } else if (state.connection === 'down' && state.reconnectTimer) {
      const seconds = Math.max(0, Math.ceil((state.reconnectAt - Date.now()) / 1000));
      setConnection('down', 'retrying in ' + seconds + ' s');
    }
  }

  function start() {
    takeTokenFromAddress();
    setUpTokenForm();
    setUpChart();
    renderChart([]);
    setUpShowAll($('queued-jobs'), $('queued-count'));
    if (typeof window.EventSource === 'function') {
      connect();
    } else {
      setConnection('down', 'this browser has no EventSource; polling');
      setInterval(refresh, 2000);
    }
    refresh();
    setInterval(watch, 1000);
  }

  start();
})();
