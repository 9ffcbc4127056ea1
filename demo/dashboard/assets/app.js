// adaptio live dashboard: polls api/state for what is new each second and
// redraws hand-made SVG charts. No libraries, nothing fetched from elsewhere.
"use strict";
(function () {
  const KEEP = 600;               // seconds kept for the time charts
  const COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"];
  const st = { meta: null, seconds: [], iterations: [], events: [], estimates: [], next: [0, 0, 0], progress: null, done: false, elapsed: 0 };
  window.adaptio = { updates: 0, state: st, errors: 0 };

  const NS = "http://www.w3.org/2000/svg";
  function el(name, attrs, parent) {
    const e = document.createElementNS(NS, name);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }
  function text(parent, x, y, s, attrs) {
    const t = el("text", Object.assign({ x: x, y: y }, attrs || {}), parent);
    t.textContent = s;
    return t;
  }
  // winLabel labels a window given in microseconds (the JSON's *_us fields)
  // as sched.WindowLabel does in Go ("125µs", "1ms", "1.5ms"): the charts are
  // drawn in the browser, so it keeps its own copy of that one rule.
  function winLabel(us) { return us >= 1000 ? (us / 1000) + "ms" : us + "µs"; }
  function nice(lo, hi, n) {
    if (hi <= lo) hi = lo + 1;
    const raw = (hi - lo) / n, mag = Math.pow(10, Math.floor(Math.log10(raw)));
    let step = mag;
    for (const m of [1, 2, 2.5, 5, 10]) { if (m * mag >= raw) { step = m * mag; break; } }
    const out = [];
    for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(+v.toFixed(6));
    return out;
  }
  function fmt(v) { if (Number.isInteger(v)) return String(v); return Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(2); }

  // chart draws series [{name,color,pts:[[x,y]],step,dots}] into container id.
  function chart(id, series, opt) {
    const W = 560, H = 220, L = 52, R = 10, T = 22, B = 28;
    const box = document.getElementById(id);
    const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, "font-size": "11", "font-family": "sans-serif" });
    let xmin = Infinity, xmax = -Infinity, ymin = Infinity, ymax = -Infinity, n = 0;
    for (const s of series) for (const p of s.pts) {
      xmin = Math.min(xmin, p[0]); xmax = Math.max(xmax, p[0]); ymin = Math.min(ymin, p[1]); ymax = Math.max(ymax, p[1]); n++;
    }
    if (!n) { xmin = 0; xmax = 1; ymin = 0; ymax = 1; }
    if (opt.ymin !== undefined) { ymin = opt.ymin; ymax = opt.ymax; } else { ymin = Math.min(0, ymin); ymax = ymax + (ymax - ymin) * 0.08 || 1; }
    if (xmax <= xmin) xmax = xmin + 1;
    const pw = W - L - R, ph = H - T - B;
    const X = v => L + (v - xmin) / (xmax - xmin) * pw, Y = v => T + ph - (v - ymin) / (ymax - ymin) * ph;
    const yt = opt.yticks || nice(ymin, ymax, 4).map(v => [v, fmt(v)]);
    for (const [v, lab] of yt) {
      if (v < ymin - 1e-9 || v > ymax + 1e-9) continue;
      el("line", { x1: L, x2: L + pw, y1: Y(v), y2: Y(v), stroke: "#eee" }, svg);
      text(svg, L - 4, Y(v) + 4, lab, { "text-anchor": "end" });
    }
    for (const v of nice(xmin, xmax, 6)) {
      if (v < xmin || v > xmax || (opt.intx && !Number.isInteger(v))) continue;
      text(svg, X(v), T + ph + 14, fmt(v), { "text-anchor": "middle" });
    }
    text(svg, L + pw, H - 2, opt.xlabel || "", { "text-anchor": "end", fill: "#666" });
    el("rect", { x: L, y: T, width: pw, height: ph, fill: "none", stroke: "#999" }, svg);
    let lx = L;
    for (const s of series) {
      if (!s.pts.length) continue;
      let d = "";
      s.pts.forEach((p, i) => {
        const x = X(p[0]).toFixed(1), y = Y(p[1]).toFixed(1);
        d += i === 0 ? `M${x} ${y}` : s.step ? `H${x}V${y}` : `L${x} ${y}`;
      });
      if (!s.dotsOnly) el("path", { d: d, fill: "none", stroke: s.color, "stroke-width": 1.5, class: "series" }, svg);
      if (s.dots) for (const p of s.pts) el("circle", { cx: X(p[0]), cy: Y(p[1]), r: 2.5, fill: s.color, class: "point" }, svg);
      if (s.name) {
        el("rect", { x: lx, y: 6, width: 10, height: 10, fill: s.color }, svg);
        text(svg, lx + 13, 15, s.name);
        lx += 22 + 6.5 * s.name.length;
      }
    }
    box.replaceChildren(svg);
  }

  function bars(id, estimates, windows) {
    const W = 560, H = 220, L = 52, R = 10, T = 22, B = 28;
    const box = document.getElementById(id);
    const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, "font-size": "11", "font-family": "sans-serif" });
    let ymax = 0;
    for (const e of estimates) for (const v of e.values) ymax = Math.max(ymax, v);
    ymax = ymax * 1.1 || 1;
    const pw = W - L - R, ph = H - T - B, groups = windows.length || 1, k = Math.max(estimates.length, 1);
    const gw = pw / groups, bw = gw * 0.8 / k;
    for (const v of nice(0, ymax, 4)) {
      const y = T + ph - v / ymax * ph;
      el("line", { x1: L, x2: L + pw, y1: y, y2: y, stroke: "#eee" }, svg);
      text(svg, L - 4, y + 4, fmt(v), { "text-anchor": "end" });
    }
    windows.forEach((w, i) => text(svg, L + gw * (i + 0.5), T + ph + 14, winLabel(w), { "text-anchor": "middle" }));
    let lx = L;
    estimates.forEach((e, j) => {
      const c = COLORS[j % COLORS.length];
      e.values.forEach((v, i) => {
        const h = Math.max(v, 0) / ymax * ph;
        const r = el("rect", { x: L + gw * i + gw * 0.1 + bw * j, y: T + ph - h, width: bw - 1, height: h, fill: c, class: "bar",
          opacity: i === e.best ? 1 : 0.55 }, svg);
        const t = el("title", {}, r); t.textContent = `${e.context} ${winLabel(windows[i])}: ${fmt(v)} (n=${e.counts[i]})`;
      });
      el("rect", { x: lx, y: 6, width: 10, height: 10, fill: c }, svg);
      text(svg, lx + 13, 15, e.context);
      lx += 24 + 6.5 * e.context.length;
    });
    el("rect", { x: L, y: T, width: pw, height: ph, fill: "none", stroke: "#999" }, svg);
    box.replaceChildren(svg);
  }

  function render() {
    const m = st.meta;
    if (!m) return;
    document.getElementById("mode").textContent = m.mode === "sim" ? "demo — simulator, virtual time" : "demo — live stack";
    document.getElementById("workload").textContent = (m.workload || "") +
      (m.static_us ? ` Static window ${winLabel(m.static_us)} (no learning).` : ` Learning: ${m.policy}${m.epsilon ? " ε=" + m.epsilon : ""}.`) +
      (m.carried_over ? ` ${m.carried_over} bandit pulls carried over from earlier runs.` : "");
    // One count of iterations, as the terminal view and the report: passes
    // over every phase (st.iterations holds phase runs).
    const p = st.progress || { text: "", phase_runs: 0 };
    document.getElementById("status").textContent =
      `${st.done ? "finished" : "running"} · t=${st.elapsed.toFixed(0)} s · ${p.text} · ${p.phase_runs} phase runs`;
    const last = st.seconds[st.seconds.length - 1];
    const tb = document.querySelector("#nodes tbody");
    tb.replaceChildren();
    if (last) for (const n of last.nodes) {
      const tr = document.createElement("tr");
      const cells = [n.node, n.pattern || "idle", n.op || "–", winLabel(n.window_us),
        !n.pattern ? "–" : m.static_us ? "static" : (n.explore ? "explore" : "exploit") + (n.prob ? ` (p=${n.prob.toFixed(2)})` : ""),
        (n.bw / 1048576).toFixed(1) + " MiB/s"];
      cells.forEach((c, i) => {
        const td = document.createElement("td");
        td.textContent = c;
        if (i === 4 && n.pattern && !m.static_us) td.className = n.explore ? "explore" : "exploit";
        if (i === 5) td.className = "num";
        tr.appendChild(td);
      });
      tb.appendChild(tr);
    }
    const nodes = m.nodes || 0, wins = m.windows_us || [];
    const bw = [], win = [];
    for (let i = 0; i < nodes; i++) {
      bw.push({ name: "node " + i, color: COLORS[i % COLORS.length], pts: [] });
      win.push({ name: "node " + i, color: COLORS[i % COLORS.length], pts: [], step: true });
    }
    for (const s of st.seconds) for (const n of s.nodes) {
      if (n.node >= nodes) continue;
      bw[n.node].pts.push([s.t, n.bw / 1048576]);
      const k = wins.indexOf(n.window_us);
      if (k >= 0) win[n.node].pts.push([s.t, k + n.node * 0.06]);
    }
    chart("bw", bw, { xlabel: "time (s)" });
    chart("win", win, { xlabel: "time (s)", ymin: -0.5, ymax: wins.length - 0.5, yticks: wins.map((w, i) => [i, winLabel(w)]) });
    const byPhase = {};
    const order = [];
    for (const it of st.iterations) {
      if (!byPhase[it.phase]) { byPhase[it.phase] = []; order.push(it.phase); }
      byPhase[it.phase].push([it.k, it.seconds]);
    }
    chart("iters", order.map((p, i) => ({ name: p, color: COLORS[i % COLORS.length], pts: byPhase[p], dots: true })), { xlabel: "iteration", intx: true });
    bars("est", st.estimates, wins);
    const evs = document.getElementById("events");
    evs.replaceChildren();
    for (const e of st.events.slice(-60).reverse()) {
      const d = document.createElement("div");
      d.className = "ev-" + e.kind;
      d.textContent = `${e.t.toFixed(0).padStart(6)} s  ${e.text}`;
      evs.appendChild(d);
    }
  }

  async function poll() {
    try {
      const r = await fetch(`api/state?s=${st.next[0]}&i=${st.next[1]}&e=${st.next[2]}&max=${KEEP}`, { cache: "no-store" });
      if (!r.ok) throw new Error(r.status);
      const d = await r.json();
      st.meta = d.meta;
      st.seconds = st.seconds.concat(d.seconds || []).slice(-KEEP);
      st.iterations = st.iterations.concat(d.iterations || []);
      st.events = st.events.concat(d.events || []).slice(-500);
      st.estimates = d.estimates || [];
      st.next = d.next; st.progress = d.progress; st.done = d.done; st.elapsed = d.elapsed;
      render();
      window.adaptio.updates++;
    } catch (err) {
      window.adaptio.errors++;
      document.getElementById("status").textContent = st.done ? "finished (server gone)" : "waiting for the demo… " + err;
    }
    setTimeout(poll, st.done ? 5000 : 1000);
  }
  poll();
})();
