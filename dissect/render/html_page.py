"""The HTML report's page: its markup, style and script, and how the data is put into it.

The script is the only code in the page, allowed by its hash in the Content-Security-Policy; the
policy also forbids every network request (``default-src 'none'``), so a page whose data were
somehow turned into markup still could not run it, and opening the page fetches nothing. The data
sit in data blocks the browser does not run: the page settings as JSON (``<``, ``>`` and ``&``
escaped), then the rows' chunks, each a base64 string of gzip-compressed data in an element of its
own (``dissect-index-0``, ``dissect-text-0``, ...), which the script reads when it needs that chunk.
"""

import base64
import hashlib
import json

from .. import __version__
from .svgplot import text

CSS = """
:root { --sel: #2f6db5; --line: #d8dde3; --muted: #5b6470; --err: #ffd0d0; --warn: #fff1b8; --note: #dcecff;
        --chat: #f3f3f3; font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; font-size: 14px; }
body { margin: 0; color: #1d2228; background: #fff; }
header.top { display: flex; align-items: baseline; gap: 24px; padding: 10px 18px; background: #1f2a36; color: #fff; }
header.top h1 { font-size: 18px; margin: 0; font-weight: 600; overflow-wrap: anywhere; }
header.top nav a { color: #cfe0f5; margin-right: 14px; text-decoration: none; }
main { padding: 0 18px 18px; }
h2 { font-size: 17px; margin: 22px 0 8px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
h3 { font-size: 14px; margin: 10px 0 6px; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; }
.card { border: 1px solid var(--line); border-radius: 6px; padding: 8px 12px; min-width: 150px; max-width: 420px; }
.card h3 { margin: 0 0 4px; color: var(--muted); font-weight: 500; font-size: 12px; text-transform: uppercase; }
.card ul { margin: 0; padding-left: 18px; overflow-wrap: anywhere; }
.card p { margin: 2px 0; }
.big { font-size: 22px; font-weight: 600; }
.note { color: var(--muted); }
.error { color: #a40000; }
table { border-collapse: collapse; }
table.mini td { padding: 1px 8px 1px 0; }
table.sortable { width: 100%; }
table.sortable th, table.sortable td { border-bottom: 1px solid var(--line); padding: 3px 8px; text-align: left;
  vertical-align: top; overflow-wrap: anywhere; }
table.sortable th { cursor: pointer; user-select: none; background: #f4f6f8; position: sticky; top: 0;
  white-space: nowrap; }
#servers-table td:nth-child(3) { max-width: 420px; }
table.sortable th.asc::after { content: " ▲"; } table.sortable th.desc::after { content: " ▼"; }
td.num, th.num { text-align: right; white-space: nowrap; }
tr.sev-4 td:first-child { background: var(--err); } tr.sev-3 td:first-child { background: var(--warn); }
tr.sev-2 td:first-child { background: var(--note); }
#servers { max-height: 480px; overflow: auto; }
.plots { display: flex; flex-wrap: wrap; gap: 16px; }
figure { margin: 0; max-width: 560px; }
figure.players { max-width: 360px; }
figcaption { color: var(--muted); font-size: 12px; overflow-wrap: anywhere; }
svg.chart { display: block; max-width: 100%; height: auto; font-size: 11px; }
svg .plot-area { fill: #fbfcfd; stroke: #c9d0d8; } svg .grid { stroke: #e6eaee; }
svg .tick, svg .legend { fill: #444; } svg .axis-title { fill: #333; font-size: 12px; }
svg .legend-box { fill: #fff; fill-opacity: 0.85; stroke: #e0e4e8; }
#panes { display: flex; flex-direction: column; height: 96vh; min-height: 520px; max-height: 1100px; }
.toolbar { display: flex; gap: 8px; align-items: center; flex-wrap: wrap; padding: 4px 0 6px; }
.toolbar input { flex: 1 1 260px; min-width: 160px; padding: 4px 6px; }
#list-status { color: var(--muted); }
.grid { display: grid; grid-template-columns: 16px 84px 96px 170px 170px 78px 60px minmax(200px, 1fr);
  column-gap: 6px; align-items: center; }
#list-head { font-weight: 600; background: #eef1f4; border: 1px solid var(--line); border-bottom: 0;
  padding: 3px 4px; user-select: none; }
#list-head span { cursor: pointer; white-space: nowrap; overflow: hidden; }
#list-head span.asc::after { content: " ▲"; } #list-head span.desc::after { content: " ▼"; }
#list { position: relative; flex: 0 0 42%; overflow: auto; border: 1px solid var(--line); outline: none; }
#list:focus { border-color: var(--sel); }
#list-rows { position: absolute; left: 0; right: 0; top: 0; }
.row { height: 20px; line-height: 20px; padding: 0 4px; cursor: default; font-size: 13px; white-space: nowrap; }
.row > span { overflow: hidden; text-overflow: ellipsis; }
.row.sev-4 { background: var(--err); } .row.sev-3 { background: var(--warn); } .row.sev-2 { background: var(--note); }
.row.ana { font-style: italic; color: #30475e;
  background-image: linear-gradient(90deg, #e9e2fb 0, #e9e2fb 6px, transparent 6px); }
.row.sel { background: var(--sel); color: #fff; }
.mark { width: 10px; height: 10px; border-radius: 2px; display: inline-block; font-size: 0; }
.mark.sev-4 { background: #d40000; } .mark.sev-3 { background: #e0a800; } .mark.sev-2 { background: #2f7fd8; }
.mark.sev-1 { background: #9aa3ad; }
.c-num, .c-len, .c-time { text-align: right; font-variant-numeric: tabular-nums; }
#detail { flex: 1 1 auto; display: grid; grid-template-columns: minmax(300px, 1fr) auto; gap: 8px; min-height: 0;
  margin-top: 8px; }
#tree, #hex { overflow: auto; border: 1px solid var(--line); min-height: 0; padding: 4px; outline: none; }
#tree { font-size: 13px; }
#tree .line { white-space: pre; padding: 0 4px; cursor: default; border-radius: 2px; }
#tree .line .tog { display: inline-block; width: 14px; color: #7a8591; cursor: pointer; }
#tree .line.open .tog::before { content: "▾"; } #tree .closed > .line.open .tog::before { content: "▸"; }
#tree .closed > .kids { display: none; }
#tree .kids { margin-left: 16px; }
#tree .line.msg { font-weight: 600; }
#tree .line.gen { color: #52606d; }
#tree .line.finding.sev-4 { background: var(--err); } #tree .line.finding.sev-3 { background: var(--warn); }
#tree .line.finding.sev-2 { background: var(--note); } #tree .line.finding.sev-1 { background: var(--chat); }
#tree .line.sel { background: var(--sel); color: #fff; }
#tree a, #tree .goto { color: #1a5fb4; cursor: pointer; text-decoration: underline; }
#tree .line.sel a, #tree .line.sel .goto { color: #fff; }
#hex { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 12.5px; }
.hexblock + .hexblock { margin-top: 10px; }
.hextitle { color: var(--muted); font-family: system-ui, sans-serif; margin-bottom: 3px; }
.hexmore { margin-top: 4px; }
.hexrow { white-space: pre; line-height: 17px; }
.hexrow .off { color: #8a949e; margin-right: 10px; }
.hexrow .b, .hexrow .a { cursor: pointer; }
.hexrow .b { padding: 0 3px; } .hexrow .b.gap { margin-left: 8px; } .hexrow .asc { margin-left: 14px; }
.hexrow .hl { background: var(--sel); color: #fff; }
#statusbar { border: 1px solid var(--line); border-top: 0; padding: 3px 6px; color: var(--muted); min-height: 18px;
  white-space: nowrap; overflow: hidden; text-overflow: ellipsis; font-size: 12px; }
.empty-pane { color: var(--muted); padding: 8px; }
"""

