"""The page script of a big timeline (``alarmkit.report``): markers that regain their size as lanes grow,
and a run past ``OVERVIEW_THRESHOLD`` events opening on its density map, the common kinds' data kept
out of the figure (``defer_detail``) until a zoom asks for detail.
"""

from __future__ import annotations

import plotly.graph_objects as go

from ._timeline import GL_THRESHOLD

__all__ = ["ON_ZOOM", "defer_detail"]

# A big timeline opens with small markers (its lanes are a few pixels tall) and, past
# OVERVIEW_THRESHOLD events, on a density map with only the notable events drawn. On every zoom:
# markers regain their size (kept in each trace's meta) as lanes grow, and once fewer than
# layout.meta.detail_in_view events are in view (summed from the density map) every event in and
# around the view is drawn. No journal data in this script: that comes from the figure's JSON and
# from the JSON block defer_detail fills, read with JSON.parse only.
ON_ZOOM = r"""(function () {
  var gd = document.getElementById('{plot_id}');
  var limit = (gd.layout.meta || {}).detail_in_view || 0;  // 0: not a big timeline's overview
  function axis(name, letter) { return gd._fullLayout[letter + 'axis' + name.slice(1)]; }
  // kept now: once hidden, a trace's decoded data leaves gd._fullData
  var density = gd._fullData.filter(function (t) { return t.meta && t.meta.role === 'density'; });
  // The hidden traces' data waits in a JSON block, parsed on the first zoom that asks for detail
  // (parsing ~24 MB at load cost ~0.3 s of a 1M-event first render). JSON.parse only: nothing is run.
  var block = document.getElementById('{plot_id}-detail'), full = null;
  var ARRAYS = {f8: Float64Array, f4: Float32Array, i4: Int32Array, u4: Uint32Array, i2: Int16Array,
                u2: Uint16Array, i1: Int8Array, u1: Uint8Array};
  function decode(v) {  // plotly's base64 typed array ({dtype, bdata}) as the typed array
    if (!v || typeof v.bdata !== 'string' || !ARRAYS[v.dtype]) return v;
    var s = atob(v.bdata), bytes = new Uint8Array(s.length);
    for (var k = 0; k < s.length; k++) bytes[k] = s.charCodeAt(k);
    return new ARRAYS[v.dtype](bytes.buffer);
  }
  function loadDetail() {
    if (full || !block) return;
    full = JSON.parse(block.textContent);
    block.parentNode.removeChild(block);
    Object.keys(full).forEach(function (i) {
      var f = full[i];
      f.x = decode(f.x); f.y = decode(f.y);
      gd.data[Number(i)].type = f.type;
    });
  }
  function whole(i) {  // a hidden trace's whole data, in the type it was built with (fillView may have made it SVG)
    ['x', 'y', 'hovertext', 'text'].forEach(function (k) { if (full[i][k] !== undefined) gd.data[Number(i)][k] = full[i][k]; });
    gd.data[Number(i)].type = full[i].type;
  }
  function showAll() {  // a legend click outside detail: the whole of every hidden trace, as built
    loadDetail();
    Object.keys(full || {}).forEach(whole);
  }
  // The user's legend choices (trace index -> visible), kept through zooms: a kind turned on in the
  // overview stays on, one turned off in detail stays off. Legend clicks restyle 'visible'; this
  // script's own switches use Plotly.update, which is not a restyle event.
  var chosen = {};
  gd.on('plotly_restyle', function (ev) {
    var v = ev && ev[0] && ev[0].visible;
    if (v === undefined) return;
    (ev[1] || gd.data.map(function (t, i) { return i; })).forEach(function (i, k) {
      if (gd.data[i].meta && gd.data[i].meta.detail) chosen[i] = Array.isArray(v) ? v[k] : v;
    });
  });
  // In detail, each hidden trace holds only what lies in and around the view (the view widened by its
  // own size each side, 5 lanes up and down): software WebGL drew all 1M events of a run in ~6 s, and
  // the view holds at most detail_in_view. Lines keep whole segments (3 or 5 points with their gap).
  function inView(i) {
    var f = full[i], t = gd.data[Number(i)], xr = axis(t.xaxis || 'x', 'x').range, yr = axis(t.yaxis || 'y', 'y').range;
    var w = Math.abs(xr[1] - xr[0]), x0 = Math.min(xr[0], xr[1]) - w, x1 = Math.max(xr[0], xr[1]) + w;
    var y0 = Math.min(yr[0], yr[1]) - 5, y1 = Math.max(yr[0], yr[1]) + 5;
    var step = t.meta.role === 'link' ? 5 : t.meta.role === 'events' ? 1 : 3, keep = [];
    for (var a = 0; a < f.x.length; a += step) {
      var lo = Infinity, hi = -Infinity, ylo = Infinity, yhi = -Infinity;
      for (var k = a; k < a + step && k < f.x.length; k++) {
        var x = f.x[k], y = f.y[k];
        if (x !== x || y !== y) continue;  // the gap between segments
        if (x < lo) lo = x; if (x > hi) hi = x; if (y < ylo) ylo = y; if (y > yhi) yhi = y;
      }
      if (hi >= x0 && lo <= x1 && yhi >= y0 && ylo <= y1) keep.push(a);
    }
    var n = keep.length * step, out = {x: new f.x.constructor(n), y: new f.y.constructor(n)};
    ['hovertext', 'text'].forEach(function (k) { if (Array.isArray(f[k])) out[k] = new Array(n); });
    keep.forEach(function (a, j) {
      for (var k = 0; k < step; k++) {
        out.x[j * step + k] = f.x[a + k]; out.y[j * step + k] = f.y[a + k];
        if (out.hovertext) out.hovertext[j * step + k] = f.hovertext[a + k];
        if (out.text) out.text[j * step + k] = f.text[a + k];
      }
    });
    // nothing near the view: one gap point, as defer_detail leaves, so the kind keeps its legend entry
    // (plotly drops a trace with no points from the legend, and with it the way to hide or show it)
    if (!n) { out.x = [null]; out.y = [null]; }
    return out;
  }
  // What the view holds is drawn in SVG up to GL_THRESHOLD points (as a figure that small would be),
  // in WebGL past it: a zoom onto a few lanes then starts no WebGL at all (its software start-up and
  // first draw were most of a 1M-event report's switch to detail). Set in place, as loadDetail does:
  // a 'type' passed to restyle redrew the 1M-event page for a minute.
  function fillView() {
    var n = 0, keys = Object.keys(full || {});
    keys.forEach(function (i) { var v = inView(i); n += v.x.length; Object.assign(gd.data[Number(i)], v); });
    var gl = n > ((gd.layout.meta || {}).gl_threshold || __GL_THRESHOLD__);
    keys.forEach(function (i) { gd.data[Number(i)].type = gl ? full[i].type : 'scatter'; });
    gd.data.forEach(function (t) {  // the overview's notable events go along, so no marker covers them
      if (t.meta && t.meta.svg_first) t.type = gl ? 'scattergl' : 'scatter';
    });
    return gl;
  }
  function eventsInView() {
    var n = 0;
    density.forEach(function (t) {
      var xr = axis(t.xaxis, 'x').range, yr = axis(t.yaxis, 'y').range;
      var x0 = Math.min(xr[0], xr[1]), x1 = Math.max(xr[0], xr[1]);
      var y0 = Math.min(yr[0], yr[1]) - 0.5, y1 = Math.max(yr[0], yr[1]) + 0.5;
      for (var r = 0; r < t.z.length; r++) {
        if (t.y[r] < y0 || t.y[r] > y1) continue;
        var row = t.z[r];
        for (var c = 0; c < row.length; c++) if (row[c] > 0 && t.x[c] >= x0 && t.x[c] <= x1) n += row[c];
      }
    });
    return n;
  }
  // Once every figure of the page is drawn, in idle time: parse the detail block and start WebGL with
  // a trace that draws nothing, so the first switch to detail pays neither (software WebGL's context
  // creation, ~0.6 s, and the block's parsing, ~0.1 s, were a third of a 1M-event report's switch).
  // WebGL canvases at the screen's own pixel ratio, not plotly's default of 2 (4 times the pixels on a
  // screen of ratio 1, ~0.3 s more of software WebGL per frame of a 2,600 px tall figure). Only while
  // none exists: a figure that opened in WebGL keeps the ratio its canvases were made with.
  if (limit && gd._context && !gd.querySelector('canvas')) {
    gd._context.plotGlPixelRatio = Math.min(2, Math.max(1, window.devicePixelRatio || 1));
  }
  function later(f) {  // half a second on, when the page is idle
    setTimeout(function () { if (window.requestIdleCallback) requestIdleCallback(f, {timeout: 3000}); else f(); }, 500);
  }
  function warm(drawn) {  // drawn: every figure of the page was drawn half a second ago or more
    if (gd.alarmkitWarm || gd.alarmkitDetail) return;
    if ((window.alarmkitRendered || 0) < document.querySelectorAll('.plotly-graph-div').length) { later(warm); return; }
    if (drawn !== true) { later(function () { warm(true); }); return; }
    gd.alarmkitWarm = 'starting';
    loadDetail();
    Plotly.addTraces(gd, {type: 'scattergl', x: [null], y: [null], mode: 'markers', showlegend: false,
                          hoverinfo: 'skip', meta: {role: 'warm-up'}})
      .then(function () {
        // hidden from the next redraw on (in place: no redraw now); WebGL stays started, and a detail drawn
        // in SVG does not pay for clearing and compositing an empty full-page canvas (~0.2 s)
        gd.data.forEach(function (t) { if (t.meta && t.meta.role === 'warm-up') t.visible = 'legendonly'; });
        gd.alarmkitWarm = true;
      });
  }
  if (limit) later(warm);
  // a legend click that shows a hidden trace outside detail: its whole data first, in its own type
  gd.on('plotly_legendclick', function () { if (!gd.alarmkitDetail) showAll(); });
  gd.on('plotly_legenddoubleclick', function () { if (!gd.alarmkitDetail) showAll(); });
  var meta = gd.layout.meta || {}, scale = meta.scale || 1, lanes = meta.lanes || {};
  // The lanes named on each y axis follow the zoom: every lane in view up to tick_limit of them (and
  // one per 16 px), else every k-th. The names come escaped from the figure (layout.meta.lanes).
  function laneTicks(update) {
    Object.keys(lanes).forEach(function (name) {
      var ax = gd._fullLayout[name], names = lanes[name];
      if (!ax || !names.length) return;
      var lo = Math.max(0, Math.ceil(Math.min(ax.range[0], ax.range[1]))),
          hi = Math.min(names.length - 1, Math.floor(Math.max(ax.range[0], ax.range[1])));
      var most = Math.max(1, Math.min(meta.tick_limit || 60, Math.floor(ax._length / 16)));
      var every = Math.max(1, Math.ceil((hi - lo + 1) / most)), vals = [], text = [];
      for (var y = Math.ceil(lo / every) * every; y <= hi; y += every) { vals.push(y); text.push(names[y]); }
      if (String(vals) !== String(ax.tickvals)) { update[name + '.tickvals'] = vals; update[name + '.ticktext'] = text; }
    });
  }
  // The time axis: ticks at a round step of the time in view, written as times ('5 h 23 min 10 s',
  // '12.25 s'), whatever unit the figure was built in (a 2-minute view of a 6-hour run in hours read
  // '5.39, 5.395').
  var STEPS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 15e3, 3e4, 6e4, 12e4, 3e5, 6e5, 9e5,
               18e5, 36e5, 72e5, 108e5, 216e5, 432e5, 864e5];
  function clock(ms, step) {
    var sign = ms < 0 ? '-' : '', t = Math.abs(ms), h = Math.floor(t / 36e5), m = Math.floor((t % 36e5) / 6e4),
        s = t % 6e4, parts = [], digits = step >= 1000 ? 0 : step >= 100 ? 1 : step >= 10 ? 2 : 3;
    if (t === 0) return '0';
    if (t < 1000 && step < 1000) return sign + t.toFixed(Math.max(0, digits - 3)) + ' ms';
    if (h) parts.push(h + ' h');
    if (m || (h && step < 6e4 && s)) parts.push(m + ' min');
    if (step < 6e4 || (!h && !m)) parts.push((s / 1000).toFixed(digits) + ' s');
    return sign + parts.join(' ');
  }
  function timeTicks(update) {
    Object.keys(gd._fullLayout).forEach(function (name) {
      var ax = gd._fullLayout[name];
      if (!/^xaxis\d*$/.test(name) || !ax || !ax.range || ax.type === 'date') return;
      var x0 = Math.min(ax.range[0], ax.range[1]) * scale, x1 = Math.max(ax.range[0], ax.range[1]) * scale;
      var vals, text;  // the finest round step whose labels (~7.5 px a character at 13 px) fit side by side
      for (var k = 0; k < STEPS.length; k++) {
        if ((x1 - x0) / STEPS[k] > ax._length / 60) continue;
        vals = []; text = [];
        for (var t = Math.ceil(x0 / STEPS[k]) * STEPS[k]; t <= x1; t += STEPS[k]) { vals.push(t / scale); text.push(clock(t, STEPS[k])); }
        var widest = Math.max.apply(null, text.map(function (s) { return s.length; }).concat([1]));
        if ((widest * 7.5 + 24) * (x1 - x0) / STEPS[k] <= ax._length) break;
      }
      if (!vals) return;
      if (String(text) === String(ax.ticktext)) return;
      update[name + '.tickmode'] = 'array'; update[name + '.tickvals'] = vals; update[name + '.ticktext'] = text;
      var title = ax.title && ax.title.text;  // the labels now carry their units
      if (title && / \((ms|s|min|h)\)$/.test(title)) update[name + '.title.text'] = title.replace(/ \((ms|s|min|h)\)$/, '');
    });
  }
  var OWN = /^[xy]axis\d*\.(tickvals|ticktext|tickmode|title\.text)$/;
  gd.on('plotly_relayout', function (ev) {
    var keys = Object.keys(ev || {});
    if (keys.length && keys.every(function (k) { return OWN.test(k); })) return;  // the ticks set below
    // the axes' new ticks go with this zoom's one redraw (Plotly.update), else in a relayout of their own
    var tk = {};
    laneTicks(tk); if (meta.unit) timeTicks(tk);
    function retick() { if (Object.keys(tk).length) Plotly.relayout(gd, tk); }
    if (!meta.large) return retick();
    var ya = gd._fullLayout.yaxis, rows = Math.max(1, Math.abs(ya.range[0] - ya.range[1]));
    var f = Math.max(0.2, Math.min(1, ya._length / rows / 60));
    if (Math.abs(f - (gd.alarmkitScale || 0)) >= 0.02) {
      gd.alarmkitScale = f;
      var idx = [], sizes = [];
      gd.data.forEach(function (t, i) {
        var size = t.meta && t.meta.size && Math.max(3, Math.round(t.meta.size * f));
        if (size && size !== (t.marker || {}).size) { idx.push(i); sizes.push(size); }
      });
      // a redraw of the whole figure (~0.2 s at 1M events): only when a size changes
      if (idx.length) Plotly.restyle(gd, {'marker.size': sizes}, idx);
    }
    if (!limit) return retick();
    var detail = eventsInView() <= limit, notes = meta.subtitles || {};
    if (detail && gd.alarmkitDetail) {  // still in detail: the view moved, so do the events drawn
      var gl = fillView();
      var moved = Object.keys(full || {}).map(Number);
      Plotly.update(gd, {x: moved.map(function (i) { return gd.data[i].x; }),
                         y: moved.map(function (i) { return gd.data[i].y; })},
                    Object.assign(tk, subtitle(gl)), moved);
      return;
    }
    if (detail === Boolean(gd.alarmkitDetail)) return retick();
    gd.alarmkitDetail = detail;
    var drawnGl = false;
    if (detail) { loadDetail(); drawnGl = fillView(); }
    var which = [], visible = [];
    gd.data.forEach(function (t, i) {
      if (!t.meta) return;
      var mine = chosen[i];  // the user's legend choice, else: shown in detail, greyed in the overview
      if (t.meta.role === 'density') { which.push(i); visible.push(!detail); }
      else if (t.meta.detail) {
        which.push(i); visible.push(mine !== undefined ? mine : detail ? true : 'legendonly');
        if (!detail && mine === true) whole(i);  // shown in the overview: all of it, as a legend click shows it
      }
      else if (t.meta.svg_first && detail) { which.push(i); visible.push(t.visible === undefined ? true : t.visible); }
    });
    // one redraw for all: the traces shown, the ticks and the subtitle saying which drawing this is
    Plotly.update(gd, {visible: visible}, Object.assign(tk, detail ? subtitle(drawnGl) : notes.overview
                                                         ? {'title.subtitle.text': notes.overview} : {}), which);
  });
  function subtitle(gl) {  // the detail's subtitle, saying whether this view is drawn in WebGL or in SVG
    var notes = meta.subtitles || {}, text = gl ? notes.detail : notes.detail_svg || notes.detail;
    return text && text !== ((gd.layout.title || {}).subtitle || {}).text ? {'title.subtitle.text': text} : {};
  }
})();""".replace("__GL_THRESHOLD__", str(GL_THRESHOLD))


