// Fleet overview and group pages: draws each panel and the replica table from the overview
// JSON, kept live over a websocket, with polling as the fallback. Everything from the server
// is inserted as text (textContent, attributes via properties), never parsed as HTML.
(function () {
  "use strict";
  var config = document.getElementById("overview-config");
  var jsonUrl = config.dataset.jsonUrl;
  var wsPath = config.dataset.wsPath;
  var group = config.dataset.group;
  var isDefaultView = config.dataset.live === "true";
  var state = document.getElementById("live-state");
  var pollTimer = null;
  var socket = null;
  var retries = 0;

  function setState(text, kind) {
    state.textContent = text;
    state.className = "badge badge-" + kind;
  }

  function hhmm(iso) {
    return iso ? iso.slice(11, 16) + " UTC" : "";
  }

  function drawPanel(panel) {
    var figure = document.querySelector('[data-panel="' + CSS.escape(panel.id) + '"]');
    if (!figure) { return; }
    var plot = figure.querySelector(".plot");
    var status = figure.querySelector(".panel-status");
    var note = figure.querySelector(".panel-note");
    var notes = (panel.notes || []).slice();
    var hasData = panel.status === "ok" || panel.status === "partial";
    status.textContent = panel.status === "ok" ? "" : panel.status;
    status.className = "panel-status badge badge-" + (panel.status === "ok" ? "ok" : panel.status === "partial" ? "warning" : "bad");
    if (!hasData && panel.last_good_at) {
      notes.push("last good data " + hhmm(panel.last_good_at));
    }
    note.textContent = notes.join(" · ");
    if (panel.figure) {
      figure.classList.remove("unavailable", "stale");
      Plotly.react(plot, panel.figure.data, panel.figure.layout, {displaylogo: false, responsive: true});
      plot.dataset.drawn = "true";
    } else if (plot.dataset.drawn === "true" && panel.status === "error") {
      // The source failed: keep the last good chart, dimmed, rather than blank or zeros.
      figure.classList.add("stale");
    } else {
      figure.classList.add("unavailable");
      figure.classList.remove("stale");
      Plotly.purge(plot);
      plot.textContent = "";
      delete plot.dataset.drawn;
    }
  }

  function formatValue(value, unit) {
    if (value === null || value === undefined) { return "—"; }
    if (unit === "seconds") {
      return value < 1 ? (value * 1000).toFixed(0) + " ms" : value.toFixed(2) + " s";
    }
    if (unit === "ratio") { return (value * 100).toFixed(0) + "%"; }
    return Number(value.toPrecision(3)).toString();
  }

  function cell(row, text, className) {
    var td = document.createElement("td");
    td.textContent = text;
    if (className) { td.className = className; }
    row.appendChild(td);
    return td;
  }

  function replicaLink(instance) {
    var params = new URLSearchParams(window.location.search);
    params.set("instance", instance);
    var link = document.createElement("a");
    link.href = window.location.pathname + "?" + params.toString();
    link.textContent = instance;
    return link;
  }

  function drawReplicas(table) {
    var element = document.getElementById("replica-table");
    if (!element || !table) { return; }
    var head = element.tHead.rows[0];
    while (head.cells.length > 2) { head.deleteCell(2); }
    table.columns.forEach(function (column) {
      var th = document.createElement("th");
      th.scope = "col";
      th.textContent = column.title;
      var unit = document.createElement("span");
      unit.className = "unit";
      unit.textContent = column.unit;
      th.appendChild(unit);
      var edge = column.worse === "high" ? "at least " + column.factor + "× the median" : "at most 1/" + column.factor + " of the median";
      th.title = "flagged " + edge + " and at least " + column.floor + " " + column.unit + " away from it";
      var note = (table.notes || {})[column.id];
      if (note) { th.title = "unavailable: " + note; th.classList.add("unavailable"); }
      head.appendChild(th);
    });
    var body = element.tBodies[0];
    body.textContent = "";
    var selected = new URLSearchParams(window.location.search).get("instance");
    table.rows.forEach(function (replica) {
      var tr = body.insertRow();
      tr.dataset.state = replica.state;
      if (replica.instance === selected) { tr.classList.add("selected"); }
      var name = document.createElement("th");
      name.scope = "row";
      name.appendChild(replicaLink(replica.instance));
      tr.appendChild(name);
      var stateCell = cell(tr, replica.state, "state state-" + replica.state);
      if (replica.note) { stateCell.title = replica.note; stateCell.textContent = replica.note; }
      table.columns.forEach(function (column) {
        var flag = (replica.flags || {})[column.id];
        var value = (replica.values || {})[column.id];
        var above = (replica.above || {})[column.id];
        var text = above !== undefined ? "> " + formatValue(above, column.unit) : formatValue(value, column.unit);
        var td = cell(tr, text, flag ? "flag flag-" + flag : "");
        if (flag) { td.title = (flag === "high" ? "high" : "low") + " against the fleet median"; }
        if (above !== undefined) {
          td.title = "past the last bucket edge (" + formatValue(above, column.unit) + "): only a lower bound is known";
        } else if (value === null || value === undefined) { td.title = replica.state === "down" ? "replica down" : "no data"; }
      });
    });
    var medians = body.insertRow();
    medians.className = "median";
    var label = document.createElement("th");
    label.scope = "row";
    label.textContent = "fleet median";
    medians.appendChild(label);
    cell(medians, "", "");
    table.columns.forEach(function (column) {
      var median = (table.medians || {})[column.id];
      var td = cell(medians, formatValue(median, column.unit), "");
      if (median === undefined) { td.title = "needs 3 or more replicas with data"; }
    });
  }

  function drawSource(source, backend) {
    var banner = document.getElementById("source-banner");
    if (!source || source.status === "ok") {
      banner.hidden = true;
      banner.textContent = "";
      return;
    }
    banner.hidden = false;
    var since = source.since ? " since " + hhmm(source.since) : "";
    banner.textContent = (backend === "prometheus" ? "Prometheus" : "Data source") + " unavailable" + since + ": " + source.message;
  }

  function render(payload) {
    payload.panels.forEach(drawPanel);
    drawReplicas(payload.replicas);
    drawSource(payload.source_state, payload.backend);
    var scope = payload.instance ? ", replica " + payload.instance : "";
    document.getElementById("window-note").textContent =
      "All times UTC. Window " + payload.window.start + " to " + payload.window.end +
      ", step " + payload.window.step_seconds + " s, source: " + payload.backend + scope + ".";
    document.body.dataset.rendered = "true";
  }

  function poll() {
    var params = new URLSearchParams(window.location.search);
    if (group) { params.set("group", group); }
    var query = params.toString();
    fetch(jsonUrl + (query ? "?" + query : ""), {credentials: "same-origin", headers: {"Accept": "application/json"}})
      .then(function (response) {
        return response.json().then(function (body) {
          if (!response.ok) { throw new Error(body.error || "HTTP " + response.status); }
          return body;
        });
      })
      .then(render)
      .catch(function (error) { setState("update failed: " + error.message, "bad"); });
  }

  function schedulePolling() {
    clearTimeout(pollTimer);
    // Slow down in hidden tabs: nobody is looking, so no need to ask as often.
    var delay = document.hidden ? 60000 : 15000;
    pollTimer = setTimeout(function () { poll(); schedulePolling(); }, delay);
  }

  function connect() {
    var scheme = window.location.protocol === "https:" ? "wss://" : "ws://";
    socket = new WebSocket(scheme + window.location.host + wsPath);
    socket.onopen = function () {
      retries = 0;
      setState("live", "ok");
      clearTimeout(pollTimer);
    };
    socket.onmessage = function (event) { render(JSON.parse(event.data)); };
    socket.onclose = function (event) {
      setState(event.code === 4401 ? "signed out" : "polling", "warning");
      if (event.code === 4401) { return; }
      schedulePolling();
      retries += 1;
      setTimeout(connect, Math.min(60000, 1000 * Math.pow(2, retries)));
    };
  }

  setInterval(function () {
    if (socket && socket.readyState === WebSocket.OPEN) { socket.send("ping"); }
  }, 60000);

  poll();
  if (isDefaultView && "WebSocket" in window) {
    connect();
  } else {
    setState("polling", "muted");
    schedulePolling();
  }
})();
