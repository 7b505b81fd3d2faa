// adlink's report dashboard: the last 30 days of /v2/report for the
// account whose report token the reader types in, and its clicks one by
// one from /v2/clicks, both in the days of the reader's time zone; for an
// advertiser, its daily budget of today from /v2/budget. The token lives in this
// tab's sessionStorage and goes out only in the Authorization header,
// never in a URL. No framework; the chart is drawn as SVG. The page runs
// under a CSP without inline script or style: styling is by class only.
(() => {
  'use strict';
  const KEY = 'adlink.reportToken';
  const DAYS = 30;
  const TABLE_GROUPS = 'site_id,ad,yk_tag';
  const MAX_ROWS = 200;
  // The clicks table shows CLICK_PAGE clicks at a time; the CSV download
  // asks for CSV_PAGE a request, the most /v2/clicks gives.
  const CLICK_PAGE = 50;
  const CSV_PAGE = 10000;
  const SVG = 'http://www.w3.org/2000/svg';
  const $ = (id) => document.getElementById(id);

  // The reader's locale formats every number and date.
  const count = new Intl.NumberFormat();
  // The words are English, so English rules pick their plural form; the
  // number beside them stays in the reader's locale.
  const english = new Intl.PluralRules('en');
  const counted = (n, one, other) => count.format(n) + ' ' + (english.select(n) === 'one' ? one : other);
  // sentence is an error's message, written for a client, as a sentence
  // on the page.
  const sentence = (s) => s.charAt(0).toUpperCase() + s.slice(1) + (/[.!?]$/.test(s) ? '' : '.');
  const percent = new Intl.NumberFormat(undefined, { style: 'percent', minimumFractionDigits: 1, maximumFractionDigits: 2 });
  const wholePercent = new Intl.NumberFormat(undefined, { style: 'percent', maximumFractionDigits: 0 });
  // Days are dates ('2026-11-28'), written as midnight UTC of the date.
  const dayLabel = new Intl.DateTimeFormat(undefined, { day: 'numeric', month: 'short', timeZone: 'UTC' });
  const longDay = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeZone: 'UTC' });
  const clock = new Intl.DateTimeFormat(undefined, { timeStyle: 'short' });
  const money = (micros, currency) => {
    try {
      return new Intl.NumberFormat(undefined, { style: 'currency', currency }).format(micros / 1e6);
    } catch (e) {
      return (micros / 1e6).toFixed(2) + ' ' + currency;
    }
  };
  // Spend comes as decimal strings; sums are kept in millionths, exact.
  const micros = (s) => {
    const m = /^(-?)(\d+)(?:\.(\d{1,6}))?$/.exec(String(s));
    if (!m) return 0;
    const v = Number(m[2]) * 1e6 + Number(((m[3] || '') + '000000').slice(0, 6));
    return m[1] ? -v : v;
  };

  const iso = (d) => d.toISOString().slice(0, 10);
  // zone is the time zone of the days asked for (the tz of every request)
  // and of the clicks' times: the reader's, or UTC when the reader's is
  // not whole hours from UTC (adlink keeps its figures by the hour), or
  // adlink refused it. stamp writes a click's time, to the second, in it.
  let zone = 'UTC';
  let zoneRefused = false;
  let stamp = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium', timeZone: 'UTC' });
  let days = [];
  let from = '';
  let to = '';
  let generation = 0;
  // retryTimer loads the report again once a store that did not answer
  // asked to be asked again; retries counts the times it did in a row,
  // each wait twice the last (up to MAX_WAIT s), so a tab left open on an
  // outage asks less and less often.
  let retryTimer = 0;
  let retries = 0;
  const MAX_WAIT = 600;
  // The clicks table: the cursor of its next page ('' on the last) and
  // how many it shows. clickGen tells a page asked for before the filter
  // changed from the current one's.
  let clicksNext = '';
  let clicksShown = 0;
  let clickGen = 0;

  const token = () => sessionStorage.getItem(KEY) || '';
  const state = (s) => { document.body.dataset.state = s; };

  // readerZone is the reader's time zone when its offset from UTC is whole
  // hours from a day before the range to a day after today, else ''.
  function readerZone() {
    try {
      const tz = Intl.DateTimeFormat().resolvedOptions().timeZone;
      if (!tz) return '';
      const offset = new Intl.DateTimeFormat('en-US', { timeZone: tz, timeZoneName: 'longOffset' });
      const now = Date.now();
      for (let t = now - (DAYS + 1) * 864e5; t <= now + 864e5; t += 36e5) {
        // "GMT", "GMT+01:00", "GMT+05:30", "GMT+00:19:32".
        const name = offset.formatToParts(t).find((p) => p.type === 'timeZoneName');
        if (!name || !/^GMT([+-]\d\d:00)?$/.test(name.value)) return '';
      }
      return tz;
    } catch (e) {
      return '';
    }
  }

  // setZone picks the zone of the days, and says it on the page.
  function setZone() {
    const reader = readerZone();
    zone = reader && !zoneRefused ? reader : 'UTC';
    stamp = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium', timeZone: zone });
    let note = 'Days are in ' + zone + ', and so are the clicks\' times.';
    const own = (() => { try { return Intl.DateTimeFormat().resolvedOptions().timeZone || ''; } catch (e) { return ''; } })();
    if (zone === 'UTC' && own && own !== 'UTC' && own !== 'Etc/UTC') {
      note += ' Not this browser\'s time zone, ' + own + (zoneRefused ? ', which adlink does not know.' :
        ', which is not a whole number of hours from UTC: adlink keeps its figures by the hour.');
    }
    $('zone-note').textContent = note;
  }

  function range() {
    // Today's date in the zone.
    const today = {};
    for (const p of new Intl.DateTimeFormat('en-US', { timeZone: zone, year: 'numeric', month: 'numeric', day: 'numeric' })
      .formatToParts(new Date(Date.now()))) today[p.type] = Number(p.value);
    days = [];
    for (let i = DAYS - 1; i >= 0; i--) {
      days.push(iso(new Date(Date.UTC(today.year, today.month - 1, today.day - i))));
    }
    from = days[0];
    to = days[DAYS - 1];
    $('range').textContent = longDay.formatRange(new Date(from), new Date(to)) + ' (' + zone + ')';
  }

  // request asks /v2/report (or path) with the token in its header; it
  // throws {status: 0, message} when adlink cannot be reached.
  async function request(params, path = 'v2/report') {
    try {
      return await fetch(path + '?' + new URLSearchParams(Object.assign({ from, to, tz: zone }, params)), {
        headers: { Authorization: 'Bearer ' + token() },
        cache: 'no-store',
        credentials: 'omit',
        referrerPolicy: 'no-referrer',
      });
    } catch (e) {
      throw { status: 0, message: 'adlink could not be reached. Check your connection and try again.' };
    }
  }

  // report fetches one JSON report; it throws {status, message}.
  async function report(groupBy) {
    const res = await request({ group_by: groupBy, format: 'json' });
    if (!res.ok) throw await failure(res);
    return res.json();
  }

  // failure is a refused answer as {status, code, param, message,
  // retryAfter}:
  // the seconds the error's retry_after asks to wait before asking again
  // (Retry-After's, from an answer that is not adlink's error), 0 for
  // none.
  async function failure(res) {
    let message = 'adlink answered ' + res.status + '.';
    let code = '';
    let param = '';
    let after = Number(res.headers.get('Retry-After'));
    try {
      const e = (await res.json()).error;
      if (e && e.message) message = sentence(e.message);
      if (e && e.code) code = e.code;
      if (e && e.param) param = e.param;
      if (e && e.retry_after) after = Number(e.retry_after);
    } catch (e) {
      // Not JSON: the status says enough.
    }
    return { status: res.status, code, param, message, retryAfter: after > 0 ? Math.min(Math.ceil(after), MAX_WAIT) : 0 };
  }

  function show(signedIn) {
    $('signin').hidden = signedIn;
    $('dash').hidden = !signedIn;
    $('signout').hidden = !signedIn;
    $('account').hidden = !signedIn;
  }

  async function load() {
    const gen = ++generation;
    clearTimeout(retryTimer);
    setZone();
    range();
    show(true);
    state('loading');
    $('neterror').hidden = true;
    $('status').textContent = 'Loading…';
    let byDay, table, clicks;
    try {
      // A table over the rows a report may hold (a large partner's 30
      // days by site, ad and yk_tag) is refused alone: the chart and the
      // clicks are shown all the same.
      const tableOrTooLarge = report(TABLE_GROUPS).catch((e) => {
        if (e.status === 400 && e.param === 'group_by') return { rows: [], tooLarge: e.message };
        throw e;
      });
      // By context too: the CTR is of the ads in pages, as a search
      // answer's clicks have no impressions (but those a page beacons).
      [byDay, table, clicks] = await Promise.all([report('day,context'), tableOrTooLarge, clicksPage('')]);
    } catch (e) {
      if (gen !== generation) return;
      if (e.status === 401) return refuse();
      // A zone adlink does not know (its zone data older than the
      // browser's): the days are UTC's.
      if (e.status === 400 && e.param === 'tz' && zone !== 'UTC') {
        zoneRefused = true;
        return load();
      }
      return unavailable(e);
    }
    if (gen !== generation) return;
    retries = 0;
    showClicks(clicks, false);
    render(byDay, table);
    // A partner has no budget: only an advertiser's page asks, once the
    // report is drawn, so that a slow /v2/budget holds none of it back.
    if (byDay.account && byDay.account.kind === 'advertiser') loadBudget(gen);
  }

  // loadBudget writes the line of today's budget once /v2/budget
  // answers, unless the page moved on; a 401 signs out as the report's.
  async function loadBudget(gen) {
    let b;
    try {
      b = await budget();
    } catch (e) {
      if (gen === generation && e.status === 401) refuse();
      return;
    }
    if (gen === generation) showBudget(b);
  }

  // budget asks /v2/budget for the advertiser's budget of today; it
  // throws as report does on a 401, and gives null for any other failure:
  // the report is shown without the line.
  async function budget() {
    let res;
    try {
      res = await fetch('v2/budget?format=json', {
        headers: { Authorization: 'Bearer ' + token() },
        cache: 'no-store',
        credentials: 'omit',
        referrerPolicy: 'no-referrer',
      });
    } catch (e) {
      return null;
    }
    if (res.status === 401) throw await failure(res);
    if (!res.ok) return null;
    try {
      return await res.json();
    } catch (e) {
      return null;
    }
  }

  // showBudget writes the line of today's budget, b from /v2/budget, in
  // the budget's own time zone; none without b.
  function showBudget(b) {
    const line = $('budget');
    line.hidden = !b;
    line.textContent = '';
    delete line.dataset.status;
    if (!b) return;
    line.dataset.status = b.status;
    if (b.status === 'no_budget' || !b.daily_budget) {
      line.textContent = 'No daily budget: your ads run without a daily limit.';
      return;
    }
    const spent = micros(b.spent);
    const daily = micros(b.daily_budget);
    const of = 'Today\'s budget: ' + money(spent, b.currency) + ' of ' + money(daily, b.currency) + ' spent';
    const midnight = 'midnight ' + b.timezone + '.';
    if (b.status === 'spent') {
      line.textContent = of + ': ads are paused until ' + midnight;
    } else {
      // Floored, so that a budget not yet spent never reads 100%.
      const share = daily > 0 ? Math.floor(spent * 100 / daily) / 100 : 0;
      line.textContent = of + ' (' + wholePercent.format(share) + '). Ads run until ' + midnight;
    }
  }

  // unavailable says why the report is not shown and what comes next, and
  // offers no CSV of a report it does not have: a server that asks to be
  // asked again later (its report store is down) is, by itself.
  function unavailable(e) {
    $('status').textContent = '';
    $('csv').hidden = true;
    $('clicks-csv').hidden = true;
    let text = e.message;
    let s = 'error';
    if (e.status === 0) {
      s = 'offline';
    } else if (e.retryAfter) {
      s = 'unavailable';
      const wait = Math.min(e.retryAfter * 2 ** Math.min(retries, 10), MAX_WAIT);
      retries++;
      text = (e.code === 'reports_unavailable' ? 'Reports are unavailable for now: adlink cannot read them at the moment.' :
        e.message) + ' Trying again in ' + count.format(wait) + ' s.';
      retryTimer = setTimeout(load, wait * 1000);
    } else {
      text += ' If trying again does not help, send this message to your adlink contact.';
    }
    $('neterror-text').textContent = text;
    $('neterror').hidden = false;
    state(s);
  }

  function refuse() {
    sessionStorage.removeItem(KEY);
    clear();
    show(false);
    $('refused').textContent = 'adlink refused this token. Check that you copied the whole report token, or ask for a new one.';
    $('refused').hidden = false;
    $('token').select();
    state('refused');
  }

  function clear() {
    generation++;
    clearTimeout(retryTimer);
    retries = 0;
    $('chart').replaceChildren();
    $('chart-summary').textContent = '';
    $('rows').replaceChildren();
    $('click-rows').replaceChildren();
    $('clicks-caption').textContent = '';
    $('clicks-status').textContent = '';
    $('clicks-more').hidden = true;
    clicksNext = '';
    clicksShown = 0;
    $('account').replaceChildren();
    showBudget(null);
    for (const k of ['impressions', 'clicks', 'billable', 'ctr', 'spend']) $('k-' + k).textContent = '–';
    $('status').textContent = '';
    $('neterror').hidden = true;
  }

  function render(byDay, table) {
    const a = byDay.account || {};
    const who = $('account');
    who.replaceChildren((a.kind === 'advertiser' ? 'Advertiser ' : 'Partner '), el('b', a.id || ''));

    // Per day, all currencies' counts together; spend by currency.
    const perDay = new Map(days.map((d) => [d, { imp: 0, clicks: 0, pageImp: 0, pageClicks: 0, billable: 0, spend: new Map() }]));
    const total = { imp: 0, clicks: 0, pageImp: 0, pageClicks: 0, billable: 0, spend: new Map() };
    for (const r of byDay.rows || []) {
      const d = perDay.get(r.day);
      for (const t of d ? [d, total] : [total]) {
        t.imp += r.impressions || 0;
        t.clicks += r.clicks || 0;
        if (r.context !== 'search') {
          t.pageImp += r.impressions || 0;
          t.pageClicks += r.clicks || 0;
        }
        t.billable += r.billable_clicks || 0;
        t.spend.set(r.currency, (t.spend.get(r.currency) || 0) + micros(r.spend));
      }
    }
    // The chart plots the spend of the currency most was spent in.
    let currency = '';
    for (const [c, v] of total.spend) if (!currency || v > total.spend.get(currency)) currency = c;

    $('k-impressions').textContent = count.format(total.imp);
    $('k-clicks').textContent = count.format(total.clicks);
    $('k-billable').textContent = count.format(total.billable);
    $('k-ctr').textContent = total.pageImp ? percent.format(total.pageClicks / total.pageImp) : '–';
    // Each currency spent in on a line of its own; none spent: nothing in
    // the main one.
    const spent = [...total.spend].filter(([, v]) => v !== 0);
    if (!spent.length && currency) spent.push([currency, 0]);
    $('k-spend').replaceChildren(...(spent.length ? spent.map(([c, v]) => el('span', money(v, c))) : ['–']));
    $('k-spend').classList.toggle('multi', spent.length > 1);
    $('spend-legend').textContent = currency ? 'Spend (' + currency + ')' : 'Spend';

    const empty = total.imp === 0 && total.clicks === 0;
    $('chart-empty').hidden = !empty;
    $('chart').replaceChildren(empty ? '' : chart(perDay, currency, total));
    $('chart-summary').textContent = empty ? '' : chartSummary(perDay, currency);
    $('chart').scrollLeft = $('chart').scrollWidth; // a narrow screen scrolls it: today in view
    rows(table.rows || [], table.tooLarge);
    $('csv').hidden = false;
    $('clicks-csv').hidden = false;
    $('clicks-csv').disabled = total.clicks === 0;
    $('status').textContent = 'Updated ' + clock.format(new Date());
    state(empty ? 'empty' : 'ready');
  }

  function el(tag, text, cls) {
    const e = document.createElement(tag);
    if (text !== undefined) e.textContent = text;
    if (cls) e.className = cls;
    return e;
  }

  function svg(tag, attrs, parent) {
    const e = document.createElementNS(SVG, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }

  // nice is an axis maximum above max that splits in four round steps.
  function nice(max, whole) {
    if (!(max > 0)) return whole ? 4 : 1;
    const raw = max / 4;
    const mag = Math.pow(10, Math.floor(Math.log10(raw)));
    let step = [1, 2, 2.5, 5, 10].map((f) => f * mag).find((s) => s >= raw);
    if (whole) step = Math.max(1, Math.ceil(step));
    return step * 4;
  }

  // dayFigures is what a day of the chart shows, in words: its bar's
  // tooltip, and its part of the summary a screen reader reads.
  function dayFigures(d, v, currency) {
    return dayLabel.format(new Date(d)) + ': ' + counted(v.clicks, 'click', 'clicks') + ', ' +
      count.format(v.billable) + ' billable, ' + counted(v.imp, 'impression', 'impressions') +
      (currency ? ', ' + money(v.spend.get(currency) || 0, currency) + ' spend' : '');
  }

  // chartSummary is the chart's figures day by day, for those who cannot
  // see it: the days with impressions or clicks, and how many had none.
  function chartSummary(perDay, currency) {
    const busy = days.filter((d) => perDay.get(d).imp || perDay.get(d).clicks);
    const quiet = days.length - busy.length;
    return 'By day: ' + busy.map((d) => dayFigures(d, perDay.get(d), currency)).join('; ') +
      (quiet ? '; no impressions or clicks on the other ' + counted(quiet, 'day', 'days') + '.' : '.');
  }

  function chart(perDay, currency, total) {
    const W = 960, H = 280, L = 48, R = 72, T = 14, B = 28;
    const pw = W - L - R, ph = H - T - B, col = pw / days.length;
    let maxC = 0, maxS = 0;
    for (const v of perDay.values()) {
      maxC = Math.max(maxC, v.clicks);
      maxS = Math.max(maxS, v.spend.get(currency) || 0);
    }
    const topC = nice(maxC, true), topS = nice(maxS / 1e6) * 1e6;
    const yC = (v) => T + ph - (v / topC) * ph;
    const yS = (v) => T + ph - (v / topS) * ph;
    // Its name carries the totals and the range. Each day's figures are in
    // the summary after it alone: as its description too, or as its bars'
    // tooltips, a screen reader reading the page in order would say them
    // again.
    const root = svg('svg', { viewBox: '0 0 ' + W + ' ' + H, role: 'img',
      'aria-label': 'Clicks, billable clicks and spend per day, ' + $('range').textContent + ': ' +
        counted(total.clicks, 'click', 'clicks') + ', ' + count.format(total.billable) + ' billable, ' +
        counted(total.imp, 'impression', 'impressions') +
        (currency ? ', ' + money(total.spend.get(currency) || 0, currency) + ' spend' : '') + ' in total' });
    // What it draws is for the eye: its labels and each day's tooltip are
    // no text of their own to a screen reader, which hears the name above.
    const plot = svg('g', { 'aria-hidden': 'true' }, root);
    for (let i = 0; i <= 4; i++) {
      const y = T + ph - (i / 4) * ph;
      svg('line', { x1: L, x2: W - R, y1: y, y2: y, class: 'grid' }, plot);
      svg('text', { x: L - 8, y: y + 4, 'text-anchor': 'end' }, plot).textContent = count.format(topC * i / 4);
      if (currency) svg('text', { x: W - R + 8, y: y + 4 }, plot).textContent = money(topS * i / 4, currency);
    }
    const bw = Math.max(2, col * 0.34);
    const every = Math.ceil(days.length / 7);
    const line = [];
    days.forEach((d, i) => {
      const v = perDay.get(d);
      const x = L + i * col;
      const g = svg('g', { class: 'day' }, plot);
      const spend = v.spend.get(currency) || 0;
      svg('title', {}, g).textContent = dayFigures(d, v, currency);
      svg('rect', { x, y: T, width: col, height: ph, class: 'hit' }, g);
      svg('rect', { x: x + col / 2 - bw, y: yC(v.clicks), width: bw, height: T + ph - yC(v.clicks), rx: 1.5, class: 'c' }, g);
      svg('rect', { x: x + col / 2, y: yC(v.billable), width: bw, height: T + ph - yC(v.billable), rx: 1.5, class: 'b' }, g);
      if (currency) line.push([x + col / 2, yS(spend)]);
      if ((days.length - 1 - i) % every === 0) {
        svg('text', { x: x + col / 2, y: H - 8, 'text-anchor': 'middle' }, plot).textContent = dayLabel.format(new Date(d));
      }
    });
    if (line.length) {
      svg('path', { d: 'M' + line.map((p) => p[0].toFixed(1) + ' ' + p[1].toFixed(1)).join('L'), class: 's' }, plot);
      for (const [x, y] of line) svg('circle', { cx: x, cy: y, r: 2.5, class: 'dot' }, plot);
    }
    return root;
  }

  // rows fills the table with list; tooLarge, when set, is why adlink
  // refused the table's report, which the note says instead.
  function rows(list, tooLarge) {
    list = list.slice().sort((a, b) => (b.clicks - a.clicks) || (micros(b.spend) - micros(a.spend)) ||
      (b.impressions - a.impressions));
    const body = $('rows');
    body.replaceChildren(...list.slice(0, MAX_ROWS).map((r) => {
      const tr = el('tr');
      for (const k of ['site_id', 'ad', 'yk_tag']) tr.append(r[k] ? el('td', r[k]) : el('td', '—', 'none'));
      tr.append(
        el('td', count.format(r.impressions || 0), 'n'),
        el('td', count.format(r.clicks || 0), 'n'),
        el('td', count.format(r.billable_clicks || 0), 'n'),
        el('td', typeof r.ctr === 'number' ? percent.format(r.ctr) : '–', 'n'),
        el('td', money(micros(r.spend), r.currency), 'n'));
      return tr;
    }));
    $('table-empty').hidden = list.length > 0 || Boolean(tooLarge);
    $('table').hidden = list.length === 0;
    $('csv').disabled = list.length === 0;
    $('table-note').hidden = list.length <= MAX_ROWS && !tooLarge;
    $('table-note').textContent = tooLarge ? 'The table by site, ad and yk_tag is not shown: it is too large for 30 days. ' + tooLarge :
      'Showing the ' + count.format(MAX_ROWS) + ' rows with most clicks of ' + count.format(list.length) + '; the CSV has them all.';
  }

  // csv downloads the table's report as CSV: fetched with the token in its
  // header and saved from a blob, so the token never goes into a URL.
  async function csv() {
    const button = $('csv');
    button.disabled = true;
    try {
      const res = await request({ group_by: TABLE_GROUPS, format: 'csv' });
      if (res.status === 401) return refuse();
      if (!res.ok) throw await failure(res);
      const blob = await res.blob();
      const name = /filename="([^"]+)"/.exec(res.headers.get('Content-Disposition') || '');
      const a = el('a');
      a.href = URL.createObjectURL(blob);
      a.download = name ? name[1] : 'adlink-report-' + from + '-' + to + '.csv';
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(a.href), 60000);
    } catch (e) {
      $('neterror-text').textContent = e.message;
      $('neterror').hidden = false;
    } finally {
      button.disabled = false;
    }
  }

  // clicksPage asks /v2/clicks for a page of the table, the filter's
  // clicks of the range newest first, from the cursor after ('' for the
  // newest); it throws as report does.
  async function clicksPage(after) {
    const params = { format: 'json', limit: CLICK_PAGE, order: 'desc' };
    const billable = $('clicks-filter').value;
    if (billable) params.billable = billable;
    if (after) params.after = after;
    const res = await request(params, 'v2/clicks');
    if (!res.ok) throw await failure(res);
    return res.json();
  }

  // verdict is a click's verdict in words: billed, or why not.
  const verdict = (c) => (c.billable ? 'Billed' : 'Not billed: ' + (c.reason || 'unknown'));

  // showClicks shows a page of clicks, after the ones shown when more.
  function showClicks(page, more) {
    const list = page.clicks || [];
    const trs = list.map((c) => {
      const tr = el('tr');
      tr.dataset.id = c.id;
      tr.append(
        el('td', stamp.format(new Date(String(c.time).replace(/(\.\d{3})\d+/, '$1')))),
        c.ad ? el('td', c.ad) : el('td', '—', 'none'),
        c.site_id ? el('td', c.site_id) : el('td', '—', 'none'),
        c.criterion ? el('td', c.criterion) : el('td', '—', 'none'),
        el('td', verdict(c), c.billable ? 'billed' : 'unbilled'),
        el('td', c.bid ? money(micros(c.bid), c.currency) : '–', 'n'));
      return tr;
    });
    if (more) {
      $('click-rows').append(...trs);
      clicksShown += trs.length;
    } else {
      $('click-rows').replaceChildren(...trs);
      clicksShown = trs.length;
    }
    clicksNext = page.next || '';
    const filter = $('clicks-filter');
    const which = filter.value ? filter.options[filter.selectedIndex].textContent.toLowerCase() + ' clicks' : 'clicks';
    const since = longDay.formatRange(new Date(from), new Date(to)) + ' (' + zone + ')';
    $('clicks-caption').textContent = (which.charAt(0).toUpperCase() + which.slice(1)) + ', ' + since + ', newest first.';
    $('clicks-table').hidden = clicksShown === 0;
    $('clicks-empty').hidden = clicksShown > 0;
    $('clicks-empty').textContent = 'No ' + which + ' in these 30 days.';
    $('clicks-more').hidden = !clicksNext;
    $('clicks-status').textContent = clicksShown === 0 ? '' : 'Showing ' + counted(clicksShown, 'click', 'clicks') +
      (clicksNext ? '; more follow.' : '.');
  }

  // clicksFailed handles a refused page of the table as a refused report.
  function clicksFailed(e) {
    if (e.status === 401) return refuse();
    unavailable(e);
  }

  async function moreClicks() {
    const gen = generation;
    const cg = clickGen;
    const button = $('clicks-more');
    button.disabled = true;
    $('clicks-status').textContent = 'Loading more clicks…';
    let page;
    try {
      page = await clicksPage(clicksNext);
    } catch (e) {
      if (gen === generation && cg === clickGen) clicksFailed(e);
      return;
    } finally {
      button.disabled = false;
    }
    if (gen !== generation || cg !== clickGen) return;
    showClicks(page, true);
    // The last page hides the button that had the focus: the table takes it.
    if (button.hidden) $('clicks-table').focus();
  }

  async function filterClicks() {
    const gen = generation;
    const cg = ++clickGen;
    $('clicks-more').hidden = true;
    $('clicks-status').textContent = 'Loading clicks…';
    let page;
    try {
      page = await clicksPage('');
    } catch (e) {
      if (gen === generation && cg === clickGen) clicksFailed(e);
      return;
    }
    if (gen !== generation || cg !== clickGen) return;
    showClicks(page, false);
  }

  // clicksCsv downloads every click of the range as one CSV file, asked
  // for page by page with the token in the header, the header row kept
  // from the first page only, and saved from a blob: the token never goes
  // into a URL. A page refused with Retry-After (the limit on reports, a
  // store that does not answer) is asked for again after the wait, a few
  // times, so a long download goes on where it was.
  async function clicksCsv() {
    const gen = generation;
    const button = $('clicks-csv');
    const say = (s) => { $('clicks-status').textContent = s; };
    button.disabled = true;
    const parts = [];
    let type = 'text/csv';
    let after = '';
    let waits = 0;
    try {
      say('Downloading clicks…');
      for (;;) {
        const params = { format: 'csv', limit: CSV_PAGE };
        if (after) params.after = after;
        const res = await request(params, 'v2/clicks');
        if (gen !== generation) return;
        if (res.status === 401) return refuse();
        if (!res.ok) {
          const e = await failure(res);
          if (!e.retryAfter || waits >= 3) throw e;
          waits++;
          say(e.message + ' The download goes on in ' + count.format(e.retryAfter) + ' s.');
          await new Promise((resolve) => setTimeout(resolve, e.retryAfter * 1000));
          if (gen !== generation) return;
          continue;
        }
        type = res.headers.get('Content-Type') || type;
        const bytes = new Uint8Array(await res.arrayBuffer());
        if (gen !== generation) return;
        // Every page begins with the header row: the file has it once.
        parts.push(parts.length ? bytes.subarray(bytes.indexOf(10) + 1) : bytes);
        after = res.headers.get('X-Adlink-Next') || '';
        if (!after) break;
        say('Downloading clicks: ' + counted(parts.length, 'page', 'pages') + ' so far…');
      }
      const a = el('a');
      a.href = URL.createObjectURL(new Blob(parts, { type }));
      a.download = 'adlink-clicks-' + from + '-' + to + '.csv';
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(a.href), 60000);
      say('Clicks downloaded as ' + a.download + '.');
    } catch (e) {
      if (gen !== generation) return;
      say('');
      $('neterror-text').textContent = e.message;
      $('neterror').hidden = false;
    } finally {
      button.disabled = false;
    }
  }

  $('form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const t = $('token').value.trim();
    if (!t) return;
    // No token has other characters, and a header could not carry them.
    if (!/^[\x21-\x7e]+$/.test(t)) return refuse();
    $('refused').hidden = true;
    sessionStorage.setItem(KEY, t);
    retries = 0;
    load();
    // The form that had the focus is gone: the report's heading takes it,
    // where a keyboard or screen reader goes on from.
    $('title').focus();
  });
  $('signout').addEventListener('click', () => {
    sessionStorage.removeItem(KEY);
    clear();
    $('token').value = '';
    $('refused').hidden = true;
    show(false);
    $('token').focus();
    state('signed-out');
  });
  $('retry').addEventListener('click', () => { retries = 0; load(); });
  $('csv').addEventListener('click', csv);
  $('clicks-more').addEventListener('click', moreClicks);
  $('clicks-filter').addEventListener('change', filterClicks);
  $('clicks-csv').addEventListener('click', clicksCsv);

  if (token()) {
    load();
  } else {
    show(false);
    state('signed-out');
  }
})();
