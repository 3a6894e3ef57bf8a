// console.js: the Shoal console — reads the node's HTTP API with the key, and updates from its event stream.
// Every value from the node is set as text (never as HTML): device names and record fields come from peers.
"use strict";

const state = { key: sessionStorage.getItem("shoal.key") || "", cursor: null, devices: null, zones: [] };
const $ = id => document.getElementById(id);

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k.startsWith("on")) e.addEventListener(k.slice(2), v); else if (v !== undefined && v !== null) e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(c === undefined || c === null ? "" : String(c)));
  return e;
}
function rows(tbody, list, render, empty) {
  tbody.replaceChildren(...(list.length ? list.map(render) : [el("tr", {}, el("td", { colspan: 9, class: "empty" }, empty))]));
}
function short(id) { return id ? id.slice(0, 7) : "-"; }
function ago(iso) {
  if (!iso) return "-";
  const s = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  return s < 90 ? `${s.toFixed(0)} s ago` : s < 5400 ? `${(s / 60).toFixed(0)} min ago` : new Date(iso).toLocaleString();
}

async function api(method, path, body) {
  const options = { method, headers: { "X-API-Key": state.key } };
  if (body !== undefined) { options.headers["Content-Type"] = "application/json"; options.body = JSON.stringify(body); }
  const r = await fetch(path, options);
  if (r.status === 401) { signOut("The key was refused."); throw new Error("not signed in"); }
  const json = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(json.error ? `${json.error.code}: ${json.error.message}` : `HTTP ${r.status}`);
  return json;
}
function report(e) { $("connection").textContent = String(e.message || e); $("connection").className = "error"; }

function signOut(message) {
  sessionStorage.removeItem("shoal.key");
  state.key = "";
  $("console").hidden = true;
  $("login").hidden = false;
  $("login-error").textContent = message || "";
  $("connection").textContent = "not signed in";
}

async function signIn(key) {
  state.key = key;
  const me = await api("GET", "/api/v1/device");
  sessionStorage.setItem("shoal.key", key);
  $("login").hidden = true;
  $("console").hidden = false;
  $("device-id").textContent = me.device;
  $("device-name").textContent = me.name || "(no name)";
  $("node-id").textContent = me.node;
  QR.draw($("qr"), me.device, 4);
  $("connection").textContent = "connected";
  $("connection").className = "ok";
  await refreshAll();
  follow();
}

async function refreshDevices() {
  const d = await api("GET", "/api/v1/devices");
  state.devices = d;
  rows($("pending"), d.pending, p => el("tr", { "data-device": p.device },
    el("td", {}, el("code", {}, p.device)), el("td", {}, p.address), el("td", {}, ago(p.lastSeen)), el("td", {}, p.count),
    el("td", {},
      el("button", { class: "accept primary", onclick: () => act(() => api("POST", "/api/v1/devices", { device: p.device })) }, "Accept"), " ",
      el("button", { class: "reject danger", onclick: () => act(() => api("DELETE", `/api/v1/devices/${encodeURIComponent(p.device)}`)) }, "Reject"))),
    "no device is waiting");
  rows($("trusted"), d.trusted, t => el("tr", { "data-device": t.device },
    el("td", {}, el("code", { title: t.device }, short(t.device))), el("td", {}, t.name),
    el("td", { class: t.connected ? "ok" : "muted" }, t.connected ? "connected" : "not connected"),
    el("td", {}, t.found.length ? t.found.map(f => `${f.address} (${f.source})`).join(", ") : "-"),
    el("td", {}, ago(t.lastSeen)),
    el("td", {}, el("button", { class: "danger", onclick: () => confirm(`Stop trusting ${t.name || short(t.device)}?`) && act(() => api("DELETE", `/api/v1/devices/${encodeURIComponent(t.device)}`)) }, "Remove"))),
    "no trusted device yet: accept a pending one, or trust an ID below");
}

