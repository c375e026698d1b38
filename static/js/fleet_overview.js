// Fleet overview: draws each panel from the overview JSON, kept live over a websocket,
// with polling as the fallback. Everything from the server is inserted as text, never HTML.
(function () {
  "use strict";
  var config = document.getElementById("overview-config");
  var jsonUrl = config.dataset.jsonUrl;
  var wsPath = config.dataset.wsPath;
  var state = document.getElementById("live-state");
  var params = new URLSearchParams(window.location.search);
  var isDefaultView = !params.get("since") || params.get("since") === "1h";
  isDefaultView = isDefaultView && !params.get("model") && !params.get("end") && !params.get("backend");
  var pollTimer = null;
  var socket = null;
  var retries = 0;

  function setState(text, kind) {
    state.textContent = text;
    state.className = "badge badge-" + kind;
  }

  function drawPanel(panel) {
    var figure = document.querySelector('[data-panel="' + CSS.escape(panel.id) + '"]');
    if (!figure) { return; }
    var plot = figure.querySelector(".plot");
    var status = figure.querySelector(".panel-status");
    var note = figure.querySelector(".panel-note");
    status.textContent = panel.status === "ok" ? "" : panel.status;
    status.className = "panel-status badge badge-" + (panel.status === "ok" ? "ok" : panel.status === "partial" ? "warning" : "bad");
    note.textContent = (panel.notes || []).join(" · ");
    figure.classList.toggle("unavailable", !panel.figure);
    if (panel.figure) {
      Plotly.react(plot, panel.figure.data, panel.figure.layout, {displaylogo: false, responsive: true});
    } else {
      Plotly.purge(plot);
      plot.textContent = "";
    }
  }

  function render(payload) {
    payload.panels.forEach(drawPanel);
    document.getElementById("window-note").textContent =
      "All times UTC. Window " + payload.window.start + " to " + payload.window.end +
      ", step " + payload.window.step_seconds + " s, source: " + payload.backend + ".";
    document.body.dataset.rendered = "true";
  }

  function poll() {
    var url = jsonUrl + (window.location.search || "");
    fetch(url, {credentials: "same-origin", headers: {"Accept": "application/json"}})
      .then(function (response) {
        if (!response.ok) { throw new Error("HTTP " + response.status); }
        return response.json();
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