_DEFERRED = ("x", "y", "hovertext", "text")  # a hidden trace's bulk, moved out of the figure's JSON


def defer_detail(fig: go.Figure) -> tuple[go.Figure | dict, dict]:
    """A big timeline's figure (as a dict) without the data of the traces hidden until a zoom asks for
    detail, and that data by trace index, for ``ON_ZOOM`` to read on that first zoom. Any other
    figure is returned as it is, with nothing deferred."""
    if not (_large(fig) and (fig.layout.meta or {}).get("detail_in_view")):
        return fig, {}
    shown = fig.to_dict()
    hidden: dict[str, dict] = {}
    for i, trace in enumerate(shown["data"]):
        if (trace.get("meta") or {}).get("detail") and trace.get("visible") == "legendonly":
            hidden[str(i)] = {k: trace.pop(k) for k in _DEFERRED if k in trace}
            # an empty SVG trace until then: a WebGL one, even hidden, starts WebGL with the page
            hidden[str(i)]["type"] = trace["type"]
            trace["x"], trace["y"], trace["type"] = [None], [None], "scatter"  # one gap point: a legend entry
    return shown, hidden


def _large(fig: go.Figure) -> bool:
    meta = fig.layout.meta
    return isinstance(meta, dict) and bool(meta.get("large"))
