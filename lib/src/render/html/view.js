// The attn HTML view: thumbnails of every panel (the model view: a row per layer), one
// large map on <canvas> (pooled overview, zoom into full resolution), hover details, the
// selected query row as bars and top-k, and BertViz's head view (head_view.js). Colours are
// the per-cell colormap indices attn computed (the PNG's rule), looked up in matplotlib's
// tables; nothing is fetched from anywhere. Each panel's cells are decoded from its own
// element when first shown and kept in a small cache; the thumbnails come pooled.
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const meta = JSON.parse($("meta").textContent);
  const R = meta.rows, C = meta.cols, P = meta.panels.length, plane = R * C;
  const MAP = 640, LEFT = 96, TOP = 96; // map area and label margins, CSS px
  const LABEL_MIN_PITCH = 11;           // px per cell at which every label is drawn
  const HATCH_BG = [242, 242, 242], HATCH_LINE = [150, 150, 150];
  // The shown panel's cells: colour index, state (0 value, 1 masked, 2 NaN) and exact
  // float32 weights per cell i * C + j (state and exact may be null).
  let index = null, state = null, exact = null;
  const view = { panel: 0, r0: 0, c0: 0, nr: R, nc: C, row: -1, pool: meta.pool, tab: "map" };
  // binValue[b]: the weight at the middle of colour bin b (what a cell without an exact
  // value shows).
  let lut = null, layout = null, thumbs = null, binValue = null;
  const TW = meta.thumbW, TH = meta.thumbH;
  // Panels longer than 4096 (meta.long): pooled levels and each row's top-k keys instead
  // of cells; `lp` is the shown panel's (long.js-style helpers below).
  const LONG = meta.long || null;
  let lp = null, drawGen = 0, longLevel = -1;

  function bytesOf(text) {
    const bin = atob(text.trim());
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  }
  async function inflate(id) {
    const text = $(id).textContent;
    if (text.trim() === "") return null;
    const stream = new Blob([bytesOf(text)]).stream().pipeThrough(new DecompressionStream("deflate"));
    return new Uint8Array(await new Response(stream).arrayBuffer());
  }

  // ---- panels, decoded on demand ---------------------------------------------------------
  const CACHE_CELLS = 48 * 1024 * 1024; // decoded cells kept (LRU) before panels are dropped
  const cache = new Map(); // panel -> {index, state, exact}
  async function panelData(p) {
    if (LONG) return { index: null, state: null, exact: null, long: longPanel(p) };
    if (cache.has(p)) { const d = cache.get(p); cache.delete(p); cache.set(p, d); return d; }
    const raw = await inflate("p" + p);
    const n = (1 + (meta.hasState ? 1 : 0) + (meta.exact ? 4 : 0)) * plane;
    if (!raw || raw.length !== n) throw new Error("attn view: the weights of panel " + p + " are damaged");
    const d = { index: raw.subarray(0, plane), state: meta.hasState ? raw.subarray(plane, 2 * plane) : null, exact: null };
    if (meta.exact) {
      const o = (meta.hasState ? 2 : 1) * plane;
      d.exact = new Float32Array(raw.buffer.slice(raw.byteOffset + o, raw.byteOffset + o + 4 * plane));
    }
    cache.set(p, d);
    while (cache.size > 1 && cache.size * plane > CACHE_CELLS) cache.delete(cache.keys().next().value);
    return d;
  }

  // ---- colours -------------------------------------------------------------------
  function tableLut(name, reversed) {
    const t = bytesOf(meta.tables[name]), out = new Uint8Array(256 * 3);
    for (let i = 0; i < 256; i++) {
      const k = reversed ? 255 - i : i;
      out.set(t.subarray(k * 3, k * 3 + 3), i * 3);
    }
    return out;
  }
  // A panel with a colour scale of its own (meta.panelScales[p]: attn compare's A - B) keeps
  // its colormap and range whatever the menu says; the others take the menu's colormap and
  // the page's range. The shown panel's scale is the one norm, the colorbar and hover use.
  const BASE_SCALE = { vmin: meta.vmin, vmax: meta.vmax, scale: meta.scale, ticks: meta.ticks };
  const ownScale = (p) => (meta.panelScales && meta.panelScales[p]) || null;
  let baseLut = null;
  const ownLuts = new Map();
  function lutOf(p) {
    const s = ownScale(p);
    if (!s) return baseLut;
    if (!ownLuts.has(p)) ownLuts.set(p, tableLut(s.cmap, s.reversed));
    return ownLuts.get(p);
  }
  function setColormap(name, reversed) {
    baseLut = tableLut(name, reversed);
    lut = lutOf(view.panel);
  }
  function useScale(p) {
    const s = ownScale(p) || BASE_SCALE;
    meta.vmin = s.vmin; meta.vmax = s.vmax; meta.scale = s.scale || "linear"; meta.ticks = s.ticks;
    lut = lutOf(p);
    for (let b = 0; b < 256; b++) binValue[b] = unnorm((b + 0.5) / 256);
    drawColorbar();
  }
  function norm(v) {
    if (meta.scale === "log") {
      return v > 0 ? (Math.log10(v) - Math.log10(meta.vmin)) / (Math.log10(meta.vmax) - Math.log10(meta.vmin)) : -Infinity;
    }
    return (v - meta.vmin) / (meta.vmax - meta.vmin);
  }
  function unnorm(t) {
    if (meta.scale === "log") {
      const a = Math.log10(meta.vmin), b = Math.log10(meta.vmax);
      return Math.pow(10, a + t * (b - a));
    }
    return meta.vmin + t * (meta.vmax - meta.vmin);
  }
  function fmt(v) {
    if (!isFinite(v)) return String(v);
    return String(parseFloat(v.toPrecision(7)));
  }
  const stateAt = (k) => (state ? state[k] : 0);
  /// The weight of cell k as text: exact when stored, else the colour bin it falls in.
  function valueText(k) {
    if (exact) return fmt(exact[k]);
    const b = index[k];
    const lo = b === 0 ? "\u2264" + fmt(unnorm(1 / 256)) : fmt(unnorm(b / 256));
    return b === 0 ? lo : b === 255 ? "\u2265" + fmt(unnorm(255 / 256)) : "\u2248" + lo + "\u2013" + fmt(unnorm((b + 1) / 256));
  }
  function valueOf(k) {
    return exact ? exact[k] : unnorm((index[k] + 0.5) / 256);
  }


  // ---- long panels: levels and top-k, decoded by band on demand --------------------------
  const longPanels = new Map();
  function longPanel(p) {
    if (!longPanels.has(p)) longPanels.set(p, { p, bands: new Map(), topk: new Map() });
    return longPanels.get(p);
  }
  /// The pixel of an n-cell axis drawn with `side` pixels that holds cell i (the builder's rule).
  const pixOf = (i, n, side) => Math.floor(((i + 1) * side - 1) / n);
  const BAND_CELLS = 32 * 1024 * 1024; // decoded level bytes kept (LRU) across panels
  let bandBytes = 0;
  const bandLru = new Map();
  async function band(d, l, b) {
    const key = d.p + ":" + l + ":" + b;
    if (bandLru.has(key)) { const v = bandLru.get(key); bandLru.delete(key); bandLru.set(key, v); return v; }
    const raw = await inflate(`p${d.p}L${l}B${b}`);
    const [h, w] = LONG.levels[l], rows = Math.min(LONG.bandRows, h - b * LONG.bandRows);
    if (!raw || raw.length !== 3 * rows * w) throw new Error(`attn view: level ${l} of panel ${d.p} is damaged`);
    const v = { max: raw.subarray(0, rows * w), mean: raw.subarray(rows * w, 2 * rows * w), state: raw.subarray(2 * rows * w), w };
    bandLru.set(key, v); bandBytes += raw.length;
    while (bandLru.size > 1 && bandBytes > BAND_CELLS) {
      const k = bandLru.keys().next().value;
      bandBytes -= 3 * bandLru.get(k).max.length; bandLru.delete(k);
    }
    return v;
  }
  /// Level l's pixel rows [y0, y1] of panel d: a function (y, x) -> {max, mean, state}.
  async function levelRows(d, l, y0, y1) {
    const B = LONG.bandRows, got = new Map();
    for (let b = Math.floor(y0 / B); b <= Math.floor(y1 / B); b++) got.set(b, await band(d, l, b));
    return (y, x) => {
      const v = got.get(Math.floor(y / B)), k = (y % B) * v.w + x;
      return [v.max[k], v.mean[k], v.state[k]];
    };
  }
  /// Row i's strongest keys, strongest first: [{key, w}] (f16 weights as numbers).
  async function topKeys(d, i) {
    const b = Math.floor(i / LONG.topKRows);
    if (!d.topk.has(b)) {
      const raw = await inflate(`p${d.p}K${b}`);
      const rows = Math.min(LONG.topKRows, R - b * LONG.topKRows), K = LONG.topK, ib = LONG.indexBytes;
      if (!raw || raw.length !== rows * K * (ib + 2)) throw new Error(`attn view: the top-k lists of panel ${d.p} are damaged`);
      const dv = new DataView(raw.buffer, raw.byteOffset, raw.length);
      d.topk.set(b, { dv, rows, K, ib, wAt: rows * K * ib });
    }
    const t = d.topk.get(b), r = i - b * LONG.topKRows, out = [];
    const none = t.ib === 2 ? 0xffff : 0xffffffff;
    for (let q = 0; q < t.K; q++) {
      const o = r * t.K + q;
      const key = t.ib === 2 ? t.dv.getUint16(o * 2, true) : t.dv.getUint32(o * 4, true);
      if (key === none) break;
      out.push({ key, w: half(t.dv.getUint16(t.wAt + o * 2, true)) });
    }
    return out;
  }
  function half(h) {
    const s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 31, m = h & 1023;
    if (e === 0) return s * m * Math.pow(2, -24);
    if (e === 31) return m ? NaN : s * Infinity;
    return s * (1 + m / 1024) * Math.pow(2, e - 15);
  }
  /// The colour index of weight v (matplotlib's rule, as attn's PNG).
  function colourIndex(v) {
    const t = norm(v);
    if (!(t > 0)) return 0;
    const x = t * 256;
    return x >= 255 ? 255 : Math.floor(x);
  }
  /// The coarsest level whose pixels are no larger than the screen's (rows and keys per
  /// screen pixel at least 1): what a region of nr x nc cells drawn h x w px needs.
  function levelFor(nr, nc, h, w) {
    const lv = LONG.levels;
    for (let l = lv.length - 1; l >= 0; l--) {
      if (R / lv[l][0] <= Math.max(1, nr / h) && C / lv[l][1] <= Math.max(1, nc / w)) return l;
    }
    return 0;
  }
  /// Draws the region from a level (pooled zoom) or, at full zoom, level 0 with each row's
  /// top-k keys at their exact colour.
  async function drawLong() {
    const gen = ++drawGen, d = lp, lay = layout;
    const full = lay.f === 1, l = full ? 0 : levelFor(view.nr, view.nc, lay.h, lay.w);
    const [lh, lw] = LONG.levels[l];
    const y0 = pixOf(view.r0, R, lh), y1 = pixOf(view.r0 + view.nr - 1, R, lh);
    const at = await levelRows(d, l, y0, y1);
    const tops = new Map();
    if (full) for (let i = view.r0; i < view.r0 + view.nr; i++) tops.set(i, await topKeys(d, i));
    if (gen !== drawGen) return;
    longLevel = l;
    const img = new ImageData(lay.w, lay.h), px = img.data, mean = view.pool === "mean";
    const put = (o, c) => { px[o] = c[0]; px[o + 1] = c[1]; px[o + 2] = c[2]; px[o + 3] = 255; };
    const lutAt = (b) => [lut[b * 3], lut[b * 3 + 1], lut[b * 3 + 2]];
    if (full) {
      const cell = lay.cell;
      for (let y = 0; y < lay.h; y++) {
        const i = view.r0 + Math.floor(y / cell), ly = pixOf(i, R, lh);
        const exactAt = new Map(tops.get(i).map((t) => [t.key, t.w]));
        for (let x = 0; x < lay.w; x++) {
          const j = view.c0 + Math.floor(x / cell), o = (y * lay.w + x) * 4;
          if (exactAt.has(j)) { put(o, lutAt(colourIndex(exactAt.get(j)))); continue; }
          const [mx, mn, st] = at(ly, pixOf(j, C, lw));
          put(o, st ? ((x + y) % 6 < 1 ? HATCH_LINE : HATCH_BG) : lutAt(mean ? mn : mx));
        }
      }
    } else {
      const xs = [];
      for (let x = 0; x < lay.w; x++) {
        const j0 = view.c0 + Math.floor((x * view.nc) / lay.w);
        const j1 = Math.max(j0 + 1, view.c0 + Math.floor(((x + 1) * view.nc) / lay.w));
        xs.push([pixOf(j0, C, lw), pixOf(j1 - 1, C, lw)]);
      }
      for (let y = 0; y < lay.h; y++) {
        const i0 = view.r0 + Math.floor((y * view.nr) / lay.h);
        const i1 = Math.max(i0 + 1, view.r0 + Math.floor(((y + 1) * view.nr) / lay.h));
        const ya = pixOf(i0, R, lh), yb = pixOf(i1 - 1, R, lh);
        for (let x = 0; x < lay.w; x++) {
          let best = -1, sum = 0, n = 0;
          for (let ly = ya; ly <= yb; ly++) for (let lx = xs[x][0]; lx <= xs[x][1]; lx++) {
            const [mx, mn, st] = at(ly, lx);
            if (st) continue;
            if (mx > best) best = mx;
            sum += mn; n++;
          }
          const o = (y * lay.w + x) * 4;
          put(o, n === 0 ? ((x + y) % 6 < 1 ? HATCH_LINE : HATCH_BG) : lutAt(mean ? Math.floor(sum / n + 0.5) : best));
        }
      }
    }
    ctx.putImageData(img, LEFT, TOP);
    ctx.strokeStyle = "#000";
    ctx.strokeRect(LEFT - 0.5, TOP - 0.5, lay.w + 1, lay.h + 1);
    if (view.row >= view.r0 && view.row < view.r0 + view.nr) {
      ctx.strokeStyle = "#e00";
      ctx.strokeRect(LEFT - 0.5, TOP + (view.row - view.r0) * lay.cell - 0.5, lay.w + 1, Math.max(1, lay.cell) + 1);
    }
    $("zoominfo").textContent += ` \u00b7 level ${l} (${lh}\u00d7${lw})` + (full ? `, top-${LONG.topK} keys exact` : "");
    $("map").dataset.drawn = String(gen);
  }
  /// The upper edge of colour bin b (what a pooled max promises of the cells under it).
  const binTop = (b) => (b >= 255 ? meta.vmax : unnorm((b + 1) / 256));
  async function hoverLong(b) {
    const d = lp, l0 = LONG.levels[0];
    if (b.i1 - b.i0 === 1 && b.j1 - b.j0 === 1) {
      const i = b.i0, j = b.j0, tops = await topKeys(d, i);
      const head = `${meta.panels[view.panel]}\nquery ${i} ${tok(meta.rowLabels, i)} \u2192 key ${j} ${tok(meta.colLabels, j)}\n`;
      const hit = tops.find((t) => t.key === j);
      if (hit) return head + `weight ${fmt(hit.w)} (exact: one of this row's ${LONG.topK} strongest keys, float16)`;
      const at = await levelRows(d, 0, pixOf(i, R, l0[0]), pixOf(i, R, l0[0]));
      const [mx, , st] = at(pixOf(i, R, l0[0]), pixOf(j, C, l0[1]));
      if (st) return head + "masked";
      const kth = tops.length === LONG.topK ? tops[tops.length - 1].w : Infinity;
      return head + `weight \u2264 ${fmt(Math.min(kth, binTop(mx)))} (not among this row's ${LONG.topK} strongest keys, or masked: ` +
        `the map shows the pooled bound of its ${Math.ceil(R / l0[0])}\u00d7${Math.ceil(C / l0[1])} block)`;
    }
    const l = longLevel < 0 ? 0 : longLevel, [lh, lw] = LONG.levels[l];
    const ya = pixOf(b.i0, R, lh), yb = pixOf(b.i1 - 1, R, lh), xa = pixOf(b.j0, C, lw), xb = pixOf(b.j1 - 1, C, lw);
    const at = await levelRows(d, l, ya, yb);
    let best = -1;
    for (let y = ya; y <= yb; y++) for (let x = xa; x <= xb; x++) { const [mx, , st] = at(y, x); if (!st && mx > best) best = mx; }
    return `${meta.panels[view.panel]}\nqueries ${b.i0}\u2013${b.i1 - 1} \u00d7 keys ${b.j0}\u2013${b.j1 - 1} (level ${l}: ${lh}\u00d7${lw} pooled; zoom in for cells)\n` +
      (best < 0 ? "masked" : `max weight ${valueTextBin(best)}`);
  }
  function valueTextBin(b) {
    return b === 0 ? "\u2264" + fmt(unnorm(1 / 256)) : b === 255 ? "\u2265" + fmt(unnorm(255 / 256)) : "\u2248" + fmt(unnorm(b / 256)) + "\u2013" + fmt(unnorm((b + 1) / 256));
  }
  async function drawRowLong() {
    const bars = $("bars"), g = bars.getContext("2d"), list = $("topk");
    g.fillStyle = "#fff"; g.fillRect(0, 0, bars.width, bars.height);
    list.textContent = "";
    if (view.row < 0) { $("rowtitle").textContent = "Click a query row of the map to see its strongest keys here."; return; }
    const i = view.row, tops = await topKeys(lp, i);
    $("rowtitle").textContent = `query ${i} ${tok(meta.rowLabels, i)}: its ${tops.length} strongest of ${C} keys (exact, float16)`;
    const top = tops.length ? tops[0].w : 0, h = bars.height - 14;
    for (const t of tops) {
      const b = colourIndex(t.w) * 3;
      g.fillStyle = `rgb(${lut[b]},${lut[b + 1]},${lut[b + 2]})`;
      const bh = top > 0 ? (t.w / top) * h : 0;
      g.fillRect(Math.floor((t.key * bars.width) / C), h - bh, 2, bh);
    }
    g.fillStyle = "#555"; g.font = "10px system-ui, sans-serif";
    g.fillText(`max ${fmt(top)}; keys 0\u2013${C - 1} across`, 2, bars.height - 2);
    for (const t of tops.slice(0, 10)) {
      const li = document.createElement("li");
      li.textContent = `key ${t.key} ${tok(meta.colLabels, t.key)}  ${fmt(t.w)}`;
      list.appendChild(li);
    }
  }

  // ---- pooled pixels of a region -------------------------------------------------
  /// RGBA pixels for rows [r0, r0+nr) x cols [c0, c0+nc) of a panel drawn w x h px, each
  /// pixel the max (or mean) colour index of the cells whose block it shows; blocks whose
  /// cells are all masked are hatched as in the PNG.
  function regionPixels(r0, c0, nr, nc, w, h, pool) {
    const img = new ImageData(w, h);
    const px = img.data, base = 0;
    const acc = new Float64Array(w), cnt = new Uint32Array(w), bad = new Uint8Array(w);
    const colOf = new Int32Array(nc);
    for (let j = 0; j < nc; j++) colOf[j] = Math.min(w - 1, Math.floor((j * w) / nc));
    const mean = pool === "mean";
    for (let y = 0; y < h; y++) {
      const i0 = r0 + Math.floor((y * nr) / h), i1 = Math.max(i0 + 1, r0 + Math.floor(((y + 1) * nr) / h));
      acc.fill(mean ? 0 : -1); cnt.fill(0); bad.fill(0);
      for (let i = i0; i < i1; i++) {
        const row = base + i * C + c0;
        for (let j = 0; j < nc; j++) {
          const k = row + j, x = colOf[j];
          if (state && state[k] !== 0) { bad[x] = state[k]; continue; }
          const v = index[k];
          if (mean) acc[x] += v; else if (v > acc[x]) acc[x] = v;
          cnt[x]++;
        }
      }
      for (let x = 0; x < w; x++) {
        const o = (y * w + x) * 4;
        let c;
        if (cnt[x] === 0) {
          c = (x + y) % 6 < 1 ? HATCH_LINE : HATCH_BG;
          px[o] = c[0]; px[o + 1] = c[1]; px[o + 2] = c[2];
        } else {
          const b = mean ? Math.floor(acc[x] / cnt[x] + 0.5) : acc[x];
          px[o] = lut[b * 3]; px[o + 1] = lut[b * 3 + 1]; px[o + 2] = lut[b * 3 + 2];
        }
        px[o + 3] = 255;
      }
    }
    return img;
  }

  // ---- the large map ----------------------------------------------------------------
  /// Where the current region lands: cell pitch (>= 1 px, integer) or a pooled factor.
  function computeLayout() {
    const big = Math.max(view.nr, view.nc);
    if (big <= MAP) {
      const cell = Math.floor(MAP / big);
      return { cell, f: 1, w: cell * view.nc, h: cell * view.nr };
    }
    const f = Math.ceil(big / MAP);
    return { cell: 1 / f, f, w: Math.ceil(view.nc / f), h: Math.ceil(view.nr / f) };
  }
  const map = $("map"), ctx = map.getContext("2d");
  map.width = LEFT + MAP + 8; map.height = TOP + MAP + 8;

  function drawMap() {
    layout = computeLayout();
    ctx.fillStyle = "#fff";
    ctx.fillRect(0, 0, map.width, map.height);
    if (LONG) {
      drawLabels();
      zoomInfo();
      drawLong().catch(fail);
      return;
    }
    let img;
    if (layout.f === 1) {
      // Full resolution: one colour per cell, hatch per screen pixel.
      img = new ImageData(layout.w, layout.h);
      const px = img.data, base = 0, cell = layout.cell;
      for (let y = 0; y < layout.h; y++) {
        const i = view.r0 + Math.floor(y / cell);
        for (let x = 0; x < layout.w; x++) {
          const k = base + i * C + view.c0 + Math.floor(x / cell), o = (y * layout.w + x) * 4;
          const c = stateAt(k) !== 0 ? ((x + y) % 6 < 1 ? HATCH_LINE : HATCH_BG) : null;
          if (c) { px[o] = c[0]; px[o + 1] = c[1]; px[o + 2] = c[2]; }
          else { const b = index[k] * 3; px[o] = lut[b]; px[o + 1] = lut[b + 1]; px[o + 2] = lut[b + 2]; }
          px[o + 3] = 255;
        }
      }
    } else {
      img = regionPixels(view.r0, view.c0, view.nr, view.nc, layout.w, layout.h, view.pool);
    }
    ctx.putImageData(img, LEFT, TOP);
    ctx.strokeStyle = "#000";
    ctx.strokeRect(LEFT - 0.5, TOP - 0.5, layout.w + 1, layout.h + 1);
    if (view.row >= view.r0 && view.row < view.r0 + view.nr) {
      const y = TOP + (view.row - view.r0) * layout.cell;
      ctx.strokeStyle = "#e00";
      ctx.strokeRect(LEFT - 0.5, y - 0.5, layout.w + 1, Math.max(1, layout.cell) + 1);
    }
    drawLabels();
    zoomInfo();
  }
  function zoomInfo() {
    const pooled = layout.f > 1 ? `${view.pool}-pooled ${layout.f}\u00d7${layout.f}, ` : "";
    $("zoominfo").textContent = `${meta.panels[view.panel]} \u00b7 queries ${view.r0}\u2013${view.r0 + view.nr - 1}, keys ${view.c0}\u2013${view.c0 + view.nc - 1} (${pooled}${R}\u00d7${C} in all)`;
    document.querySelectorAll(".thumb").forEach((t, p) => t.classList.toggle("current", p === view.panel));
  }

  function label(list, i) {
    const s = list.length ? list[i] : String(i);
    return s.length > 14 ? s.slice(0, 13) + "\u2026" : s;
  }
  function drawLabels() {
    ctx.fillStyle = "#222";
    ctx.font = "11px system-ui, sans-serif";
    if (layout.cell < LABEL_MIN_PITCH) {
      ctx.textAlign = "left";
      ctx.fillText(`labels: ${layout.cell >= 1 ? layout.cell + " px" : "1/" + layout.f + " px"} per token is too small to read; zoom in (wheel or +) \u2014 hover names every cell`, LEFT, TOP - 8);
      ctx.save(); ctx.translate(LEFT - 8, TOP + layout.h); ctx.rotate(-Math.PI / 2);
      ctx.fillText(`Queries ${view.r0}\u2013${view.r0 + view.nr - 1}`, 0, 0); ctx.restore();
      return;
    }
    ctx.textAlign = "right"; ctx.textBaseline = "middle";
    for (let i = 0; i < view.nr; i++) {
      ctx.fillText(label(meta.rowLabels, view.r0 + i), LEFT - 4, TOP + (i + 0.5) * layout.cell);
    }
    for (let j = 0; j < view.nc; j++) {
      ctx.save();
      ctx.translate(LEFT + (j + 0.5) * layout.cell, TOP - 4);
      ctx.rotate(-Math.PI / 2); ctx.textAlign = "left";
      ctx.fillText(label(meta.colLabels, view.c0 + j), 0, 0);
      ctx.restore();
    }
    ctx.textBaseline = "alphabetic";
  }

  /// The cell block under a canvas point, or null: rows [i0, i1) x cols [j0, j1).
  function blockAt(x, y) {
    const mx = x - LEFT, my = y - TOP;
    if (!layout || mx < 0 || my < 0 || mx >= layout.w || my >= layout.h) return null;
    if (layout.f === 1) {
      const i = view.r0 + Math.floor(my / layout.cell), j = view.c0 + Math.floor(mx / layout.cell);
      return { i0: i, i1: i + 1, j0: j, j1: j + 1 };
    }
    const px = Math.floor(mx), py = Math.floor(my);
    const i0 = view.r0 + Math.floor((py * view.nr) / layout.h), j0 = view.c0 + Math.floor((px * view.nc) / layout.w);
    return {
      i0, i1: Math.max(i0 + 1, view.r0 + Math.floor(((py + 1) * view.nr) / layout.h)),
      j0, j1: Math.max(j0 + 1, view.c0 + Math.floor(((px + 1) * view.nc) / layout.w)),
    };
  }
  const tok = (list, i) => (list.length ? JSON.stringify(list[i]) : "");

  function hoverText(b) {
    const base = 0;
    if (b.i1 - b.i0 === 1 && b.j1 - b.j0 === 1) {
      const k = base + b.i0 * C + b.j0;
      const st = stateAt(k);
      return `${meta.panels[view.panel]}\nquery ${b.i0} ${tok(meta.rowLabels, b.i0)} \u2192 key ${b.j0} ${tok(meta.colLabels, b.j0)}\n` +
        (st === 1 ? "masked" : st === 2 ? "NaN" : `weight ${valueText(k)}`);
    }
    let best = -1, bk = -1, masked = 0;
    for (let i = b.i0; i < b.i1; i++) for (let j = b.j0; j < b.j1; j++) {
      const k = base + i * C + j;
      if (stateAt(k) !== 0) { masked++; continue; }
      const v = valueOf(k);
      if (v > best) { best = v; bk = k; }
    }
    const n = (b.i1 - b.i0) * (b.j1 - b.j0);
    const where = bk < 0 ? "" : ` at query ${Math.floor((bk - base) / C)}, key ${(bk - base) % C}`;
    return `${meta.panels[view.panel]}\nqueries ${b.i0}\u2013${b.i1 - 1} \u00d7 keys ${b.j0}\u2013${b.j1 - 1} (${n} cells, zoom in for one)\n` +
      (bk < 0 ? "masked" : `max weight ${valueText(bk)}${where}` + (masked ? `, ${masked} masked` : ""));
  }

  // ---- the selected query row ---------------------------------------------------------
  function drawRow() {
    if (LONG) { drawRowLong().catch(fail); return; }
    const bars = $("bars"), g = bars.getContext("2d");
    g.fillStyle = "#fff"; g.fillRect(0, 0, bars.width, bars.height);
    const list = $("topk");
    list.textContent = "";
    if (view.row < 0) {
      $("rowtitle").textContent = "Click a query row of the map to see its weights over the keys here.";
      return;
    }
    const i = view.row, base = i * C;
    $("rowtitle").textContent = `query ${i} ${tok(meta.rowLabels, i)}: weights over ${C} keys` + (exact ? "" : " (8-bit colour bins)");
    const vals = new Float64Array(C);
    let top = 0;
    for (let j = 0; j < C; j++) {
      vals[j] = stateAt(base + j) !== 0 ? NaN : valueOf(base + j);
      if (vals[j] > top) top = vals[j];
    }
    const w = bars.width, h = bars.height - 14;
    const perPx = Math.max(1, Math.ceil(C / w)), bw = perPx === 1 ? Math.max(1, Math.floor(w / C)) : 1;
    for (let x = 0, j = 0; j < C; x++, j += perPx) {
      let m = 0;
      for (let q = j; q < Math.min(C, j + perPx); q++) if (vals[q] > m) m = vals[q];
      const b = index[base + j] * 3;
      g.fillStyle = `rgb(${lut[b]},${lut[b + 1]},${lut[b + 2]})`;
      const bh = top > 0 ? (m / top) * h : 0;
      g.fillRect(x * bw, h - bh, Math.max(1, bw - (bw > 3 ? 1 : 0)), bh);
    }
    g.fillStyle = "#555"; g.font = "10px system-ui, sans-serif";
    g.fillText(`max ${fmt(top)}` + (perPx > 1 ? `, ${perPx} keys per px (max)` : ""), 2, bars.height - 2);
    const order = Array.from({ length: C }, (_, j) => j).filter((j) => !isNaN(vals[j]));
    order.sort((a, b) => vals[b] - vals[a] || a - b);
    for (const j of order.slice(0, 10)) {
      const li = document.createElement("li");
      li.textContent = `key ${j} ${tok(meta.colLabels, j)}  ${valueText(base + j)}`;
      list.appendChild(li);
    }
  }

  // ---- thumbnails and colorbar -----------------------------------------------------------
  function drawThumbs() {
    const box = $("heads");
    if (!box.children.length) {
      // The model view: one row of thumbnails per layer, one column per head.
      if (meta.gridCols > 0) box.style.gridTemplateColumns = `repeat(${Math.min(meta.gridCols, P)}, 84px)`;
      for (let p = 0; p < P; p++) {
        const d = document.createElement("div");
        d.className = "thumb"; d.title = `${meta.panels[p]} (key ${p + 1 <= 9 ? p + 1 : "\u2190/\u2192"})`;
        const c = document.createElement("canvas");
        d.appendChild(c); d.appendChild(document.createTextNode(meta.panels[p]));
        d.addEventListener("click", () => openPanel(p));
        box.appendChild(d);
      }
    }
    const n = TW * TH, from = view.pool === "mean" ? P * n : 0, st = 2 * P * n;
    for (let p = 0; p < P; p++) {
      const c = box.children[p].querySelector("canvas"), lut = lutOf(p);
      c.width = TW; c.height = TH;
      const img = new ImageData(TW, TH), px = img.data;
      for (let q = 0; q < n; q++) {
        const x = q % TW, y = (q - x) / TW, o = q * 4;
        if (meta.hasState && thumbs[st + p * n + q]) {
          const h = (x + y) % 6 < 1 ? HATCH_LINE : HATCH_BG;
          px[o] = h[0]; px[o + 1] = h[1]; px[o + 2] = h[2];
        } else {
          const b = thumbs[from + p * n + q] * 3;
          px[o] = lut[b]; px[o + 1] = lut[b + 1]; px[o + 2] = lut[b + 2];
        }
        px[o + 3] = 255;
      }
      c.getContext("2d").putImageData(img, 0, 0);
    }
  }
  function drawColorbar() {
    const cb = $("colorbar"), g = cb.getContext("2d"), h = 240;
    g.fillStyle = "#fff"; g.fillRect(0, 0, cb.width, cb.height);
    for (let y = 0; y < h; y++) {
      const b = (255 - Math.floor((y * 256) / h)) * 3;
      g.fillStyle = `rgb(${lut[b]},${lut[b + 1]},${lut[b + 2]})`;
      g.fillRect(0, y + 8, 14, 1);
    }
    // Ticks as the PNG's colorbar has them (meta.ticks: [position from the bottom, label]).
    g.fillStyle = "#222"; g.font = "10px system-ui, sans-serif";
    for (const [t, label] of meta.ticks) {
      const y = Math.round(8 + h * (1 - t));
      g.fillRect(14, y, 4, 1);
      g.fillText(label, 20, Math.min(h + 8, Math.max(12, y + 4)));
    }
    if (meta.scale === "log") g.fillText("log scale", 20, h + 20);
  }
  function redraw() {
    if (view.tab === "head") { headView.draw(); return; }
    drawMap(); drawRow();
  }

  // ---- interaction -------------------------------------------------------------------------
  /// Shows panel p (decoding it first if needed); resolves once it is drawn.
  async function setPanel(p) {
    p = (p + P) % P;
    const d = await panelData(p);
    view.panel = p; index = d.index; state = d.state; exact = d.exact; lp = d.long || null;
    if (meta.panelScales) useScale(p);
    if (headView) headView.setGroup(groupOf(p));
    redraw();
    // In the census page's frame: which panel shows (the page checks its pick arrived).
    if (window.parent !== window) window.parent.postMessage({ attnPanel: p, title: meta.title }, "*");
  }
  /// A thumbnail's click: the panel, large, in the tab shown.
  function openPanel(p) { return setPanel(p).catch(fail); }
  function setTab(tab) {
    view.tab = tab;
    $("mapbox").hidden = tab !== "map"; $("side").hidden = tab !== "map"; $("hvbox").hidden = tab !== "head";
    document.querySelectorAll("#tabs button").forEach((b) => b.classList.toggle("on", b.dataset.tab === tab));
    redraw();
  }
  // Panels in groups: a grid row of the model view is one layer's heads, else all panels.
  const groupSize = meta.gridCols > 0 ? Math.min(meta.gridCols, P) : P;
  const groupOf = (p) => Math.floor(p / groupSize);
  let headView = null;
  function zoom(factor, ci, cj) {
    const nr = Math.max(1, Math.min(R, Math.round(view.nr * factor)));
    const nc = Math.max(1, Math.min(C, Math.round(view.nc * factor)));
    const fi = (ci - view.r0) / view.nr, fj = (cj - view.c0) / view.nc;
    view.r0 = Math.max(0, Math.min(R - nr, Math.round(ci - fi * nr)));
    view.c0 = Math.max(0, Math.min(C - nc, Math.round(cj - fj * nc)));
    view.nr = nr; view.nc = nc;
    drawMap();
  }
  function pan(di, dj) {
    view.r0 = Math.max(0, Math.min(R - view.nr, view.r0 + di));
    view.c0 = Math.max(0, Math.min(C - view.nc, view.c0 + dj));
    drawMap();
  }
  /// Keeps the selected row in the region shown.
  function follow() {
    if (view.row < view.r0 || view.row >= view.r0 + view.nr) view.r0 = Math.max(0, Math.min(R - view.nr, view.row - (view.nr >> 1)));
    redraw();
  }
  function reset() { view.r0 = 0; view.c0 = 0; view.nr = R; view.nc = C; drawMap(); }

  let hoverGen = 0;
  /// The text strip: the hovered row's query token and the key tokens around the hovered
  /// key, each shaded by its weight where the page knows it (exact or top-k), the hovered
  /// key outlined.
  async function strip(i, j) {
    const box = $("strip");
    const lo = Math.max(0, j - 24), hi = Math.min(C, j + 25);
    let known = new Map();
    if (LONG) (await topKeys(lp, i)).forEach((t) => known.set(t.key, t.w));
    else for (let q = lo; q < hi; q++) if (stateAt(i * C + q) === 0 && exact) known.set(q, exact[i * C + q]);
    const spans = [];
    for (let q = lo; q < hi; q++) {
      const s = document.createElement("span");
      s.textContent = meta.colLabels.length ? meta.colLabels[q] : String(q);
      s.title = `key ${q}` + (known.has(q) ? `: ${fmt(known.get(q))}` : "");
      if (known.has(q)) { const b = colourIndex(known.get(q)) * 3; s.style.background = `rgb(${lut[b]},${lut[b + 1]},${lut[b + 2]})`; s.style.color = colourIndex(known.get(q)) > 150 ? "#000" : "#fff"; }
      if (q === j) s.className = "here";
      spans.push(s);
    }
    const head = document.createElement("b");
    head.textContent = `query ${i} ${meta.rowLabels.length ? JSON.stringify(meta.rowLabels[i]) : ""} → keys ${lo}–${hi - 1}: `;
    box.replaceChildren(head, ...spans);
  }
  /// "jump to token": a number is a token index, text the next token whose label holds it.
  let lastJump = -1;
  function jump(text) {
    text = text.trim();
    if (!text) return;
    let i = -1;
    if (/^\d+$/.test(text)) i = Math.min(Math.max(R, C) - 1, Number(text));
    else {
      const labels = meta.colLabels.length ? meta.colLabels : meta.rowLabels, n = labels.length, t = text.toLowerCase();
      for (let s = 1; s <= n && i < 0; s++) { const q = (lastJump + s) % n; if (labels[q].toLowerCase().includes(t)) i = q; }
    }
    if (i < 0) { $("jumpinfo").textContent = `no token holds “${text}”`; return; }
    lastJump = i;
    $("jumpinfo").textContent = `token ${i}`;
    const n = Math.min(64, R, C);
    view.nr = Math.min(n, R); view.nc = Math.min(n, C);
    view.r0 = Math.max(0, Math.min(R - view.nr, Math.min(i, R - 1) - (view.nr >> 1)));
    view.c0 = Math.max(0, Math.min(C - view.nc, Math.min(i, C - 1) - (view.nc >> 1)));
    view.row = Math.min(i, R - 1);
    redraw();
  }

  function install() {
    $("jump").addEventListener("keydown", (e) => { if (e.key === "Enter") { jump($("jump").value); e.preventDefault(); } if (e.key === "Escape") $("jump").blur(); });
    if (LONG) {
      // The head view draws every cell of a group's panels: not for panels over 4096.
      document.querySelector('#tabs button[data-tab="head"]').hidden = true;
    }
    const sel = $("cmap");
    for (const name of Object.keys(meta.tables)) sel.add(new Option(name, name, false, name === meta.cmap));
    $("reversed").checked = meta.reversed;
    const recolor = () => { setColormap(sel.value, $("reversed").checked); drawThumbs(); drawColorbar(); redraw(); };
    document.querySelectorAll("#tabs button").forEach((b) => b.addEventListener("click", () => setTab(b.dataset.tab)));
    sel.addEventListener("change", recolor);
    $("reversed").addEventListener("change", recolor);
    $("pool").value = view.pool;
    $("pool").addEventListener("change", () => { view.pool = $("pool").value; drawThumbs(); drawMap(); });
    $("reset").addEventListener("click", reset);
    let drag = null;
    const pos = (e) => { const r = map.getBoundingClientRect(); return [e.clientX - r.left, e.clientY - r.top]; };
    map.addEventListener("mousemove", (e) => {
      const [x, y] = pos(e);
      if (drag && e.buttons & 1) {
        const dx = x - drag.x, dy = y - drag.y, cell = layout.cell;
        if (Math.abs(dx) >= cell || Math.abs(dy) >= cell) {
          drag.moved = true;
          pan(-Math.trunc(dy / cell), -Math.trunc(dx / cell));
          drag.x = x; drag.y = y;
        }
        return;
      }
      const b = blockAt(x, y);
      if (b && LONG) {
        const gen = ++hoverGen;
        hoverLong(b).then((t) => { if (gen === hoverGen) $("hover").textContent = t; }).catch(fail);
        strip(b.i0, b.j0).catch(fail);
      } else if (b) { $("hover").textContent = hoverText(b); strip(b.i0, b.j0).catch(fail); }
    });
    map.addEventListener("mousedown", (e) => { const [x, y] = pos(e); drag = { x, y, moved: false }; });
    map.addEventListener("mouseup", (e) => {
      const [x, y] = pos(e);
      const moved = drag && drag.moved;
      drag = null;
      if (moved) return;
      const b = blockAt(x, y);
      if (b) { view.row = b.i0; redraw(); }
    });
    map.addEventListener("wheel", (e) => {
      e.preventDefault();
      const [x, y] = pos(e);
      const b = blockAt(x, y) || { i0: view.r0 + view.nr / 2, j0: view.c0 + view.nc / 2 };
      zoom(e.deltaY < 0 ? 0.5 : 2, b.i0, b.j0);
    }, { passive: false });
    document.addEventListener("keydown", (e) => {
      if (e.target instanceof HTMLSelectElement || e.target instanceof HTMLInputElement || view.tab !== "map") return;
      const mid = [view.r0 + view.nr / 2, view.c0 + view.nc / 2];
      const step = Math.max(1, Math.floor(view.nr / 4));
      const keys = {
        ArrowRight: () => openPanel(view.panel + 1), ArrowLeft: () => openPanel(view.panel - 1),
        "]": () => openPanel(view.panel + 1), "[": () => openPanel(view.panel - 1),
        "+": () => zoom(0.5, ...mid), "=": () => zoom(0.5, ...mid), "-": () => zoom(2, ...mid),
        "0": reset, w: () => pan(-step, 0), s: () => pan(step, 0), a: () => pan(0, -step), d: () => pan(0, step),
        ArrowDown: () => { view.row = Math.min(R - 1, view.row + 1); redraw(); },
        ArrowUp: () => { view.row = Math.max(0, view.row - 1); redraw(); },
        PageDown: () => { view.row = Math.min(R - 1, view.row + Math.max(1, view.nr)); follow(); },
        PageUp: () => { view.row = Math.max(0, view.row - Math.max(1, view.nr)); follow(); },
        Home: () => { view.row = 0; follow(); }, End: () => { view.row = R - 1; follow(); },
        "/": () => $("jump").focus(), g: () => $("jump").focus(),
      };
      if (/^[1-9]$/.test(e.key) && Number(e.key) <= P) { openPanel(Number(e.key) - 1); e.preventDefault(); return; }
      if (keys[e.key]) { keys[e.key](); e.preventDefault(); }
    });
  }

  // For tests and scripts: where cell (i, j) of the large map is on the page.
  window.attnView = {
    ready: false, view, meta,
    cellCenter(i, j) {
      const r = map.getBoundingClientRect(), c = layout.cell;
      return { x: r.left + LEFT + (j - view.c0 + 0.5) * c, y: r.top + TOP + (i - view.r0 + 0.5) * c };
    },
    setPanel, zoom, reset, setTab, jump,
    /// Shows rows [r0, r0 + nr) x keys [c0, c0 + nc).
    show(r0, c0, nr, nc) { Object.assign(view, { r0, c0, nr, nc }); drawMap(); },
    /// The long view: the level the map shows, the level a region needs, a row's top keys.
    long: LONG && { level: () => longLevel, levelFor, topKeys: (p, i) => topKeys(longPanel(p), i), drawn: () => drawGen },
    cached: () => [...cache.keys()],
  };

  function fail(e) { $("status").textContent = String(e); console.error(e); }
  /// The panel a "#panel=K" fragment names (the census page opens a head's panel so), else 0.
  function hashPanel() {
    const m = /^#panel=(\d+)$/.exec(location.hash);
    return m ? Math.min(Number(m[1]), P - 1) : 0;
  }

  async function main() {
    const t0 = performance.now();
    $("title").textContent = meta.title || "attention weights";
    $("notes").textContent = meta.notes.join(" \u00b7 ") + (meta.notes.length ? " \u00b7 " : "") +
      `${P} panel${P === 1 ? "" : "s"} of ${R} queries \u00d7 ${C} keys; colour scale ${meta.scale} ${fmt(meta.vmin)}\u2013${fmt(meta.vmax)}` +
      (LONG ? `; above 4096 the page holds pooled levels (8-bit) and each query row's ${LONG.topK} strongest keys exactly` :
        meta.exact ? "" : `; hover shows 8-bit colour bins (exact values are stored up to ${meta.maxExactCells} cells)`);
    thumbs = await inflate("thumbs");
    if (!thumbs || thumbs.length !== (meta.hasState ? 3 : 2) * P * TW * TH) throw new Error("attn view: the thumbnails are damaged");
    binValue = new Float64Array(256);
    for (let b = 0; b < 256; b++) binValue[b] = unnorm((b + 0.5) / 256);
    setColormap(meta.cmap, meta.reversed);
    headView = window.attnHeadView({ meta, panelData, binValue: (b) => binValue[b], groupSize, groupOf, label, fmt, tok, setPanel: openPanel, fail });
    install();
    drawThumbs();
    drawColorbar();
    await setPanel(hashPanel());
    window.addEventListener("hashchange", () => openPanel(hashPanel()));
    window.attnView.headView = headView;
    window.attnView.loadMs = performance.now() - t0;
    $("status").textContent = `ready in ${Math.round(window.attnView.loadMs)} ms`;
    window.attnView.ready = true;
    document.body.dataset.ready = "1";
  }
  main().catch(fail);
})();
