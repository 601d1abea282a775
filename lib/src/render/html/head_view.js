// BertViz's head view for the attn HTML view: queries in a column on the left, keys on the
// right, a line from each query to each key whose opacity is the weight, one colour per
// head (toggled by its checkbox), one layer (grid row of the model view) at a time. Hover
// a token to see only its lines. Long sequences stay responsive: a window of tokens is
// shown (wheel to zoom, drag to pan), and where tokens are denser than 2 px they are
// pooled into bins whose line is the bin pair's largest weight. Lines fainter than
// 1/64 are not drawn; the rest are drawn in one path per head and opacity step.
"use strict";
window.attnHeadView = function (ctx) {
  const { meta, panelData, groupSize, groupOf } = ctx;
  const $ = (id) => document.getElementById(id);
  const R = meta.rows, C = meta.cols, P = meta.panels.length;
  const W = 700, H = 720, TOP = 30, AREA = H - TOP - 10, XL = 190, XR = W - 190;
  const MIN_BIN_PX = 2, LABEL_PX = 11, STEPS = 32, FAINTEST = 1 / 64;
  const COLOURS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
    "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#ad494a"];
  const canvas = $("hv"), g = canvas.getContext("2d");
  canvas.width = W; canvas.height = H;
  // The window of tokens shown: the same fraction of the queries and of the keys.
  const st = { group: 0, on: [], f0: 0, f1: 1, hover: null, lines: 0, drawn: 0 };
  const pooled = new Map(); // "panel:window" -> Float32Array of bin-pair maxima
  const groups = Math.ceil(P / groupSize);

  /// Rows [q0, q1) and keys [k0, k1) of the window and their bins.
  function windowNow() {
    const q0 = Math.floor(st.f0 * R), q1 = Math.max(q0 + 1, Math.ceil(st.f1 * R));
    const k0 = Math.floor(st.f0 * C), k1 = Math.max(k0 + 1, Math.ceil(st.f1 * C));
    const side = (n) => { const per = Math.max(1, Math.ceil((n * MIN_BIN_PX) / AREA)); return { per, bins: Math.ceil(n / per) }; };
    const q = side(q1 - q0), k = side(k1 - k0);
    return { q0, q1, k0, k1, qper: q.per, qb: q.bins, kper: k.per, kb: k.bins };
  }
  /// Each (query bin, key bin)'s largest weight in panel p (masked cells count as 0).
  async function pool(p, w) {
    const key = `${p}:${w.q0}:${w.q1}:${w.k0}:${w.k1}`;
    if (pooled.has(key)) return pooled.get(key);
    const d = await panelData(p);
    const out = new Float32Array(w.qb * w.kb);
    const binOf = new Int32Array(w.k1 - w.k0);
    for (let j = w.k0; j < w.k1; j++) binOf[j - w.k0] = Math.floor((j - w.k0) / w.kper);
    // Without exact values the largest weight is the largest colour index (the colour
    // scale only grows), so the loop compares bytes and looks the value up once a bin.
    const best = d.exact ? null : new Int16Array(w.qb * w.kb).fill(-1);
    for (let i = w.q0; i < w.q1; i++) {
      const a = Math.floor((i - w.q0) / w.qper) * w.kb, row = i * C + w.k0;
      for (let j = 0; j < w.k1 - w.k0; j++) {
        const k = row + j;
        if (d.state && d.state[k] !== 0) continue;
        const b = a + binOf[j];
        if (best) { if (d.index[k] > best[b]) best[b] = d.index[k]; }
        else if (d.exact[k] > out[b]) out[b] = d.exact[k];
      }
    }
    if (best) for (let b = 0; b < out.length; b++) out[b] = best[b] < 0 ? 0 : ctx.binValue(best[b]);
    if (pooled.size > 64) pooled.delete(pooled.keys().next().value);
    pooled.set(key, out);
    return out;
  }
  const yOf = (bin, bins) => TOP + ((bin + 0.5) * AREA) / bins;
  function binAt(y, bins) {
    const b = Math.floor(((y - TOP) * bins) / AREA);
    return b >= 0 && b < bins ? b : -1;
  }
  const binText = (list, first, per, n, b) => {
    const i0 = first + b * per, i1 = Math.min(first + n, i0 + per) - 1;
    return per === 1 ? `${i0} ${ctx.tok(list, i0)}` : `${i0}\u2013${i1}`;
  };

  function drawLabels(w) {
    g.font = "11px system-ui, sans-serif"; g.textBaseline = "middle";
    const side = (list, first, n, per, bins, x, align, hovered) => {
      g.textAlign = align;
      if (AREA / bins < LABEL_PX) {
        g.fillStyle = "#555";
        g.fillText(`${first}\u2013${first + n - 1} (${per > 1 ? per + " per bin" : "1 px each"})`, x, TOP - 12);
        g.fillRect(align === "right" ? x + 2 : x - 4, TOP, 2, AREA);
        return;
      }
      for (let b = 0; b < bins; b++) {
        g.fillStyle = b === hovered ? "#d00" : "#222";
        g.fillText(ctx.label(list, first + b), x, yOf(b, bins));
      }
    };
    const h = st.hover || {};
    side(meta.rowLabels, w.q0, w.q1 - w.q0, w.qper, w.qb, XL - 6, "right", h.side === "q" ? h.bin : -1);
    side(meta.colLabels, w.k0, w.k1 - w.k0, w.kper, w.kb, XR + 6, "left", h.side === "k" ? h.bin : -1);
    g.fillStyle = "#222"; g.textAlign = "center";
    g.fillText("queries", XL - 40, 10); g.fillText("keys", XR + 40, 10);
  }

  /// Draws the lines of every head switched on (only the hovered token's when one is).
  async function draw() {
    const w = windowNow(), heads = [];
    for (let h = 0; h < groupSize; h++) {
      const p = st.group * groupSize + h;
      if (p < P && st.on[h]) heads.push([h, await pool(p, w)]);
    }
    g.fillStyle = "#fff"; g.fillRect(0, 0, W, H);
    drawLabels(w);
    g.lineWidth = Math.max(1, Math.min(2, AREA / Math.max(w.qb, w.kb) / 4));
    let lines = 0;
    const hv = st.hover;
    for (const [h, m] of heads) {
      const paths = Array.from({ length: STEPS + 1 }, () => new Path2D());
      const a0 = hv && hv.side === "q" ? hv.bin : 0, a1 = hv && hv.side === "q" ? hv.bin + 1 : w.qb;
      const b0 = hv && hv.side === "k" ? hv.bin : 0, b1 = hv && hv.side === "k" ? hv.bin + 1 : w.kb;
      for (let a = a0; a < a1; a++) {
        const y0 = yOf(a, w.qb);
        for (let b = b0; b < b1; b++) {
          const v = m[a * w.kb + b];
          if (!(v >= FAINTEST)) continue;
          const s = Math.min(STEPS, Math.round(v * STEPS));
          paths[s].moveTo(XL, y0); paths[s].lineTo(XR, yOf(b, w.kb));
          lines++;
        }
      }
      g.strokeStyle = COLOURS[h % COLOURS.length];
      for (let s = 1; s <= STEPS; s++) { g.globalAlpha = s / STEPS; g.stroke(paths[s]); }
      g.globalAlpha = 1;
    }
    st.lines = lines; st.drawn++;
    $("hvinfo").textContent = hv
      ? `${hv.side === "q" ? "query" : "key"} ${hv.text}: ${lines} line${lines === 1 ? "" : "s"} of ${heads.length} head${heads.length === 1 ? "" : "s"}`
      : `${lines} lines of ${heads.length} head${heads.length === 1 ? "" : "s"} (weights \u2265 ${FAINTEST}); queries ${w.q0}\u2013${w.q1 - 1}, keys ${w.k0}\u2013${w.k1 - 1}` +
        (w.qper > 1 || w.kper > 1 ? `, max-pooled ${w.qper}\u00d7${w.kper} tokens per line` : "") +
        "; hover a token, wheel to zoom, drag to pan";
  }
  const redraw = () => draw().catch(ctx.fail);

  function buildToggles() {
    const box = $("hvheads");
    box.textContent = "";
    for (let h = 0; h < groupSize && st.group * groupSize + h < P; h++) {
      const l = document.createElement("label"), c = document.createElement("input");
      c.type = "checkbox"; c.checked = st.on[h]; c.dataset.head = h;
      c.addEventListener("change", () => { st.on[h] = c.checked; redraw(); });
      l.style.color = COLOURS[h % COLOURS.length];
      const title = meta.panels[st.group * groupSize + h];
      l.appendChild(c); l.appendChild(document.createTextNode(title.split(" \u00b7 ").pop()));
      box.appendChild(l);
    }
  }
  function setGroup(gr) {
    if (gr === st.group && st.on.length) return;
    st.group = gr; st.on = Array.from({ length: groupSize }, () => true);
    $("hvlayer").value = String(gr);
    buildToggles();
  }

  // Controls: the layer picker (grid rows), zoom with the wheel, pan by dragging, hover.
  const sel = $("hvlayer");
  for (let gr = 0; gr < groups; gr++) {
    const t = meta.panels[gr * groupSize].split(" \u00b7 ");
    sel.add(new Option(groups > 1 && t.length > 1 ? t.slice(0, -1).join(" \u00b7 ") : "all panels", String(gr)));
  }
  $("hvlayerbox").hidden = groups < 2;
  sel.addEventListener("change", () => { setGroup(Number(sel.value)); redraw(); });
  const pos = (e) => { const r = canvas.getBoundingClientRect(); return [e.clientX - r.left, e.clientY - r.top]; };
  let drag = null;
  canvas.addEventListener("mousemove", (e) => {
    const [x, y] = pos(e);
    if (drag && e.buttons & 1) {
      const df = ((drag.y - y) / AREA) * (st.f1 - st.f0);
      const d = Math.max(-st.f0, Math.min(1 - st.f1, df));
      if (Math.abs(d) * Math.max(R, C) >= 1) { st.f0 += d; st.f1 += d; drag.y = y; redraw(); }
      return;
    }
    const w = windowNow();
    let hv = null;
    if (x < XL + 20) { const b = binAt(y, w.qb); if (b >= 0) hv = { side: "q", bin: b, text: binText(meta.rowLabels, w.q0, w.qper, w.q1 - w.q0, b) }; }
    else if (x > XR - 20) { const b = binAt(y, w.kb); if (b >= 0) hv = { side: "k", bin: b, text: binText(meta.colLabels, w.k0, w.kper, w.k1 - w.k0, b) }; }
    const same = (a, b) => (a === null ? b === null : b !== null && a.side === b.side && a.bin === b.bin);
    if (!same(hv, st.hover)) { st.hover = hv; redraw(); }
  });
  canvas.addEventListener("mouseleave", () => { if (st.hover) { st.hover = null; redraw(); } });
  canvas.addEventListener("mousedown", (e) => { drag = { y: pos(e)[1] }; });
  window.addEventListener("mouseup", () => { drag = null; });
  canvas.addEventListener("wheel", (e) => {
    e.preventDefault();
    const y = pos(e)[1], at = st.f0 + ((y - TOP) / AREA) * (st.f1 - st.f0);
    const span = Math.min(1, Math.max(4 / Math.max(R, C), (st.f1 - st.f0) * (e.deltaY < 0 ? 0.5 : 2)));
    const f = (at - st.f0) / (st.f1 - st.f0);
    st.f0 = Math.max(0, Math.min(1 - span, at - f * span)); st.f1 = st.f0 + span;
    st.hover = null; redraw();
  }, { passive: false });
  $("hvwhole").addEventListener("click", () => { st.f0 = 0; st.f1 = 1; st.hover = null; redraw(); });

  setGroup(0);
  return {
    draw, setGroup, state: st,
    /// For tests: the page position of token bin b on side "q" or "k".
    tokenCenter(side, b) {
      const r = canvas.getBoundingClientRect(), w = windowNow();
      return { x: r.left + (side === "q" ? XL - 10 : XR + 10), y: r.top + yOf(b, side === "q" ? w.qb : w.kb) };
    },
    /// For tests: the page position a fraction t along the line from query bin a to key bin b.
    linePoint(a, b, t) {
      const r = canvas.getBoundingClientRect(), w = windowNow();
      const y0 = yOf(a, w.qb), y1 = yOf(b, w.kb);
      return { x: r.left + XL + t * (XR - XL), y: r.top + y0 + t * (y1 - y0) };
    },
    setWindow(f0, f1) { st.f0 = f0; st.f1 = f1; return draw(); },
    groupOf,
  };
};