SCRIPT = r"""
(() => {
"use strict";
const byId = (id) => document.getElementById(id);
const readJSON = (id) => JSON.parse(byId(id).textContent);
const PAGE = readJSON("dissect-page"), CHUNKS = PAGE.chunks;
const blob = (name, index) => byId("dissect-" + name + "-" + index).textContent;
const SEV = PAGE.severities, KEYS = PAGE.keys, PROTOCOLS = PAGE.protocols, CHUNK = PAGE.chunk, ROW_H = 20;
const N = PAGE.rows;
const time = new Float64Array(N), number = new Uint32Array(N), length = new Uint32Array(N);
const kind = new Uint8Array(N), sev = new Uint8Array(N), proto = new Uint8Array(N);
const list = byId("list"), box = byId("list-rows"), tree = byId("tree"), hex = byId("hex"), bar = byId("statusbar");
const status = byId("list-status");
// Sort keys by column: severity, number (an analysis row after its last frame), time, source, destination,
// protocol, length, info; the text columns need the row texts.
const COLS = [(s) => sev[s], (s) => number[s] + 0.5 * kind[s], (s) => time[s], (s) => text(s)[0], (s) => text(s)[1],
              (s) => PROTOCOLS[proto[s]], (s) => length[s], (s) => text(s)[2]];
const TEXT_COLS = new Set([3, 4, 7]);

let view = new Uint32Array(0), hay = null, selected = -1, selPos = -1, sortCol = -1, sortDir = 1, token = 0;
let viewToken = 0, pendingRender = false, frameSeq = null, partOf = null;
const texts = new Map(), chunks = new Map();
let nodes = [], sources = [], cells = [], lit = [], current = -1;

function el(tag, cls, content) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (content !== undefined) node.textContent = content;
  return node;
}
function bytesOf(b64) {
  if (Uint8Array.fromBase64) return Uint8Array.fromBase64(b64);
  const bin = atob(b64), out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}
function inflated(b64) {
  return new Response(new Blob([bytesOf(b64)]).stream().pipeThrough(new DecompressionStream("gzip")));
}
async function inflate(b64) { return JSON.parse(await inflated(b64).text()); }
function detailChunk(seq) {  // the last detail chunk whose first row is at or before ``seq``
  const starts = PAGE.detail_starts;
  let low = 0, high = starts.length - 1;
  while (low < high) {
    const middle = (low + high + 1) >> 1;
    if (starts[middle] <= seq) low = middle; else high = middle - 1;
  }
  return low;
}
function detail(seq) {
  const index = detailChunk(seq);
  let chunk = chunks.get(index);
  if (!chunk) {
    chunk = inflate(blob("detail", index));
    chunks.set(index, chunk);
    if (chunks.size > 16) chunks.delete(chunks.keys().next().value);
  }
  return chunk.then((items) => items[seq - PAGE.detail_starts[index]]);
}
function textChunk(index) {  // a promise of the chunk's rows; ``texts`` holds the rows once they are read
  const found = texts.get(index);
  if (found) return Promise.resolve(found);
  const reading = inflate(blob("text", index)).then((items) => { texts.set(index, items); return items; });
  texts.set(index, reading);
  return reading;
}
function text(seq) {
  const found = texts.get(Math.floor(seq / CHUNK));
  return Array.isArray(found) ? found[seq % CHUNK] : null;
}
let allRead = false;
async function allText() {
  let done = 0;
  const reads = [];
  for (let index = 0; index < CHUNKS.text; index++) reads.push(textChunk(index).then(() => {
    if (++done % 20 === 0) status.textContent = "Reading the rows' text: " + done + " of " + CHUNKS.text + " chunks";
  }));
  await Promise.all(reads);
  allRead = true;
}
function members() {  // frame number -> analysis rows that span it
  if (!partOf) {
    const reads = [];
    for (let index = 0; index < CHUNKS.members; index++) reads.push(inflate(blob("members", index)));
    partOf = Promise.all(reads).then((parts) => {
      const map = new Map();
      for (const part of parts) for (const [seq, frames] of part) for (const n of frames) {
        let seqs = map.get(n);
        if (!seqs) map.set(n, seqs = []);
        seqs.push(seq);
      }
      return map;
    });
  }
  return partOf;
}
function utc(ts) {
  const whole = Math.floor(ts), date = new Date(whole * 1000);
  if (!isFinite(ts) || isNaN(date.getTime())) return "invalid time";
  const iso = date.toISOString(), micro = Math.min(999999, Math.round((ts - whole) * 1e6));
  return iso.slice(0, 10) + " " + iso.slice(11, 19) + "." + String(micro).padStart(6, "0") + " UTC";
}
function span(frames) {
  if (!frames || !frames.length) return "";
  return frames.length <= 4 ? frames.join(",") : frames[0] + "-" + frames[frames.length - 1];
}

// -- packet list ---------------------------------------------------------------------------------
async function readIndex(c) {  // one chunk of the binary columns (see _Rows in html.py)
  const buffer = await inflated(blob("index", c)).arrayBuffer(), base = c * CHUNK, n = Math.min(CHUNK, N - base);
  time.set(new Float64Array(buffer, 0, n), base);
  number.set(new Uint32Array(buffer, 8 * n, n), base);
  length.set(new Uint32Array(buffer, 12 * n, n), base);
  kind.set(new Uint8Array(buffer, 16 * n, n), base);
  sev.set(new Uint8Array(buffer, 17 * n, n), base);
  proto.set(new Uint8Array(buffer, 18 * n, n), base);
}
async function load() {
  if (typeof DecompressionStream === "undefined") {
    status.textContent = "This browser cannot read the report's packet data (no DecompressionStream): " +
      "open it in a current Chromium, Firefox or Safari.";
    return;
  }
  const reads = [];
  for (let c = 0; c < CHUNKS.index; c++) reads.push(readIndex(c));
  await Promise.all(reads);
  frameSeq = new Map();
  for (let seq = 0; seq < N; seq++) if (!kind[seq]) frameSeq.set(number[seq], seq);
  if (N) await textChunk(0);  // the first rows shown come with their text
  const present = new Set(proto);
  PROTOCOLS.forEach((name, index) => { if (present.has(index)) byId("f-proto").append(new Option(name, index)); });
  await applyView();
  document.body.dataset.loadMs = Math.round(performance.now());
  document.body.dataset.ready = "1";
  (window.requestIdleCallback || setTimeout)(() => members());  // ready before the first frame is picked
}
function searchText(seq) {
  const t = text(seq);
  return [kind[seq] ? "" : number[seq], t[0], t[1], PROTOCOLS[proto[seq]], t[2], t[3]].join(" ").toLowerCase();
}
async function applyView() {
  const mine = ++viewToken;
  const protoValue = byId("f-proto").value, sevValue = byId("f-sev").value, kindValue = byId("f-kind").value;
  const needle = byId("f-text").value.trim().toLowerCase();
  if ((needle || TEXT_COLS.has(sortCol)) && !allRead) {
    await allText();
    if (mine !== viewToken) return;
  }
  if (needle && !hay) {
    hay = new Array(N);
    for (let seq = 0; seq < N; seq++) hay[seq] = searchText(seq);
  }
  const want = protoValue === "" ? -1 : +protoValue, least = sevValue === "all" || sevValue === "none" ? 0 : +sevValue;
  const out = [];
  for (let seq = 0; seq < N; seq++) {
    if (want >= 0 && proto[seq] !== want) continue;
    if ((kindValue === "frames" && kind[seq]) || (kindValue === "analysis" && !kind[seq])) continue;
    if ((sevValue === "none" && sev[seq]) || sev[seq] < least) continue;
    if (needle && !hay[seq].includes(needle)) continue;
    out.push(seq);
  }
  if (sortCol >= 0) {
    const get = COLS[sortCol];
    out.sort((a, b) => {
      const x = get(a), y = get(b);
      return (x < y ? -1 : x > y ? 1 : 0) * sortDir || a - b;
    });
  }
  view = Uint32Array.from(out);
  selPos = view.indexOf(selected);
  byId("list-spacer").style.height = view.length * ROW_H + "px";
  status.textContent = view.length.toLocaleString() + " of " + N.toLocaleString() + " rows" +
    (PAGE.kept < PAGE.frames ? " (the first " + PAGE.kept.toLocaleString() + " of " + PAGE.frames.toLocaleString() +
     " frames)" : "");
  renderList();
}
function renderList() {
  pendingRender = false;
  const first = Math.max(0, Math.floor(list.scrollTop / ROW_H) - 4);
  const last = Math.min(view.length, Math.ceil((list.scrollTop + list.clientHeight) / ROW_H) + 4);
  box.style.top = first * ROW_H + "px";
  const items = [];
  for (let pos = first; pos < last; pos++) items.push(rowElement(view[pos], pos));
  box.replaceChildren(...items);
}
function renderSoon() {
  if (!pendingRender) { pendingRender = true; requestAnimationFrame(renderList); }
}
function rowElement(seq, pos) {
  const t = text(seq), a = kind[seq];
  if (!t) textChunk(Math.floor(seq / CHUNK)).then(renderSoon);
  const row = el("div", "row grid sev-" + sev[seq] + (a ? " ana" : "") + (seq === selected ? " sel" : ""));
  row.dataset.seq = seq;
  row.dataset.pos = pos;
  if (!a) row.dataset.number = number[seq];
  const mark = el("span", "mark sev-" + sev[seq], SEV[sev[seq]]);
  if (sev[seq] && t) mark.title = SEV[sev[seq]] + ": " + t[3];
  const info = t ? t[2] : "…";
  row.append(mark, el("span", "c-num", a ? "↳ " + (t ? span(t[4]) : "") : String(number[seq])),
    el("span", "c-time", time[seq].toFixed(6)), el("span", "c-src", t ? t[0] : ""), el("span", "c-dst", t ? t[1] : ""),
    el("span", "c-proto", PROTOCOLS[proto[seq]]), el("span", "c-len", a ? length[seq] + " fr" : String(length[seq])),
    el("span", "c-info", info));
  row.lastChild.title = info;
  return row;
}
function ensureVisible(pos) {
  const top = pos * ROW_H;
  if (top < list.scrollTop) list.scrollTop = top;
  else if (top + ROW_H > list.scrollTop + list.clientHeight) list.scrollTop = top + ROW_H - list.clientHeight;
}
async function select(seq) {
  selected = seq;
  selPos = view.indexOf(seq);
  if (selPos >= 0) ensureVisible(selPos);
  renderList();
  const mine = ++token, item = await detail(seq);
  if (mine !== token) return;
  show(seq, item);
  if (item.a || item.error) return;
  const parts = await members();  // the analyses this frame belongs to, linked below its tree
  if (mine !== token) return;
  for (const other of parts.get(number[seq]) || []) {
    const a = text(other);
    const line = addNode(-1, "Analysis: " + PROTOCOLS[proto[other]] + " " + (a ? a[2] : ""), {cls: "part"});
    addLinks(line, "row", [other], "show");
  }
  tree.dataset.parts = "1";
}
function move(step) {
  if (!view.length) return;
  let pos = selPos < 0 ? (step > 0 ? 0 : view.length - 1) : selPos + step;
  pos = Math.max(0, Math.min(view.length - 1, pos));
  select(view[pos]);
}
async function goRow(seq) {
  if (seq < 0 || seq >= N) return;
  if (view.indexOf(seq) < 0) await clearFilters();
  byId("panes").scrollIntoView();
  list.focus({preventScroll: true});
  select(seq);
}
function goFrame(n) {
  const seq = frameSeq.get(n);
  if (seq === undefined) bar.textContent = "Frame " + n + " is not in the panes (--html-limit, or not shown by -Y).";
  else goRow(seq);
}
function clearFilters() {
  byId("f-text").value = ""; byId("f-proto").value = ""; byId("f-sev").value = "all"; byId("f-kind").value = "all";
  return applyView();
}
async function setFilter(textValue) {
  byId("f-proto").value = ""; byId("f-sev").value = "all"; byId("f-kind").value = "all";
  byId("f-text").value = textValue;
  byId("panes").scrollIntoView();
  await applyView();
}

// -- field tree ---------------------------------------------------------------------------------
function addNode(parent, label, opts) {
  opts = opts || {};
  const wrap = el("div", "node"), line = el("div", "line " + (opts.cls || ""));
  line.append(el("span", "tog"), el("span", "label", label));
  const n = nodes.length;
  line.dataset.n = n;
  if (opts.key) line.dataset.key = opts.key;
  const len = opts.off === null ? 0 : opts.len || 0;  // null: no place in the bytes (a reassembled datagram's header)
  if (len > 0) { line.dataset.off = opts.off; line.dataset.len = len; }
  wrap.append(line);
  (parent < 0 ? tree : kids(parent)).append(wrap);
  nodes.push({line, wrap, kids: null, src: opts.src === undefined ? -1 : opts.src, off: opts.off || 0, len,
              depth: parent < 0 ? 0 : nodes[parent].depth + 1, parent, key: opts.key || "", pick: opts.pick !== false});
  return n;
}
function kids(n) {
  const node = nodes[n];
  if (!node.kids) { node.kids = el("div", "kids"); node.wrap.append(node.kids); node.line.classList.add("open"); }
  return node.kids;
}
function addLinks(n, attribute, values, label) {
  const line = nodes[n].line;
  for (const value of values.slice(0, 200)) {
    const link = el("span", "goto", label || String(value));
    link.dataset[attribute] = value;
    line.append(" ", link);
  }
  if (values.length > 200) line.append(" … " + (values.length - 200) + " more");
}
function field(parent, item, src, base, placed) {
  const [key, name, generated] = typeof item[0] === "number" ? KEYS[item[0]] : item[0];
  const [, off, len, display] = item;
  const range = generated && !len ? "" : " [" + off + ":" + len + "]";
  const label = generated ? "[" + name + ": " + display + "]" + range : name + ": " + display + range;
  const n = addNode(parent, label, {src, off: base + off, len, key, cls: generated ? "gen" : "", pick: !generated});
  if (key.endsWith(".request_in") && /^\d+$/.test(display)) addLinks(n, "gotoFrame", [+display], "show");
  if (!generated && len > 0) placed.push({n, off, len, depth: nodes[n].depth});
  for (const child of item[4] || []) field(n, child, src, base, placed);
}
function finding(parent, item, src, base) {
  const [level, code, message, off, len] = item;
  const where = off === null || off === undefined ? "" : " [" + off + ":" + len + "]";
  const name = SEV[level].charAt(0).toUpperCase() + SEV[level].slice(1);
  addNode(parent, "[Expert Info (" + name + "/" + code + "): " + message + "]" + where,
          {src, off: where ? base + off : 0, len: where ? len : 0, cls: "finding sev-" + level, key: code,
           pick: false});
}
function innermost(placed, off) {
  if (off === null || off === undefined) return -1;
  let best = null;
  for (const p of placed) {
    if (off < p.off || off >= p.off + p.len) continue;
    if (!best || p.depth > best.depth || (p.depth === best.depth && p.len < best.len)) best = p;
  }
  return best ? best.n : -1;
}
function message(m) {
  let src = 0, base = m.o;
  if (m.o === null) {
    const from = (m.fr.length > 1 ? " from frames " : " from frame ") + m.fr.join(",");
    sources.push({title: "Reassembled " + m.p + " " + m.n + from + " (" + m.len + " bytes)",
                  bytes: bytesOf(m.pl)});
    src = sources.length - 1;
    base = 0;
  }
  const where = m.o !== null ? "[" + m.o + ":" + m.len + "]" :
    "[reassembled from frames " + m.fr.join(",") + ", " + m.len + " bytes]";
  const head = addNode(-1, m.p + " " + m.n + " " + where, {src, off: base, len: m.len, cls: "msg"});
  const placed = [];
  for (const item of m.fs) field(head, item, src, base, placed);
  for (const item of m.x) {
    const at = innermost(placed, item[3]);
    finding(at < 0 ? head : at, item, src, base);
  }
}
function showFrame(seq, d) {
  const n = number[seq], data = bytesOf(d.d);
  sources = [{title: "Frame " + n + " (" + data.length + " bytes)", bytes: data}];
  const frame = addNode(-1, "Frame " + n + ": " + d.wire + " bytes on wire (" + d.wire * 8 + " bits), " + d.cap +
                        " bytes captured (" + d.cap * 8 + " bits)", {src: 0, off: 0, len: data.length, key: "frame"});
  addNode(frame, "Arrival Time: " + utc(d.ts) + " (epoch " + d.ts.toFixed(6) + ")");
  addNode(frame, "[Time since the first frame: " + time[seq].toFixed(6) + " s]");
  const stack = d.l.map((layer) => layer[3]).concat(d.m.slice(0, 1).map((m) => m.p.toLowerCase()));
  addNode(frame, "[Protocols in frame: " + (stack.join(":") || "unknown") + "]");
  if (d.st !== null && d.st !== undefined) addNode(frame, "[Stream index: " + d.st + "]");
  for (const item of d.f) finding(frame, item, 0, 0);
  for (const [summary, off, len, key] of d.l) addNode(-1, summary, {src: 0, off, len, key});
  const t = text(seq);
  if (!d.m.length && t && t[2]) addNode(-1, "[" + t[2] + "]");
  for (const m of d.m) message(m);
}
function jsonTree(parent, label, value) {
  if (value !== null && typeof value === "object") {
    const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v]) : Object.entries(value);
    const n = addNode(parent, label + (Array.isArray(value) ? " [" + value.length + "]" : ""));
    for (const [k, v] of entries) jsonTree(n, k, v);
    if (nodes[n].depth > 1 && entries.length > 8) nodes[n].wrap.classList.add("closed");
    return;
  }
  addNode(parent, label + ": " + JSON.stringify(value));
}
function showAnalysis(seq, d) {
  sources = [];
  const head = addNode(-1, "Analysis: " + d.p + " " + d.n, {cls: "msg"});
  addNode(head, d.s);
  const frames = addNode(head, "Frames (" + d.fr.length + "):");
  addLinks(frames, "gotoFrame", d.fr);
  for (const item of d.x) finding(head, item, -1, 0);
  const result = addNode(-1, "Result", {cls: "msg"});
  if (d.r !== null && typeof d.r === "object") {
    for (const [k, v] of Object.entries(d.r)) jsonTree(result, k, v);
  } else jsonTree(result, "value", d.r);
}
function show(seq, d) {
  nodes = []; current = -1; lit = [];
  tree.replaceChildren();
  if (d.error) addNode(-1, d.error, {cls: "finding sev-4"});
  else if (d.a) showAnalysis(seq, d); else showFrame(seq, d);
  renderHex();
  delete tree.dataset.parts;
  tree.dataset.seq = seq;
  bar.textContent = "";
}

// -- hex dump -------------------------------------------------------------------------------------
function hex2(byte) { return (byte < 16 ? "0" : "") + byte.toString(16); }
// Bytes of a frame laid out in the hex pane at first: each is two elements, and a frame of 256 KiB (half a million
// elements) took seconds to pick; the rest are laid out on request, or when a field past them is picked.
const HEX_SHOWN = 4096;
function renderHex(whole) {
  hex.replaceChildren();
  cells = [];
  if (!sources.length) {
    hex.append(el("div", "empty-pane",
                  "An analysis record has no bytes of its own: its frames are linked in the tree."));
    return;
  }
  sources.forEach((source, s) => {
    const block = el("div", "hexblock"), bytes = source.bytes, hexCells = [], ascCells = [];
    const laid = whole ? bytes.length : Math.min(bytes.length, HEX_SHOWN);
    const digits = Math.max(4, (Math.max(bytes.length, 1) - 1).toString(16).length);  // as -x: 5 past 64 KiB
    block.append(el("div", "hextitle", source.title));
    for (let row = 0; row < laid; row += 16) {
      const line = el("div", "hexrow"), asc = el("span", "asc");
      line.append(el("span", "off", row.toString(16).padStart(digits, "0")));
      for (let i = row; i < Math.min(row + 16, laid); i++) {
        const b = el("span", "b" + (i - row === 8 ? " gap" : ""), hex2(bytes[i]));
        const a = el("span", "a", bytes[i] >= 0x20 && bytes[i] < 0x7f ? String.fromCharCode(bytes[i]) : ".");
        b.dataset.s = a.dataset.s = s;
        b.dataset.i = a.dataset.i = i;
        line.append(b);
        asc.append(a);
        hexCells.push(b);
        ascCells.push(a);
      }
      line.append(asc);
      block.append(line);
    }
    if (laid < bytes.length) {
      const more = el("button", "hexmore", "Show all " + bytes.length + " bytes (" + (bytes.length - laid) +
                      " more)");
      more.type = "button";
      more.addEventListener("click", () => renderHex(true));
      block.append(more);
    }
    hex.append(block);
    cells.push({hex: hexCells, asc: ascCells, whole: laid === bytes.length});
  });
}
function scrollWithin(container, item) {
  const outer = container.getBoundingClientRect(), inner = item.getBoundingClientRect();
  if (inner.top < outer.top) container.scrollTop -= outer.top - inner.top + 4;
  else if (inner.bottom > outer.bottom) container.scrollTop += inner.bottom - outer.bottom + 4;
}
function highlight(src, off, len) {
  for (const cell of lit) cell.classList.remove("hl");
  lit = [];
  let source = cells[src];
  if (!source || len <= 0) return;
  if (!source.whole && off + len > source.hex.length) {  // a field past the bytes laid out: lay them all out
    renderHex(true);
    source = cells[src];
  }
  for (let i = off; i < Math.min(off + len, source.hex.length); i++) {
    source.hex[i].classList.add("hl");
    source.asc[i].classList.add("hl");
    lit.push(source.hex[i], source.asc[i]);
  }
  if (source.hex[off]) scrollWithin(hex, source.hex[off]);
}
function selectNode(n) {
  if (current >= 0 && nodes[current]) nodes[current].line.classList.remove("sel");
  current = n;
  const node = nodes[n];
  node.line.classList.add("sel");
  for (let p = node.parent; p >= 0; p = nodes[p].parent) nodes[p].wrap.classList.remove("closed");
  highlight(node.src, node.off, node.len);
  scrollWithin(tree, node.line);
  const where = node.len > 0 && sources[node.src] ? "bytes " + node.off + "-" + (node.off + node.len - 1) + " of " +
    sources[node.src].title + ", " + node.len + " byte" + (node.len === 1 ? "" : "s") : "no bytes";
  bar.textContent = (node.key ? node.key + " · " : "") + where;
}
function pickByte(src, i) {
  let best = -1;
  nodes.forEach((node, n) => {
    if (node.src !== src || !node.pick || node.len <= 0 || i < node.off || i >= node.off + node.len) return;
    const b = nodes[best];
    if (best < 0 || node.depth > b.depth || (node.depth === b.depth && node.len < b.len)) best = n;
  });
  if (best >= 0) selectNode(best);
}

// -- events ---------------------------------------------------------------------------------------
list.addEventListener("scroll", renderSoon);
window.addEventListener("resize", renderSoon);
box.addEventListener("click", (event) => {
  const row = event.target.closest(".row");
  if (row) { list.focus({preventScroll: true}); select(+row.dataset.seq); }
});
list.addEventListener("keydown", (event) => {
  const page = Math.max(1, Math.floor(list.clientHeight / ROW_H) - 1);
  const step = {ArrowDown: 1, ArrowUp: -1, PageDown: page, PageUp: -page, Home: -1e9, End: 1e9}[event.key];
  if (step === undefined) return;
  event.preventDefault();
  move(step);
});
tree.addEventListener("click", (event) => {
  const tog = event.target.closest(".tog"), line = event.target.closest(".line");
  if (tog && line && line.classList.contains("open")) { line.parentNode.classList.toggle("closed"); return; }
  if (line && !event.target.closest(".goto")) selectNode(+line.dataset.n);
});
hex.addEventListener("click", (event) => {
  const cell = event.target.closest("[data-i]");
  if (cell) pickByte(+cell.dataset.s, +cell.dataset.i);
});
document.addEventListener("click", (event) => {
  const link = event.target.closest("[data-row], [data-goto-frame], .filter-code, .filter-text");
  if (!link || box.contains(link) || !frameSeq) return;
  event.preventDefault();
  if (link.dataset.row !== undefined) goRow(+link.dataset.row);
  else if (link.dataset.gotoFrame !== undefined) goFrame(+link.dataset.gotoFrame);
  else setFilter(link.dataset.code || link.dataset.text || "");
});
let typing = 0;
byId("f-text").addEventListener("input", () => { clearTimeout(typing); typing = setTimeout(applyView, 150); });
for (const id of ["f-proto", "f-sev", "f-kind"]) byId(id).addEventListener("change", applyView);
byId("f-clear").addEventListener("click", clearFilters);
byId("list-head").addEventListener("click", (event) => {
  const head = event.target.closest("[data-col]");
  if (!head) return;
  const col = +head.dataset.col;
  sortDir = sortCol === col ? -sortDir : 1;
  sortCol = col;
  for (const other of byId("list-head").children) other.className = "";
  head.className = sortDir > 0 ? "asc" : "desc";
  applyView();
});
for (const table of document.querySelectorAll("table.sortable")) {
  table.tHead.addEventListener("click", (event) => {
    const th = event.target.closest("th");
    if (!th) return;
    const col = th.cellIndex, dir = th.classList.contains("asc") ? -1 : 1;
    for (const other of table.tHead.rows[0].cells) other.classList.remove("asc", "desc");
    th.classList.add(dir > 0 ? "asc" : "desc");
    const key = (tr) => {
      const cell = tr.cells[col], v = cell.dataset.v;
      return v !== undefined && v !== "" ? +v : cell.textContent.toLowerCase();
    };
    const sorted = [...table.tBodies[0].rows].sort((a, b) => {
      const x = key(a), y = key(b);
      return (typeof x === typeof y ? (x < y ? -1 : x > y ? 1 : 0) : typeof x === "number" ? -1 : 1) * dir;
    });
    table.tBodies[0].append(...sorted);
  });
}
load().catch((error) => { status.textContent = "Could not read the report's data: " + error; });
})();
"""