async function refreshZones() {
  const [z, s] = await Promise.all([api("GET", "/api/v1/zones"), api("GET", "/api/v1/status")]);
  state.zones = z.zones;
  const counts = Object.fromEntries(s.zones.map(x => [x.zone, x.records]));
  rows($("zones"), z.zones, zone => el("tr", { "data-zone": zone.zone },
    el("td", {}, zone.zone), el("td", {}, el("code", { title: zone.owner }, zone.owner ? short(zone.owner) : "-")), el("td", {}, zone.role),
    el("td", {}, zone.members.map(m => `${nameOf(m.device)} (${m.role})`).join(", ") || "-"),
    el("td", {}, counts[zone.zone] ?? "-"),
    el("td", {}, zone.role === "owner" ? el("button", { onclick: () => openShare(zone) }, "Share…") : "",
      " ", el("button", { class: "danger", onclick: () => confirm(`Delete zone ${zone.zone} and its records?`) && act(() => api("DELETE", `/api/v1/zones/${encodeURIComponent(zone.zone)}`)) }, "Delete"))),
    "no zone yet");
  const select = $("query-zone"), chosen = select.value;
  select.replaceChildren(...z.zones.map(x => el("option", { value: x.zone }, x.zone)));
  if (chosen) select.value = chosen;
  renderStatus(s);
}

function nameOf(device) {
  const t = state.devices && state.devices.trusted.find(x => x.device === device);
  return t && t.name ? t.name : short(device);
}

function renderStatus(s) {
  rows($("sync"), s.replication, r => el("tr", {},
    el("td", {}, el("code", {}, short(r.peer))), el("td", {}, r.zone),
    el("td", {}, !r.receiving ? "-" : r.receivedCaughtUp ? `caught up (${r.recordsReceived} received)` :
      `catching up (${r.recordsReceived}${r.recordsExpected ? " of " + r.recordsExpected : ""})`),
    el("td", {}, !r.sending ? "-" : r.sentCaughtUp && r.unacknowledgedBatches === 0 ? "up to date" : `sending (${r.unacknowledgedBatches} batches unacknowledged)`)),
    "not replicating with any peer right now");
  $("counters").textContent = `received ${s.received.records} records in ${s.received.batches} batches; sent ${s.sent.records} in ${s.sent.batches}; ${s.connections} connection(s)`;
  const errors = Object.entries(s.errors).map(([peer, e]) => `${short(peer)}: ${e}`)
    .concat(s.peers.filter(p => p.lastError).map(p => `${p.address}: ${p.lastError}`));
  $("errors").replaceChildren(...(errors.length ? errors.map(e => el("li", { class: "error" }, e)) : [el("li", { class: "muted" }, "none")]));
}

async function refreshConflicts() {
  const c = await api("GET", "/api/v1/conflicts");
  rows($("conflicts"), c.conflicts, x => el("tr", {},
    el("td", {}, ago(x.date)), el("td", {}, `${x.zone} / ${x.record}`), el("td", {}, x.fields.join(", ")),
    el("td", {}, x.outcome.kind + (x.outcome.reason ? `: ${x.outcome.reason}` : ""))), "no conflict since the daemon started");
}

function openShare(zone) {
  $("share-zone").textContent = zone.zone;
  const candidates = (state.devices ? state.devices.trusted : []);
  $("share-device").replaceChildren(...candidates.map(t => el("option", { value: t.device }, `${t.name || short(t.device)} (${short(t.device)})`)));
  const dialog = $("share-dialog");
  dialog.onclose = () => {
    if (dialog.returnValue !== "ok" || !$("share-device").value) return;
    act(() => api("PUT", `/api/v1/zones/${encodeURIComponent(zone.zone)}/members/${encodeURIComponent($("share-device").value)}`, { role: $("share-role").value }));
  };
  dialog.showModal();
}

