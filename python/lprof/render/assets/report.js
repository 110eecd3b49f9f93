/* lprof HTML report: the page's whole script (no libraries, no network).
 * Reads the JSON block #lprof-data (render/report_data.py) and draws: a
 * summary, a flame graph per metric (click to zoom, search, reset), sortable
 * tables of hot lines and functions, the annotated source (or, toggled,
 * its heatmap: each line shaded by its share of the whole), the memory
 * timeline, and for `lprof -l` profiles the traced functions. A thread
 * filter applies to everything drawn from stacks. */
"use strict";
(function () {
  var D = JSON.parse(document.getElementById("lprof-data").textContent);
  var app = document.getElementById("app");
  var state = { thread: -1, metric: 0, zoom: null, search: "", heat: false };
  var SVGNS = "http://www.w3.org/2000/svg";

  function el(tag, attrs, kids) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) {
      if (k === "text") e.textContent = attrs[k];
      else if (k.slice(0, 2) === "on") e.addEventListener(k.slice(2), attrs[k]);
      else e.setAttribute(k, attrs[k]);
    }
    (kids || []).forEach(function (c) { if (c) e.appendChild(c); });
    return e;
  }
  function sv(tag, attrs) {
    var e = document.createElementNS(SVGNS, tag);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    return e;
  }
  function base(p) { return String(p).split("/").pop(); }
  function fmt(v, unit) {
    if (!v) return "";
    if (unit === "bytes") {
      var a = Math.abs(v), u = ["B", "KB", "MB", "GB", "TB"], i = 0;
      while (a >= 1000 && i < u.length - 1) { a /= 1000; i++; }
      return (v < 0 ? "-" : "") + (i ? a.toFixed(1) : a.toFixed(0)) + " " + u[i];
    }
    if (unit === "s") {
      var s = Math.abs(v);
      return s >= 1 ? v.toFixed(2) + " s" : s >= 1e-3 ? (v * 1e3).toFixed(1) + " ms"
        : s >= 1e-5 ? (v * 1e6).toFixed(0) + " \u00b5s" : s >= 1e-6 ? (v * 1e6).toFixed(1) + " \u00b5s"
        : (v * 1e9).toFixed(0) + " ns";
    }
    return Number.isInteger(v) ? String(v) : v.toPrecision(3);
  }
  function pct(v, total) { return total ? (100 * v / total).toFixed(1) + "%" : ""; }
  /* the denominator of a column's shares: the process's whole for CPU and
   * wall time (render/report_data.py: D.whole), else the column's total */
  function whole(i, t) {
    var c = D.columns[i], W = D.whole;
    if (W && c && (c.name === "cpu_s" || isPart(c.name)) && W.cpu_s) return W.cpu_s;
    if (W && c && c.name === "wall_s" && W.wall_s) return W.wall_s;
    return t[i];
  }
  function hue(name) {
    var h = 0;
    for (var i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
    return h;
  }
  function color(fid) {
    var f = D.frames[fid], h = hue(f[2] + f[1]);
    if (!f[4]) return "hsl(" + (200 + h % 40) + ",45%," + (72 + h % 12) + "%)"; // library
    return "hsl(" + (10 + h % 40) + ",85%," + (58 + h % 14) + "%)";              // user code
  }

  /* ---- rows of the selected thread ---- */
  function rows() {
    if (state.thread < 0) return D.stacks;
    return D.stacks.filter(function (r) { return r[1] === state.thread; });
  }
  function totals(rs) {
    var t = D.columns.map(function () { return 0; });
    rs.forEach(function (r) { r[3].forEach(function (v, i) { t[i] += v; }); });
    return t;
  }
  /* per charged line / function: sums of every column */
  function byKey(rs, keyOf) {
    var m = new Map();
    rs.forEach(function (r) {
      if (r[2] < 0) return;
      var k = keyOf(D.frames[r[2]]), e = m.get(k);
      if (!e) { e = { frame: D.frames[r[2]], v: D.columns.map(function () { return 0; }) }; m.set(k, e); }
      r[3].forEach(function (v, i) { e.v[i] += v; });
    });
    return Array.from(m.values());
  }

  /* ---- header and summary ---- */
  function header() {
    var m = D.meta, bits = [];
    if (m.duration_s != null) bits.push("ran " + m.duration_s.toFixed(2) + " s");
    if (m.modes) bits.push("modes: " + m.modes.join(", "));
    if (m.python) bits.push("Python " + m.python);
    if (m.exit_code) bits.push("exit status " + m.exit_code);
    if (D.whole) {
      bits.push("process CPU " + (fmt(D.whole.cpu_s, "s") || "0 s"));
      if (D.whole.mode === "wall") bits.push("wall " + (fmt(D.whole.wall_s, "s") || "0 s") + " summed over " + D.whole.threads + " thread" + (D.whole.threads === 1 ? "" : "s"));
    }
    return el("header", {}, [el("h1", { text: D.title }), el("p", { class: "meta", text: bits.join(" \u00b7 ") })]);
  }
  function summary(t) {
    var box = el("section", { id: "summary" }, [el("h2", { text: "Summary" })]);
    var cpu = colIndex("cpu_s");
    if (cpu >= 0 && t[cpu] > 0) {
      var bar = el("div", { class: "split" }), legend = [];
      var W = whole(cpu, t);
      D.columns[cpu].parts.forEach(function (name, k) {
        var v = t[colIndex(name)], w = 100 * v / t[cpu];
        bar.appendChild(el("span", { class: "part p" + k, style: "width:" + w + "%", title: name }));
        legend.push(el("span", { class: "key p" + k, text: D.columns[colIndex(name)].label + " " + pct(v, W) }));
      });
      box.appendChild(el("div", { class: "stat" }, [el("b", { text: "CPU " + fmt(t[cpu], "s") + (W > t[cpu] ? " sampled of the process's " + fmt(W, "s") : "") }), bar, el("div", {}, legend)]));
    }
    if (D.whole && state.thread < 0) box.appendChild(remainder());
    D.columns.forEach(function (c, i) {
      if (c.parts || (D.columns[colIndex("cpu_s")] || { parts: [] }).parts.indexOf(c.name) >= 0) return;
      if (c.quiet || !t[i]) return;
      box.appendChild(el("div", { class: "stat" }, [el("b", { text: c.label + " " + fmt(t[i], c.unit) })]));
    });
    if (D.memory) box.appendChild(el("div", { class: "stat" }, [el("b", { text: "peak memory " + (fmt(D.memory.peak_bytes, "bytes") || "0 B") })]));
    return box;
  }
  /* what no line of the page holds, and where it went (as the listing says) */
  function remainder() {
    var W = D.whole, total = W.whole_s, bits = [];
    var name = W.mode === "wall" ? "wall time, summed over threads" : "the process's CPU time";
    W.hidden.forEach(function (h) {
      var top = h.top.slice(0, 3).map(function (n) { return n.name + " " + pct(n.seconds, total); }).join(", ");
      bits.push(pct(h.seconds, total) + " in " + h.where + (top ? " (" + top + ")" : ""));
    });
    if (W.no_python_s) bits.push(pct(W.no_python_s, total) + " in threads without Python, on no Python stack");
    if (W.lprof_s) bits.push(pct(W.lprof_s, total) + " in lprof itself (its threads, and its code on yours)");
    if (W.unsampled_s) bits.push(pct(W.unsampled_s, total) + " on no sampled Python stack (threads' last partial tick, threads outside the sampler's table)");
    return el("p", { id: "whole", class: "note", text: "Shares are of " + name + " (" + fmt(total, "s") + "). Lines of the selected files hold " +
      pct(W.selected_s, total) + "; not on any line: " + (bits.length ? bits.join("; ") : "nothing") + "." });
  }
  function colIndex(name) {
    for (var i = 0; i < D.columns.length; i++) if (D.columns[i].name === name) return i;
    return -1;
  }

  /* ---- controls ---- */
  function controls() {
    var bar = el("nav", { id: "controls" });
    if (D.threads.length > 1) {
      var sel = el("select", { id: "thread", onchange: function () { state.thread = +sel.value; state.zoom = null; draw(); } });
      sel.appendChild(el("option", { value: "-1", text: "all threads" }));
      D.threads.forEach(function (t, i) { sel.appendChild(el("option", { value: String(i), text: t[1] + " (" + t[0] + ")" })); });
      sel.value = String(state.thread);
      bar.appendChild(el("label", { text: "Thread " }, [sel]));
    }
    return bar;
  }

  /* ---- flame graph (icicle: the program's frames at the top) ---- */
  /* frame ids below -1 are the threads' own frames (-2 - thread index):
   * with every thread shown, each stack starts with its thread's name */
  function buildTree(rs, col) {
    var root = { fid: -1, v: 0, kids: new Map(), parent: null };
    var byThread = state.thread < 0 && D.threads.length > 1;
    rs.forEach(function (r) {
      var v = r[3][col];
      if (!(v > 0)) return;
      var n = root;
      n.v += v;
      (byThread ? [-2 - r[1]].concat(r[0]) : r[0]).forEach(function (fid) {
        var k = n.kids.get(fid);
        if (!k) { k = { fid: fid, v: 0, kids: new Map(), parent: n }; n.kids.set(fid, k); }
        k.v += v;
        n = k;
      });
    });
    return root;
  }
  function nodePath(n) { var p = []; for (; n && n.parent; n = n.parent) p.unshift(n.fid); return p.join(","); }
  function nodeName(n) { return n.fid === -1 ? "all" : n.fid < -1 ? "thread " + D.threads[-2 - n.fid][1] : D.frames[n.fid][0]; }
  function nodeText(n) { return n.fid < 0 ? nodeName(n) : D.frames[n.fid][0] + " " + D.frames[n.fid][1]; }
  function findPath(root, path) {
    if (!path) return null;
    var n = root;
    path.split(",").forEach(function (f) { n = n && n.kids.get(+f); });
    return n || null;
  }
  var ROW = 18;
  function flame(rs) {
    var sec = el("section", { id: "flame" }, [el("h2", { text: "Flame graph" })]);
    var usable = D.columns.map(function (c, i) { return i; });
    if (!usable.length) { sec.appendChild(el("p", { text: "No stacks in this profile." })); return sec; }
    var msel = el("select", { id: "metric", onchange: function () { state.metric = +msel.value; state.zoom = null; draw(); } });
    usable.forEach(function (i) { msel.appendChild(el("option", { value: String(i), text: D.columns[i].label })); });
    msel.value = String(state.metric);
    var search = el("input", { id: "search", type: "search", placeholder: "search (regex)", value: state.search });
    search.addEventListener("input", function () { state.search = search.value; paint(); });
    var reset = el("button", { id: "reset", text: "Reset zoom", onclick: function () { state.zoom = null; paint(); } });
    var info = el("span", { id: "flameinfo" });
    sec.appendChild(el("div", { class: "tools" }, [el("label", { text: "Metric " }, [msel]), search, reset, info]));
    if (D.folded_imports) sec.appendChild(el("p", { class: "note", text: "importlib's frames are folded into one \"import module\" frame (lprof export --full-imports shows them)." }));
    var holder = el("div", { class: "flamebox" });
    sec.appendChild(holder);
    var tip = el("div", { id: "tip" });
    sec.appendChild(tip);
    var col = state.metric, unit = D.columns[col].unit;
    var root = buildTree(rs, col);
    var W = Math.max(whole(col, totals(D.stacks)), root.v);

    function paint() {
      holder.textContent = "";
      var width = Math.max(holder.clientWidth || 0, 600);
      var zoom = findPath(root, state.zoom) || root;
      var re = null;
      try { re = state.search ? new RegExp(state.search) : null; } catch (e) { re = null; }
      var items = [], depthMax = 0, matched = 0;
      // ancestors of the zoomed frame span the width, greyed
      var anc = [];
      for (var a = zoom; a; a = a.parent) anc.unshift(a);
      anc.forEach(function (n, d) { items.push([n, d, 0, width, n !== zoom]); });
      var scale = zoom.v ? width / zoom.v : 0, minW = 0.5;
      (function walk(n, d, x) {
        var kids = Array.from(n.kids.values()).sort(function (p, q) { return q.v - p.v; });
        kids.forEach(function (k) {
          var w = k.v * scale;
          if (w >= minW) {
            items.push([k, d, x, w, false]);
            if (d > depthMax) depthMax = d;
            walk(k, d + 1, x);
          }
          x += w;
        });
      })(zoom, anc.length, 0);
      depthMax = Math.max(depthMax, anc.length - 1);
      var svg = sv("svg", { width: width, height: (depthMax + 1) * ROW + 2, class: "flamesvg" });
      items.forEach(function (it) {
        var n = it[0], name = nodeName(n);
        var hit = re && n.fid !== -1 && re.test(nodeText(n));
        var g = sv("g", { class: "fr" + (it[4] ? " anc" : "") + (hit ? " hit" : ""), "data-path": nodePath(n) });
        g.appendChild(sv("rect", { x: it[2].toFixed(1), y: it[1] * ROW, width: Math.max(it[3] - 0.5, 0.5).toFixed(1), height: ROW - 1,
          fill: hit ? "#c3f" : n.fid === -1 ? "#ddd" : n.fid < 0 ? "#c9d3e0" : color(n.fid), rx: 2 }));
        var chars = Math.floor((it[3] - 6) / 7);
        if (chars >= 3) {
          var t = sv("text", { x: (it[2] + 3).toFixed(1), y: it[1] * ROW + 13 });
          t.textContent = name.length <= chars ? name : name.slice(0, chars - 1) + "\u2026";
          g.appendChild(t);
        }
        g.addEventListener("click", function () { state.zoom = nodePath(n) || null; paint(); });
        g.addEventListener("mousemove", function (ev) {
          tip.textContent = nodeText(n) + "  \u2014  " +
            fmt(n.v, unit) + " (" + pct(n.v, W) + ")";
          tip.style.left = (ev.pageX + 12) + "px"; tip.style.top = (ev.pageY + 12) + "px"; tip.style.display = "block";
        });
        g.addEventListener("mouseleave", function () { tip.style.display = "none"; });
        svg.appendChild(g);
      });
      if (re) matched = matchedValue(root, re);
      info.textContent = (state.zoom ? "zoomed: " + fmt(zoom.v, unit) + " of " : "") + fmt(root.v, unit) + " total" +
        (re ? " \u00b7 search matched " + pct(matched, W) : "") + (W > root.v ? " (shares of " + fmt(W, unit) + ")" : "");
      holder.appendChild(svg);
    }
    /* value of the matching frames, each stack counted once (outermost match) */
    function matchedValue(n, re) {
      var s = 0;
      n.kids.forEach(function (k) {
        if (re.test(nodeText(k))) s += k.v; else s += matchedValue(k, re);
      });
      return s;
    }
    sec.paint = paint;
    return sec;
  }

  /* ---- sortable tables ---- */
  function table(id, title, entries, firstCols, t) {
    var sec = el("section", { id: id }, [el("h2", { text: title })]);
    if (!entries.length) { sec.appendChild(el("p", { text: "Nothing charged to your code." })); return sec; }
    var cols = firstCols.concat(D.columns.map(function (c, i) {
      return { title: c.label, num: true, get: function (e) { return e.v[i]; }, show: function (e) { return fmt(e.v[i], c.unit); }, bar: t[i] };
    }));
    var sortBy = firstCols.length, desc = true;
    var tbl = el("table", { class: "hot" });
    function fill() {
      tbl.textContent = "";
      var head = el("tr");
      cols.forEach(function (c, k) {
        head.appendChild(el("th", { class: c.num ? "num" : "", text: c.title + (k === sortBy ? (desc ? " \u25bc" : " \u25b2") : ""),
          onclick: function () { if (sortBy === k) desc = !desc; else { sortBy = k; desc = !!c.num; } fill(); } }));
      });
      tbl.appendChild(el("thead", {}, [head]));
      var body = el("tbody");
      entries.slice().sort(function (a, b) {
        var x = cols[sortBy].get(a), y = cols[sortBy].get(b);
        var r = x < y ? -1 : x > y ? 1 : 0;
        return desc ? -r : r;
      }).slice(0, 200).forEach(function (e) {
        var tr = el("tr");
        cols.forEach(function (c) {
          var td = el("td", { class: c.num ? "num" : c.cls || "" });
          if (c.bar) {
            td.appendChild(el("span", { class: "cellbar", style: "width:" + Math.min(100, 100 * Math.abs(c.get(e)) / c.bar) + "%" }));
          }
          td.appendChild(el("span", { text: c.show ? c.show(e) : c.get(e) }));
          tr.appendChild(td);
        });
        body.appendChild(tr);
      });
      tbl.appendChild(body);
    }
    fill();
    sec.appendChild(el("div", { class: "scroll" }, [tbl]));
    return sec;
  }
  function srcText(file, line) { var s = D.sources[file]; return s ? (s[String(line)] || "").trim() : ""; }

  /* ---- annotated source ---- */
  function source(lines, t) {
    var sec = el("section", { id: "source" }, [el("h2", { text: "Source" })]);
    // a bar per metric; the quieter columns (counts, freed, live) on request
    if (!state.srcCols) state.srcCols = D.columns.map(function (c) { return !c.quiet && !isPart(c.name); });
    var picks = el("div", { class: "tools" }, [el("span", { text: "Columns: " })]);
    D.columns.forEach(function (c, i) {
      var box = el("input", { type: "checkbox", "data-col": c.name, onchange: function () { state.srcCols[i] = box.checked; draw(); } });
      box.checked = state.srcCols[i];
      picks.appendChild(el("label", { class: "pick" }, [box, el("span", { text: c.label })]));
    });
    /* the heatmap view: each line's background shaded by its share of the
     * whole in the flame graph's metric; lines without any left unshaded */
    var heatBox = el("input", { type: "checkbox", id: "heatmap", onchange: function () { state.heat = heatBox.checked; draw(); } });
    heatBox.checked = !!state.heat;
    picks.appendChild(el("label", { class: "pick heatpick", title: "shade each line by its share of the whole (" + D.columns[state.metric].label + ", the flame graph's metric)" },
      [heatBox, el("span", { text: "Heatmap (" + D.columns[state.metric].label + ")" })]));
    sec.appendChild(picks);
    var heat = state.heat ? heatShares(lines, t) : null;
    if (heat) sec.appendChild(el("p", { class: "note", id: "heatnote", text: "Heatmap: each line shaded by its share of " +
      (whole(state.metric, t) > t[state.metric] ? "the whole " : "all ") + D.columns[state.metric].label +
      " (" + fmt(whole(state.metric, t), D.columns[state.metric].unit) + "); the hottest line, " + pct(heat.max, 1) + ", is shaded fully, lines without any are not." }));
    var shown = D.columns.map(function (c, i) { return state.srcCols[i] ? i : -1; }).filter(function (i) { return i >= 0; });
    var files = new Map();
    lines.forEach(function (e) {
      var f = e.frame[1];
      if (!D.sources[f]) return;
      if (!files.has(f)) files.set(f, { lines: new Map(), sum: 0 });
      var F = files.get(f);
      F.lines.set(e.frame[3], e);
      F.sum += shown.length ? e.v[shown[0]] : 0;
    });
    if (!files.size) { sec.appendChild(el("p", { text: "No source lines of your code in this profile." })); return sec; }
    Array.from(files.entries()).sort(function (a, b) { return b[1].sum - a[1].sum; }).forEach(function (kv) {
      var path = kv[0], F = kv[1], src = D.sources[path];
      var keep = new Set(), nums = Object.keys(src).map(Number).sort(function (a, b) { return a - b; });
      var entire = nums.length <= 400;
      F.lines.forEach(function (_e, ln) { for (var k = ln - 3; k <= ln + 3; k++) keep.add(k); });
      var tbl = el("table", { class: "src" });
      var head = el("tr", {}, [el("th", { text: "line" })]);
      shown.forEach(function (i) { head.appendChild(el("th", { class: "num", text: D.columns[i].label })); });
      head.appendChild(el("th", { text: "code" }));
      tbl.appendChild(el("thead", {}, [head]));
      var body = el("tbody"), prev = null;
      nums.forEach(function (ln) {
        if (!entire && !keep.has(ln)) return;
        if (prev !== null && ln !== prev + 1) body.appendChild(el("tr", { class: "gap" }, [el("td", { colspan: String(shown.length + 2), text: "\u22ee" })]));
        prev = ln;
        var e = F.lines.get(ln), tr = el("tr", { class: e && !heat ? "hotline" : "" });
        var share = heat && e ? heat.share(e) : 0, shade = null;
        if (share > 0) {
          shade = "rgba(230,70,20," + (0.08 + 0.72 * share / heat.max).toFixed(3) + ")";
          tr.setAttribute("class", "heat");
          tr.setAttribute("data-heat", share.toPrecision(6));
          tr.setAttribute("title", pct(share, 1) + " of the whole");
        }
        tr.appendChild(el("td", { class: "ln", text: String(ln) }));
        shown.forEach(function (i) {
          var td = el("td", { class: "num" });
          if (e && e.v[i]) {
            var c = D.columns[i];
            if (c.parts) {
              var bar = el("span", { class: "split mini" });
              c.parts.forEach(function (name, k) {
                bar.appendChild(el("span", { class: "part p" + k, style: "width:" + (100 * e.v[colIndex(name)] / t[i]) + "%" }));
              });
              td.appendChild(bar);
            } else {
              td.appendChild(el("span", { class: "bar", style: "width:" + Math.min(100, 100 * Math.abs(e.v[i]) / t[i]) + "%" }));
            }
            td.appendChild(el("span", { class: "val", text: fmt(e.v[i], c.unit), title: pct(e.v[i], whole(i, t)) }));
          }
          tr.appendChild(td);
        });
        var code = el("td", { class: "code", text: src[String(ln)] });
        if (shade) code.style.background = shade;
        tr.appendChild(code);
        body.appendChild(tr);
      });
      tbl.appendChild(body);
      sec.appendChild(el("details", { open: "" }, [el("summary", { text: path }), el("div", { class: "scroll" }, [tbl])]));
    });
    return sec;
  }
  /* each line's share of the whole in the flame graph's metric, and the largest */
  function heatShares(lines, t) {
    var col = state.metric, W = whole(col, t), max = 0;
    function share(e) { return W > 0 && e.v[col] > 0 ? e.v[col] / W : 0; }
    lines.forEach(function (e) { if (D.sources[e.frame[1]]) max = Math.max(max, share(e)); });
    return max > 0 ? { share: share, max: max } : null;
  }
  function isPart(name) {
    var c = D.columns[colIndex("cpu_s")];
    return !!c && c.parts.indexOf(name) >= 0;
  }

  /* ---- memory timeline ---- */
  function timeline() {
    var M = D.memory, pts = (M && M.timeline) || [];
    var sec = el("section", { id: "memory" }, [el("h2", { text: "Memory over time" })]);
    if (pts.length < 2) { sec.appendChild(el("p", { text: "No memory timeline in this profile." })); return sec; }
    var W = 900, H = 200, tmax = pts[pts.length - 1][0] || 1, ymax = 1;
    pts.forEach(function (p) { if (p[1] > ymax) ymax = p[1]; });
    var svg = sv("svg", { viewBox: "0 0 " + (W + 80) + " " + (H + 30), class: "timeline" });
    var d = pts.map(function (p, i) { return (i ? "L" : "M") + (70 + W * p[0] / tmax).toFixed(1) + "," + (H - H * p[1] / ymax + 5).toFixed(1); }).join("");
    svg.appendChild(sv("path", { d: d + "L" + (70 + W) + "," + (H + 5) + "L70," + (H + 5) + "Z", class: "area" }));
    svg.appendChild(sv("path", { d: d, class: "line" }));
    [[0, "0"], [ymax, fmt(ymax, "bytes")]].forEach(function (a) {
      var tx = sv("text", { x: 2, y: H - H * a[0] / ymax + 9 }); tx.textContent = a[1]; svg.appendChild(tx);
    });
    var tx = sv("text", { x: 70 + W - 40, y: H + 25 }); tx.textContent = tmax.toFixed(2) + " s"; svg.appendChild(tx);
    sec.appendChild(svg);
    sec.appendChild(el("p", { text: "Peak " + fmt(M.peak_bytes, "bytes") + " at " + (M.peak_time_s || 0).toFixed(2) + " s" }));
    if (M.leaks && M.leaks.length) {
      var ul = el("ul");
      M.leaks.slice(0, 10).forEach(function (l) { ul.appendChild(el("li", { text: base(l[0]) + ":" + l[1] + " (" + l[2] + "): +" + fmt(l[3], "bytes") + "/s, score " + l[4].toFixed(2) })); });
      sec.appendChild(el("div", {}, [el("h3", { text: "Possible leaks" }), ul]));
    }
    return sec;
  }

  /* ---- lprof -l: traced functions ---- */
  function traced() {
    var sec = el("section", { id: "lines" }, [el("h2", { text: "Traced functions (exact, lprof -l)" })]);
    var all = [], anyWait = false;
    D.functions.forEach(function (fn) {
      var waits = new Map(fn.wait || []);
      anyWait = anyWait || waits.size > 0;
      fn.lines.forEach(function (l) { all.push({ fn: fn, line: l[0], hits: l[1], time: l[2], wait: waits.get(l[0]) || 0 }); });
    });
    var fnSorted = D.functions.slice().sort(function (a, b) { return b.total_s - a.total_s; });
    var hot = el("table", { class: "hot", id: "lhot" }), key = "time", desc = true;
    var cols = [["function", "fn"], ["line", "line"], ["hits", "hits"], ["time", "time"], ["per hit", "per"]];
    if (anyWait) cols.push(["wait", "wait"]); /* suspended at a yield or await line: sortable like time */
    function fillHot() {
      hot.textContent = "";
      var head = el("tr");
      cols.forEach(function (c) {
        head.appendChild(el("th", { class: c[1] === "fn" ? "" : "num", text: c[0] + (key === c[1] ? (desc ? " \u25bc" : " \u25b2") : ""),
          onclick: function () { if (key === c[1]) desc = !desc; else { key = c[1]; desc = true; } fillHot(); } }));
      });
      head.appendChild(el("th", { text: "code" }));
      hot.appendChild(el("thead", {}, [head]));
      var body = el("tbody"), tsum = all.reduce(function (s, a) { return s + a.time; }, 0);
      all.map(function (a) { a.per = a.hits ? a.time / a.hits : 0; a.fname = a.fn.name; return a; })
        .sort(function (a, b) {
          var x = key === "fn" ? a.fname : a[key], y = key === "fn" ? b.fname : b[key];
          var r = x < y ? -1 : x > y ? 1 : 0; return desc ? -r : r;
        }).slice(0, 100).forEach(function (a) {
          body.appendChild(el("tr", {}, [el("td", { text: a.fn.name }), el("td", { class: "num", text: String(a.line) }),
            el("td", { class: "num", text: String(a.hits) }),
            el("td", { class: "num" }, [el("span", { class: "cellbar", style: "width:" + (tsum ? 100 * a.time / tsum : 0) + "%" }), el("span", { text: fmt(a.time, "s") })]),
            el("td", { class: "num", text: fmt(a.per, "s") })]
            .concat(anyWait ? [el("td", { class: "num wait", text: a.wait ? fmt(a.wait, "s") : "" })] : [])
            .concat([el("td", { class: "code", text: (a.fn.source[String(a.line)] || "").trim() })])));
        });
      hot.appendChild(body);
    }
    fillHot();
    sec.appendChild(el("div", { class: "scroll" }, [hot]));
    fnSorted.forEach(function (fn) {
      var rows = new Map(fn.lines.map(function (l) { return [l[0], l]; }));
      var sum = fn.lines.reduce(function (s, l) { return s + l[2]; }, 0);
      /* generators and coroutines: time suspended at a yield or await line */
      var waits = fn.wait && fn.wait.length ? new Map(fn.wait) : null;
      var heads = ["line", "hits", "time", "per hit", "% time"].concat(waits ? ["wait"] : [], ["code"]);
      var tbl = el("table", { class: "src" });
      tbl.appendChild(el("thead", {}, [el("tr", {}, heads.map(function (h) { return el("th", { class: h === "code" ? "" : "num", text: h }); }))]));
      var body = el("tbody");
      var nums = Object.keys(fn.source).map(Number).sort(function (a, b) { return a - b; });
      if (!nums.length) nums = Array.from(rows.keys()).sort(function (a, b) { return a - b; });
      nums.forEach(function (ln) {
        var l = rows.get(ln), tr = el("tr", { class: l ? "hotline" : "" });
        tr.appendChild(el("td", { class: "ln", text: String(ln) }));
        tr.appendChild(el("td", { class: "num", text: l ? String(l[1]) : "" }));
        tr.appendChild(el("td", { class: "num", text: l ? fmt(l[2], "s") : "" }));
        tr.appendChild(el("td", { class: "num", text: l && l[1] ? fmt(l[2] / l[1], "s") : "" }));
        var td = el("td", { class: "num" });
        if (l && sum) { td.appendChild(el("span", { class: "bar", style: "width:" + (100 * l[2] / sum) + "%" })); td.appendChild(el("span", { class: "val", text: pct(l[2], sum) })); }
        tr.appendChild(td);
        if (waits) tr.appendChild(el("td", { class: "num wait", text: waits.has(ln) ? fmt(waits.get(ln), "s") : "" }));
        tr.appendChild(el("td", { class: "code", text: fn.source[String(ln)] || "" }));
        body.appendChild(tr);
      });
      tbl.appendChild(body);
      var waited = waits ? fn.wait.reduce(function (s, w) { return s + w[1]; }, 0) : 0;
      sec.appendChild(el("details", { open: "" }, [el("summary", { text: fn.name + " \u2014 " + base(fn.file) + ":" + fn.first_line + " \u2014 " + (fmt(fn.total_s, "s") || "0 s") + (fn.outermost_s != null && fn.total_s > fn.outermost_s * 1.01 ? " (sum of the lines; outermost calls " + fmt(fn.outermost_s, "s") + ": recursive, nested calls counted at every level)" : "") + (waits ? " (waited " + fmt(waited, "s") + ")" : "") }), tbl]));
    });
    return sec;
  }

  /* ---- the page ---- */
  function draw() {
    app.textContent = "";
    var rs = rows(), t = totals(rs);
    app.appendChild(header());
    app.appendChild(controls());
    if (D.stacks.length) {
      app.appendChild(summary(t));
      var fl = flame(rs);
      app.appendChild(fl);
      var lines = byKey(rs, function (f) { return f[1] + ":" + f[3]; });
      var funcs = byKey(rs, function (f) { return f[1] + ":" + f[2]; });
      app.appendChild(table("hotlines", "Hot lines", lines, [
        { title: "line", get: function (e) { return base(e.frame[1]) + ":" + e.frame[3]; } },
        { title: "function", get: function (e) { return e.frame[2]; } },
        { title: "code", cls: "code", get: function (e) { return srcText(e.frame[1], e.frame[3]); } }], t));
      app.appendChild(table("hotfuncs", "Hot functions (time and memory charged to their lines)", funcs, [
        { title: "function", get: function (e) { return e.frame[2]; } },
        { title: "file", get: function (e) { return base(e.frame[1]); } }], t));
      app.appendChild(source(lines, t));
      if (fl.paint) fl.paint();
    }
    if (D.functions.length) app.appendChild(traced());
    if (D.memory) app.appendChild(timeline());
    app.appendChild(el("footer", { text: "lprof " + (D.meta.lprof_version || "") + " \u00b7 self-contained report: no network needed" }));
  }
  draw();
  window.addEventListener("resize", function () { var f = document.getElementById("flame"); if (f && f.paint) f.paint(); });
  window.lprofReport = { state: state, draw: draw, data: D };
})();