LIST_COLUMNS = ["", "No.", "Time", "Source", "Destination", "Protocol", "Length", "Info"]


def csp():
    digest = base64.b64encode(hashlib.sha256(SCRIPT.encode("utf-8")).digest()).decode("ascii")
    return (f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'unsafe-inline'; img-src data:; "
            f"base-uri 'none'; form-action 'none'")


def script_json(value):
    """JSON that cannot end its ``<script>`` block nor open markup: ``<``, ``>``, ``&`` and the JavaScript
    line separators as escapes."""
    encoded = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return (encoded.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def write(out, title, overview, data, blobs):
    """The page to the text stream ``out``; ``blobs``: the chunk files (index, text, detail, members),
    copied in, not read into memory."""
    head = "".join(f'<span data-col="{index}">{name}</span>' for index, name in enumerate(LIST_COLUMNS))
    out.write(f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
              f'<meta http-equiv="Content-Security-Policy" content="{csp()}">'
              f'<meta name="viewport" content="width=device-width, initial-scale=1">'
              f'<meta name="generator" content="dissect {text(__version__)}">'
              f'<title>{text(title)}</title><style>{CSS}</style></head>\n<body>'
              f'<header class="top"><h1>{text(title)}</h1><nav><a href="#summary">Capture</a>'
              f'<a href="#findings">Findings</a><a href="#servers">Servers</a><a href="#plots">Traffic</a>'
              f'<a href="#panes">Packets</a></nav></header>\n<main><div id="overview">{overview}</div>\n'
              f'<section id="panes"><h2>Packets</h2><div class="toolbar">'
              f'<input id="f-text" type="search" placeholder="Filter: text, address, frame number, finding code"'
              f' aria-label="filter text">'
              f'<select id="f-proto" aria-label="protocol"><option value="">All protocols</option></select>'
              f'<select id="f-sev" aria-label="severity"><option value="all">Any severity</option>'
              f'<option value="1">Findings: chat and above</option><option value="2">Notes and above</option>'
              f'<option value="3">Warnings and errors</option><option value="4">Errors</option>'
              f'<option value="none">No findings</option></select>'
              f'<select id="f-kind" aria-label="rows"><option value="all">Frames and analyses</option>'
              f'<option value="frames">Frames</option><option value="analysis">Analyses</option></select>'
              f'<button id="f-clear" type="button">Clear</button><span id="list-status">Loading…</span></div>'
              f'<div id="list-head" class="grid">{head}</div>'
              f'<div id="list" tabindex="0" aria-label="packet list"><div id="list-spacer"></div>'
              f'<div id="list-rows"></div></div>'
              f'<div id="detail"><div id="tree" tabindex="-1"><div class="empty-pane">Pick a packet.</div></div>'
              f'<div id="hex"></div></div><div id="statusbar"></div></section></main>\n'
              f'<noscript><p>The packet panes need JavaScript; the overview above works without it.</p></noscript>\n'
              f'<script type="application/json" id="dissect-page">{script_json(data)}</script>\n')
    for blob in blobs.values():
        blob.copy_to(out)
    out.write(f'<script>{SCRIPT}</script>\n</body></html>\n')