function renderValue(v) {
  if (v === null || typeof v !== "object") return String(v);
  if (Array.isArray(v)) return "[" + v.map(renderValue).join(", ") + "]";
  if ("date" in v) return v.date;
  if ("bytes" in v) return `<${v.bytes.length / 2} bytes>`;
  if ("asset" in v) return `asset ${v.asset.slice(0, 12)}… (${v.size} B)`;
  if ("reference" in v) return `→ ${v.reference}`;
  if ("latitude" in v) return `@${v.latitude},${v.longitude}`;
  return JSON.stringify(v);
}

async function query(next) {
  const zone = encodeURIComponent($("query-zone").value);
  if (!zone) return;
  const limit = $("query-limit").value || 20;
  const path = next && state.cursor ? `/api/v1/zones/${zone}/records?limit=${limit}&cursor=${encodeURIComponent(state.cursor)}`
    : `/api/v1/zones/${zone}/records?type=${encodeURIComponent($("query-type").value)}&limit=${limit}` + ($("query-sort").value ? `&sort=${encodeURIComponent($("query-sort").value)}` : "");
  const page = await api("GET", path);
  state.cursor = page.cursor;
  $("query-next").disabled = !page.cursor;
  const names = [...new Set(page.records.flatMap(r => Object.keys(r.fields)))].sort();
  $("records-head").replaceChildren(el("tr", {}, el("th", {}, "name"), ...names.map(n => el("th", {}, n)), el("th", {}, "modified")));
  rows($("records"), page.records, r => el("tr", {}, el("td", {}, r.name), ...names.map(n => el("td", {}, n in r.fields ? renderValue(r.fields[n]) : "")),
    el("td", {}, r.modified || "")), "no record matches");
}

async function act(f) {
  try { await f(); await refreshAll(); } catch (e) { report(e); }
}
async function refreshAll() {
  try { await refreshDevices(); await refreshZones(); await refreshConflicts(); } catch (e) { report(e); }
}

// The event stream, read with fetch (an EventSource cannot send the key); reconnects after 3 s.
async function follow() {
  let timer = null;
  const soon = () => { clearTimeout(timer); timer = setTimeout(refreshAll, 250); };
  while (state.key) {
    try {
      const r = await fetch("/api/v1/events", { headers: { "X-API-Key": state.key } });
      if (!r.ok || !r.body) throw new Error(`events: HTTP ${r.status}`);
      const reader = r.body.getReader(), decoder = new TextDecoder();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let end;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const chunk = buffer.slice(0, end); buffer = buffer.slice(end + 2);
          if (/^event: (change|conflict)/m.test(chunk)) soon();
        }
      }
    } catch (e) { report(e); }
    await new Promise(ok => setTimeout(ok, 3000));
  }
}

$("login-form").addEventListener("submit", e => { e.preventDefault(); signIn($("key").value.trim()).catch(err => { $("login-error").textContent = String(err.message || err); }); });
$("trust-form").addEventListener("submit", e => {
  e.preventDefault();
  act(() => api("POST", "/api/v1/devices", { device: $("trust-device").value.trim(), name: $("trust-name").value.trim() || undefined, address: $("trust-address").value.trim() || undefined }));
});
$("zone-form").addEventListener("submit", e => { e.preventDefault(); act(() => api("POST", "/api/v1/zones", { zone: $("zone-name").value.trim() })); });
$("query-form").addEventListener("submit", e => { e.preventDefault(); query(false).catch(report); });
$("query-next").addEventListener("click", () => query(true).catch(report));
// Pending devices and connection states change without a store change: look again every 5 s.
setInterval(() => { if (state.key) refreshAll(); }, 5000);

// The key may come in the page's fragment (#key=…, never sent to the server), as the headless test does.
const fragment = new URLSearchParams(location.hash.slice(1));
if (fragment.get("key")) { state.key = fragment.get("key"); history.replaceState(null, "", location.pathname); }
if (state.key) signIn(state.key).catch(() => signOut()); else signOut();
