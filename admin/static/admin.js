// otopcua admin: keeps the Live redundancy panel current and drives the
// Trigger failover dialog. Plain JavaScript, no build step. The page is
// rendered by the server first; this script polls the JSON API once a
// second and re-renders the panel in place (no full reload).
"use strict";
(function () {
  var panel = document.getElementById("panel");
  if (!panel) { return; }
  var clusterId = panel.dataset.clusterId;
  var canFailover = panel.dataset.canFailover === "true";
  var api = "/api/clusters/" + encodeURIComponent(clusterId);
  var csrfMeta = document.querySelector('meta[name="csrf-token"]');
  var csrf = csrfMeta ? csrfMeta.content : "";
  var button = document.getElementById("failover-button");
  var dialog = document.getElementById("failover-dialog");
  var result = document.getElementById("failover-result");
  var pending = false;   // a failover request is in flight
  var target = button ? button.dataset.target || "" : "";
  var POLL_MS = 1000;

  function text(id, value) {
    var el = document.getElementById(id);
    if (el) { el.textContent = value; }
  }

  // Same format as the server's fmtTime: UTC to the second.
  function fmtTime(s) {
    var d = new Date(s);
    if (!s || isNaN(d.getTime()) || d.getUTCFullYear() <= 1) { return "\u2014"; }
    return d.toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
  }

  function cell(field, value) {
    var td = document.createElement("td");
    td.dataset.field = field;
    td.textContent = value;
    return td;
  }

  function memberRow(m) {
    var tr = document.createElement("tr");
    tr.dataset.nodeId = m.nodeId;
    tr.appendChild(cell("nodeId", m.nodeId + (m.self ? " (this node)" : "")));
    tr.appendChild(cell("role", m.role));
    tr.appendChild(cell("status", m.status));
    tr.appendChild(cell("upNumber", String(m.upNumber)));
    var sl = cell("serviceLevel", m.hasServiceLevel ? String(m.serviceLevel) : "not heard");
    sl.dataset.serviceLevel = m.hasServiceLevel ? String(m.serviceLevel) : "";
    tr.appendChild(sl);
    tr.appendChild(cell("reachable", m.reachable ? "yes" : "UNREACHABLE"));
    tr.appendChild(cell("configDb", m.configDb));
    tr.appendChild(cell("roles", (m.roles || []).join(", ")));
    return tr;
  }

  var DASH = "\u2014";

  function mirrorRow(m) {
    var tr = document.createElement("tr");
    tr.dataset.nodeId = m.nodeId;
    tr.appendChild(cell("nodeId", m.nodeId));
    tr.appendChild(cell("held", m.holds ? String(m.held) : DASH));
    tr.appendChild(cell("heldReady", m.holds ? (m.heldReady ? "yes" : "no (catching up: a failover falls back to Warm)") : DASH));
    tr.appendChild(cell("standby", m.standby ? (m.standbyReady ? "yes" : "no (catching up)") : DASH));
    tr.appendChild(cell("lagBytes", m.standby ? String(m.lagBytes) : DASH));
    return tr;
  }

  function renderMirror(mp) {
    var body = document.getElementById("mirror-body");
    if (!mp || !body) { return; }
    text("mirror-node", mp.node);
    text("mirror-served", String(mp.served));
    body.replaceChildren.apply(body, (mp.members || []).map(mirrorRow));
  }

  function failoverRow(f) {
    var tr = document.createElement("tr");
    [fmtTime(f.at), String(f.epoch), f.from || "\u2014", f.to].forEach(function (v) {
      var td = document.createElement("td");
      td.textContent = v;
      tr.appendChild(td);
    });
    return tr;
  }

  function renderButton(p) {
    if (!button || !canFailover) { return; }
    target = p.failoverTarget || "";
    button.dataset.target = target;
    button.disabled = pending || !p.failoverAllowed;
    button.title = p.failoverAllowed ? "Fail over " + target : (p.failoverBlocked || "failover not allowed now");
  }

  function render(p) {
    text("primary", p.primary || "none");
    text("epoch", String(p.epoch));
    text("downing", p.downing);
    if (p.floating && document.getElementById("floating")) {
      text("floating", p.floating.address + " \u00b7 held by " + p.floating.holder + " \u00b7 owner " +
        (p.floating.owner || "none") + " \u00b7 " + p.floating.state);
    }
    text("as-of", fmtTime(p.asOf));
    document.getElementById("members-body").replaceChildren.apply(
      document.getElementById("members-body"), (p.members || []).map(memberRow));
    document.getElementById("failovers-body").replaceChildren.apply(
      document.getElementById("failovers-body"), (p.failovers || []).map(failoverRow));
    renderMirror(p.mirror);
    renderButton(p);
  }

  function poll() {
    fetch(api + "/redundancy", { credentials: "same-origin", cache: "no-store" })
      .then(function (resp) {
        if (resp.status === 401) { throw new Error("session ended: log in again"); }
        return resp.json().then(function (body) {
          if (!resp.ok) { throw new Error(body.reason || body.error || ("HTTP " + resp.status)); }
          return body;
        });
      })
      .then(function (p) { render(p); text("panel-status", "live"); })
      .catch(function (err) { text("panel-status", "not updating: " + err.message); })
      .then(function () { setTimeout(poll, POLL_MS); });
  }

  function trigger() {
    pending = true;
    if (button) { button.disabled = true; }
    result.textContent = "Failover of " + target + " requested\u2026";
    fetch(api + "/failover", {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
      body: JSON.stringify({ expectTarget: target })
    }).then(function (resp) {
      return resp.json().then(function (body) {
        if (resp.ok) {
          result.dataset.outcome = "ok";
          result.textContent = "Failover sent: " + body.target + " is leaving (epoch " + body.epoch + ", " + fmtTime(body.at) + ").";
        } else {
          result.dataset.outcome = "refused";
          result.textContent = "Failover not done (" + resp.status + "): " + (body.reason || body.error);
        }
      });
    }).catch(function (err) {
      result.dataset.outcome = "error";
      result.textContent = "Failover request failed: " + err.message;
    }).then(function () { pending = false; });
  }

  if (button && dialog && canFailover) {
    button.addEventListener("click", function () {
      text("failover-dialog-target", target);
      dialog.showModal();
    });
    document.getElementById("failover-cancel").addEventListener("click", function () { dialog.close(); });
    document.getElementById("failover-confirm").addEventListener("click", function () {
      dialog.close();
      trigger();
    });
  }
  setTimeout(poll, POLL_MS);
})();
