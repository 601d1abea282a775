// The head census page (lib/src/render/census_page.cpp fills meta and the pages): the
// layers x heads grid coloured by the chosen statistic, the sortable table, and a head's
// attention on its best text (a heatmap view page in a frame, opened at the head's panel
// through the view's #panel=K).
(function () {
  "use strict";
  const $ = (id) => document.getElementById(id);
  const meta = JSON.parse($("meta").textContent);
  const L = meta.layers, H = meta.heads, S = meta.stats.length;
  const PROBABILITY = new Set(["first_token", "previous_token", "self", "duplicate_token", "induction"]);
  const state = { stat: meta.stats.indexOf(meta.defaultStat), cell: -1, sortCol: -1, asc: false };
  const urls = new Map();
  let table = null;

  function bytesOf(text) {
    const s = atob(text.trim()), b = new Uint8Array(s.length);
    for (let i = 0; i < s.length; i++) b[i] = s.charCodeAt(i);
    return b;
  }
  const cmap = bytesOf(meta.cmap);
  const rgb = (k) => `rgb(${cmap[3 * k]},${cmap[3 * k + 1]},${cmap[3 * k + 2]})`;
  const fmt = (v) => (v === null ? "nan" : Math.abs(v) >= 100 ? v.toFixed(1) : v.toFixed(3));
  const cellName = (x) => `layer ${Math.floor(x / H)} \u00b7 head ${x % H}`;

  /// The colour range of statistic s: 0..1 for the probabilities, else its finite values'.
  function range(s) {
    if (PROBABILITY.has(meta.stats[s])) return [0, 1];
    let lo = Infinity, hi = -Infinity;
    for (const v of meta.means[s]) if (v !== null) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
    if (!(lo <= hi)) return [0, 1];
    return lo === hi ? [lo, lo + 1] : [lo, hi];
  }
  /// matplotlib's index floor(t * 256), t = 1 -> 255, clamped.
  function colorIndex(v, r) {
    const t = (v - r[0]) / (r[1] - r[0]);
    return Math.max(0, Math.min(255, Math.floor(t * 256)));
  }

  function buildGrid() {
    const g = $("grid");
    g.style.gridTemplateColumns = `auto repeat(${H}, 22px)`;
    g.append(Object.assign(document.createElement("div"), { className: "label", textContent: "" }));
    for (let h = 0; h < H; h++) {
      g.append(Object.assign(document.createElement("div"), { className: "label hlabel", textContent: h % 2 === 0 || H <= 16 ? String(h) : "" }));
    }
    for (let l = 0; l < L; l++) {
      g.append(Object.assign(document.createElement("div"), { className: "label", textContent: `L${l}` }));
      for (let h = 0; h < H; h++) {
        const x = l * H + h, d = document.createElement("div");
        d.className = "cell"; d.dataset.cell = String(x);
        d.addEventListener("mouseenter", () => hover(x));
        d.addEventListener("click", () => select(x));
        g.append(d);
      }
    }
  }

  function colorGrid() {
    const s = state.stat, r = range(s);
    document.querySelectorAll("#grid .cell").forEach((d) => {
      const x = Number(d.dataset.cell), v = meta.means[s][x];
      d.classList.toggle("nan", v === null);
      d.classList.toggle("sink", meta.sink[x] === 1);
      d.style.background = v === null ? "" : rgb(colorIndex(v, r));
      d.title = `${cellName(x)}: ${meta.stats[s]} ${fmt(v)}`;
      d.classList.toggle("on", x === state.cell);
    });
    $("range").textContent = `${meta.stats[s]}: ${fmt(r[0])} \u2013 ${fmt(r[1])}` + (PROBABILITY.has(meta.stats[s]) ? "" : " (the heads' range)");
    const c = $("colorbar").getContext("2d");
    for (let i = 0; i < 240; i++) { c.fillStyle = rgb(Math.min(255, Math.floor(i * 256 / 240))); c.fillRect(i, 0, 1, 12); }
  }

  function hover(x) {
    const parts = meta.stats.map((name, s) => `${name} ${fmt(meta.means[s][x])}`);
    $("hover").textContent = `${cellName(x)}: ${parts.join(", ")}${meta.sink[x] ? " \u00b7 sink" : ""}`;
  }

  function buildTable() {
    const head = $("table").querySelector("thead tr");
    const cols = ["layer", "head", ...meta.stats, "sink"];
    cols.forEach((name, k) => {
      const th = Object.assign(document.createElement("th"), { textContent: name });
      th.dataset.col = String(k);
      th.addEventListener("click", () => sortBy(k));
      head.append(th);
    });
    table = [];
    for (let x = 0; x < L * H; x++) {
      table.push([Math.floor(x / H), x % H, ...meta.stats.map((_, s) => meta.means[s][x]), meta.sink[x]]);
    }
  }
  /// Rows sorted by column k (NaN last either way); a second click reverses.
  function sortBy(k) {
    state.asc = state.sortCol === k ? !state.asc : k < 2;
    state.sortCol = k;
    drawTable();
  }
  function drawTable() {
    const k = state.sortCol, sign = state.asc ? 1 : -1;
    const order = table.map((_, x) => x);
    if (k >= 0) {
      order.sort((a, b) => {
        const va = table[a][k], vb = table[b][k];
        if (va === null || vb === null) return (va === null) - (vb === null) || a - b;
        return sign * (va - vb) || a - b;
      });
    }
    const body = $("table").querySelector("tbody");
    body.replaceChildren(...order.map((x) => {
      const tr = document.createElement("tr");
      tr.dataset.cell = String(x);
      tr.classList.toggle("on", x === state.cell);
      table[x].forEach((v, c) => {
        const td = document.createElement("td");
        td.textContent = c < 2 ? String(v) : c === table[x].length - 1 ? (v ? "yes" : "") : fmt(v);
        if (c === state.stat + 2) td.className = "stat";
        tr.append(td);
      });
      tr.addEventListener("click", () => select(x));
      return tr;
    }));
    $("table").querySelectorAll("th").forEach((th) => {
      const c = Number(th.dataset.col);
      th.classList.toggle("sorted", c === k); th.classList.toggle("asc", c === k && state.asc);
      th.classList.toggle("stat", c === state.stat + 2);
    });
  }

  function pageUrl(p) {
    if (!urls.has(p)) {
      const blob = new Blob([bytesOf($(`page${p}`).textContent)], { type: "text/html" });
      urls.set(p, URL.createObjectURL(blob));
    }
    return urls.get(p);
  }
  /// Head x: highlighted, and its attention on the text where the chosen statistic was highest.
  function select(x) {
    state.cell = x;
    const s = state.stat, ref = meta.best[s][x], frame = $("view");
    if (ref === null) {
      $("viewtitle").textContent = `${cellName(x)}: no text has a row that ${meta.stats[s]} counts`;
      frame.hidden = true;
    } else {
      const [p, panel, value] = ref;
      $("viewtitle").textContent = `${cellName(x)}: ${meta.stats[s]} ${fmt(value)} on ${meta.pageTitles[p]}, its highest over the corpus`;
      frame.hidden = false;
      frame.dataset.page = String(p); frame.dataset.panel = String(panel);
      state.shown = null;
      frame.src = `${pageUrl(p)}#panel=${panel}`;
    }
    colorGrid(); drawTable();
  }

  function setStat(s) {
    state.stat = s;
    $("stat").value = String(s);
    colorGrid(); drawTable();
    if (state.cell >= 0) select(state.cell);
  }

  window.attnCensus = { ready: false, meta, setStat, select, sortBy, state };
  // The view in the frame says which panel it shows (for scripts and tests: state.shown).
  window.addEventListener("message", (e) => {
    if (e.source === $("view").contentWindow && e.data && Number.isInteger(e.data.attnPanel)) {
      state.shown = { page: Number($("view").dataset.page), panel: e.data.attnPanel, title: String(e.data.title) };
    }
  });

  function main() {
    $("title").textContent = meta.title;
    const sinks = meta.sink.reduce((a, b) => a + b, 0);
    $("notes").textContent = `${L} layer${L === 1 ? "" : "s"} \u00d7 ${H} head${H === 1 ? "" : "s"}; ` +
      `${sinks} sink${sinks === 1 ? "" : "s"} (first_token \u2265 ${meta.sinkThreshold}, marked s); ` +
      `${meta.pageTitles.length} text${meta.pageTitles.length === 1 ? "" : "s"} kept for the views`;
    meta.stats.forEach((name, s) => $("stat").append(new Option(name, String(s))));
    $("stat").addEventListener("change", () => setStat(Number($("stat").value)));
    buildGrid(); buildTable();
    setStat(Math.max(0, state.stat));
    $("status").textContent = "ready";
    window.attnCensus.ready = true;
    document.body.dataset.ready = "1";
  }
  try { main(); } catch (e) { $("status").textContent = String(e); console.error(e); }
})();
