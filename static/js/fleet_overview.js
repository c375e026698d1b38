// Fleet overview and group pages: draws each panel and the replica table from the overview
// JSON, kept live over a websocket, with polling as the fallback. Everything from the server
// is inserted as text (textContent, attributes via properties), never parsed as HTML.
// Polling stops for good (body[data-polling=stopped]) when asking again cannot help: a URL
// parameter the server rejects (400) or a signed-out session (401, or the login redirect).
// The badge says "live" only while pushes keep coming (live_state.js); an open socket
// without them turns "stale since HH:MM:SS UTC" and the page polls. When Redis fails the
// server says so (close code 4503 with a reason, or `live_updates` in the JSON): a banner
// says live updates are unavailable and why, and the page polls (body[data-live=off]).
//
// Drawing order: the browser, not the server, is the slow part (31 charts take seconds on a
// loaded 2-core machine), so a payload's text (the replica table, badges, notes) goes in at
// once and its charts are drawn one per task: first the panels on screen, in page order,
// then those within one viewport of it, then the rest when the page is idle; a panel
// scrolled to is drawn next. Each figure says data-drawn=true once it shows the latest
// payload; body[data-rendered=true] once the first screen is drawn, body[data-all-drawn=true]
// while every panel is. Later payloads update charts in place (Plotly.react). The marks
// fleetscope:first-chart and fleetscope:all-charts (benchmarks/browser_overview.py) are
// set at the first paint after the first and the last chart of the first payload.
// plotly.js loads asynchronously (the template's #plotly-js): the overview is fetched and its
// table drawn meanwhile. ?render=all-at-once gives the page as it was, the benchmark's
// baseline: plotly.js loaded first and every chart drawn in one go with Plotly.newPlot.
(function () {
  "use strict";
  var config = document.getElementById("overview-config");
  var jsonUrl = config.dataset.jsonUrl;
  var wsPath = config.dataset.wsPath;
  var group = config.dataset.group;
  var isDefaultView = config.dataset.live === "true";
  var loginUrl = config.dataset.loginUrl;
  // The page already says which parameter cannot be used: nothing to ask the server.
  var pageProblem = config.dataset.problem;
  var state = document.getElementById("live-state");
  var viewAlert = document.getElementById("view-alert");
  var liveBanner = document.getElementById("live-banner");
  var liveState = new window.FleetScopeLiveState(2 * Number(config.dataset.liveInterval || 15));
  var POLL_SECONDS = 15;
  var CLOSE_LIVE_UNAVAILABLE = 4503;  // dashboard/consumers.py
  var pollTimer = null;
  var socket = null;
  var retries = 0;
  var reconnectTimer = null;  // set while the socket is closed and a retry is pending
  var openTimer = null;  // set while a socket that just opened has yet to prove it stays
  var OPEN_GRACE_MS = 1000;
  var stopped = false;
  // Badge colour per panel status: red only for failures, grey for a fleet that simply
  // runs without what the panel needs.
  var STATUS_KIND = {ok: "ok", partial: "warning", "not-configured": "muted", unavailable: "bad", error: "bad"};
  // The y scale the user picked per panel (linear or log), kept across live updates; a
  // panel nobody touched follows the server's default (log when values span > 2 decades).
  var chosenScale = {};
  var allAtOnce = new URLSearchParams(window.location.search).get("render") === "all-at-once";
  // Panel id -> its payload whose chart is not drawn yet (only the latest one is kept).
  var pendingCharts = {};
  var stepTimer = null;
  var idleHandle = null;
  var observer = null;
  var marked = {};

  function setState(text, kind) {
    state.textContent = text;
    state.className = "badge badge-" + kind;
  }

  function showAlert(parts) {
    // parts: strings (text) and {text, href} (links), in order.
    viewAlert.textContent = "";
    parts.forEach(function (part) {
      if (typeof part === "string") {
        viewAlert.appendChild(document.createTextNode(part));
        return;
      }
      var link = document.createElement("a");
      link.href = part.href;
      link.textContent = part.text;
      viewAlert.appendChild(link);
    });
    viewAlert.hidden = false;
  }

  function stop(text, kind) {
    stopped = true;
    clearTimeout(pollTimer);
    pollTimer = null;
    document.body.dataset.polling = "stopped";
    setState(text, kind);
  }

  function signedOut() {
    if (stopped) { return; }
    if (socket) {
      socket.onclose = null;
      socket.close();
    }
    var next = window.location.pathname + window.location.search;
    showAlert(["Signed out — ", {text: "log in again", href: loginUrl + "?next=" + encodeURIComponent(next)}]);
    stop("signed out", "muted");
  }

  function badParameter(body) {
    var name = body.parameter || "";
    var params = new URLSearchParams(window.location.search);
    params.delete(name);
    var rest = params.toString();
    var parts = [body.error || "a URL parameter cannot be used"];
    if (name && name !== "group") {
      parts.push(" ", {text: "show the view without " + name, href: window.location.pathname + (rest ? "?" + rest : "")});
      var control = document.querySelector('#filters [name="' + CSS.escape(name) + '"]');
      if (control) { control.setAttribute("aria-invalid", "true"); }
    }
    if (document.body.dataset.rendered === "true") {
      parts.push(" (the charts below are the last good view, no longer updated)");
    }
    showAlert(parts);
    stop("stopped", "warning");
  }

  function hhmm(iso) {
    return iso ? iso.slice(11, 16) + " UTC" : "";
  }

  // A latency quantile panel offers linear and log y axes (figure.y_scales): one button in
  // its caption, pressed for log. CSP forbids inline handlers: the listener is added here.
  function scaleToggle(figure, panelId) {
    var button = figure.querySelector(".scale-toggle");
    if (button) { return button; }
    button = document.createElement("button");
    button.type = "button";
    button.className = "scale-toggle";
    button.textContent = "log scale";
    button.addEventListener("click", function () {
      var scale = button.getAttribute("aria-pressed") === "true" ? "linear" : "log";
      chosenScale[panelId] = scale;
      showScale(button, scale);
      var plot = figure.querySelector(".plot");
      if (plot.dataset.drawn === "true") {
        Plotly.relayout(plot, {"yaxis.type": scale, "yaxis.autorange": true});
      }
    });
    figure.querySelector("figcaption").appendChild(button);
    return button;
  }

  function showScale(button, scale) {
    button.setAttribute("aria-pressed", scale === "log" ? "true" : "false");
    button.title = scale === "log" ? "y axis on a log scale: click for linear" : "y axis linear: click for a log scale";
  }

  function figureOf(id) {
    return document.querySelector('[data-panel="' + CSS.escape(id) + '"]');
  }

  // A panel's text, badge and classes, at once; its chart goes to the drawing queue.
  // A figure whose traces share one time axis carries it once (dashboard/overview.py
  // `_axes_shared`): each trace gets it back before plotly.js sees the figure.
  function withSharedAxis(panel) {
    var shared = panel.figure && panel.figure.x;
    if (!shared) { return; }
    panel.figure.data.forEach(function (trace) {
      if (trace.x === undefined) { trace.x = shared; }
    });
    delete panel.figure.x;
  }

  function updatePanel(panel) {
    withSharedAxis(panel);
    var figure = figureOf(panel.id);
    if (!figure) { return; }
    var plot = figure.querySelector(".plot");
    var status = figure.querySelector(".panel-status");
    var note = figure.querySelector(".panel-note");
    var notes = (panel.notes || []).slice();
    var hasData = panel.status === "ok" || panel.status === "partial";
    status.textContent = panel.status === "ok" ? "" : panel.status.replace("-", " ");
    status.className = "panel-status badge badge-" + (STATUS_KIND[panel.status] || "bad");
    figure.classList.toggle("not-configured", panel.status === "not-configured");
    if (panel.status === "not-configured") {
      // What would enable it, from the metric catalog; the planner's own note only when it
      // says more than that (a look-alike metric that is no substitute, say).
      var requires = panel.requires || [];
      notes = requires.map(function (what) { return "not configured on this fleet: needs " + what; })
        .concat(notes.filter(function (text) {
          return !requires.some(function (what) { return text.endsWith("flag-gated: needs " + what); });
        }));
    }
    if (!hasData && panel.last_good_at) {
      notes.push("last good data " + hhmm(panel.last_good_at));
    }
    note.textContent = notes.join(" · ");
    var toggle = figure.querySelector(".scale-toggle");
    if (panel.figure && panel.figure.y_scales) {
      toggle = scaleToggle(figure, panel.id);
      var yaxis = panel.figure.layout.yaxis || {};
      showScale(toggle, chosenScale[panel.id] || yaxis.type || "linear");
      toggle.hidden = false;
    } else if (toggle && panel.figure) {
      toggle.hidden = true;
    }
    if (panel.figure) {
      pendingCharts[panel.id] = panel;
      figure.dataset.drawn = "false";
      return;
    }
    delete pendingCharts[panel.id];
    figure.dataset.drawn = "true";
    if (plot.dataset.drawn === "true" && panel.status === "error") {
      // The source failed: keep the last good chart, dimmed, rather than blank or zeros.
      figure.classList.add("stale");
    } else {
      figure.classList.add("unavailable");
      figure.classList.remove("stale");
      if (window.Plotly) { Plotly.purge(plot); }
      plot.textContent = "";
      delete plot.dataset.drawn;
    }
  }

  // plotly.js loads asynchronously: the table and the text need not wait for it.
  var waitingForPlotly = false;
  function plotlyReady() {
    if (window.Plotly) { return true; }
    var script = document.getElementById("plotly-js");
    if (script && !waitingForPlotly) {
      waitingForPlotly = true;
      script.addEventListener("load", function () { waitingForPlotly = false; scheduleCharts(); });
    }
    return false;
  }

  function drawChart(figure, panel) {
    delete pendingCharts[panel.id];
    var plot = figure.querySelector(".plot");
    if (panel.figure.y_scales) {
      // The scale picked now, which may have changed since the payload came.
      var yaxis = panel.figure.layout.yaxis || {};
      panel.figure.layout.yaxis = Object.assign({}, yaxis, {type: chosenScale[panel.id] || yaxis.type || "linear"});
    }
    figure.classList.remove("unavailable", "stale");
    var draw = allAtOnce ? Plotly.newPlot : Plotly.react;
    draw(plot, panel.figure.data, panel.figure.layout, {displaylogo: false, responsive: true});
    plot.dataset.drawn = "true";
    figure.dataset.drawn = "true";
    mark("fleetscope:first-chart");
  }

  // A performance mark at the first paint after now (once per name), for the benchmark.
  function mark(name) {
    if (marked[name] || !window.performance || !performance.mark) { return; }
    marked[name] = true;
    requestAnimationFrame(function () { setTimeout(function () { performance.mark(name); }, 0); });
  }

  // The next chart to draw: the first pending one on screen, else within a viewport of it,
  // else any ({far: true}: drawn when the page is idle).
  function nextChart() {
    var height = window.innerHeight || document.documentElement.clientHeight;
    var near = null;
    var far = null;
    var figures = document.querySelectorAll("figure.chart[data-panel]");
    for (var i = 0; i < figures.length; i++) {
      var panel = pendingCharts[figures[i].dataset.panel];
      if (!panel) { continue; }
      var box = figures[i].getBoundingClientRect();
      if (box.bottom > 0 && box.top < height) {
        return {figure: figures[i], panel: panel, visible: true};
      }
      if (!near && box.bottom > -height && box.top < 2 * height) {
        near = {figure: figures[i], panel: panel};
      } else if (!far) {
        far = {figure: figures[i], panel: panel, far: true};
      }
    }
    return near || far;
  }

  function settle() {
    var next = nextChart();
    if (!next || !next.visible) {
      document.body.dataset.rendered = "true";
    }
    document.body.dataset.allDrawn = next ? "false" : "true";
    if (!next) { mark("fleetscope:all-charts"); }
    return next;
  }

  function whenIdle(callback) {
    if (window.requestIdleCallback) { return window.requestIdleCallback(callback, {timeout: 2000}); }
    return setTimeout(callback, 50);
  }

  function scheduleCharts() {
    if (stepTimer === null) { stepTimer = setTimeout(drawStep, 0); }
  }

  // One chart per task, so the browser paints and answers input between charts.
  function drawStep(fromIdle) {
    stepTimer = null;
    var next = settle();
    if (!next || !plotlyReady()) { return; }
    if (next.far && fromIdle !== true) {
      if (idleHandle === null) {
        idleHandle = whenIdle(function () { idleHandle = null; drawStep(true); });
      }
      return;
    }
    drawChart(next.figure, next.panel);
    scheduleCharts();
  }

  function watchScrolling() {
    if (observer || !("IntersectionObserver" in window)) { return; }
    // A panel coming within a viewport of the screen is drawn before the idle ones.
    observer = new IntersectionObserver(function (entries) {
      if (entries.some(function (entry) { return entry.isIntersecting && pendingCharts[entry.target.dataset.panel]; })) {
        scheduleCharts();
      }
    }, {rootMargin: "100% 0px 100% 0px"});
    document.querySelectorAll("figure.chart[data-panel]").forEach(function (figure) { observer.observe(figure); });
  }

  function formatValue(value, unit) {
    if (value === null || value === undefined) { return "—"; }
    if (unit === "seconds") {
      return value < 1 ? (value * 1000).toFixed(0) + " ms" : value.toFixed(2) + " s";
    }
    if (unit === "ratio") { return (value * 100).toFixed(0) + "%"; }
    return Number(value.toPrecision(3)).toString();
  }

  // A number as a bucket edge: up to 4 significant figures, trailing zeros dropped.
  function edge(value) {
    return Number(value.toPrecision(4)).toString();
  }

  // A quantile's bucket (lower, upper] as the cell shows it: "160–640 s", "500 ms–1 s".
  function formatBucket(lower, upper, unit) {
    if (unit === "seconds") {
      if (upper < 1) { return edge(lower * 1000) + "–" + edge(upper * 1000) + " ms"; }
      if (lower >= 1 || lower === 0) { return edge(lower) + "–" + edge(upper) + " s"; }
      return edge(lower * 1000) + " ms–" + edge(upper) + " s";
    }
    if (unit === "ratio") { return edge(lower * 100) + "–" + edge(upper * 100) + "%"; }
    return edge(lower) + "–" + edge(upper);
  }

  // The rule the table follows, stated once by the server (dashboard.precision).
  function drawPrecisionNote(table) {
    var note = document.getElementById("replicas-precision");
    if (!note || table.wide_bucket_fraction === undefined) { return; }
    note.textContent = "p99s are read from histogram buckets: when a p99's bucket is wider than " +
      Math.round(table.wide_bucket_fraction * 100) + "% of its value the cell shows the bucket " +
      "(hover for the interpolated value), and it is flagged only when the whole bucket is off; " +
      "past the last bucket edge it shows only the edge it exceeds (“> 1 s”).";
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
      if (column.compared_with && column.compared_with.length) {
        th.title += "; compared with: " + column.compared_with.join("; ");
      }
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
        var bucket = (replica.buckets || {})[column.id];
        var wide = bucket && (replica.wide || []).indexOf(column.id) !== -1;
        var text = formatValue(value, column.unit);
        if (above !== undefined) {
          text = "> " + formatValue(above, column.unit);
        } else if (wide) {
          // Only the bucket is known to this precision: the interpolated value is a guess.
          text = formatBucket(bucket[0], bucket[1], column.unit);
        }
        var classes = (flag ? "flag flag-" + flag : "") + (wide || above !== undefined ? " bucket" : "");
        var td = cell(tr, text, classes.trim());
        var why = (replica.titles || {})[column.id] || (replica.not_compared || {})[column.id];
        var titles = [(replica.interpolated || {})[column.id], why].filter(Boolean);
        if (above !== undefined) {
          titles.unshift("past the last bucket edge (> " + formatValue(above, column.unit) + "): only a lower bound is known");
        } else if (value === null || value === undefined) {
          titles = [replica.state === "down" ? "replica down" : "no data"];
        }
        td.title = titles.join("; ");
        if (!td.title) { td.removeAttribute("title"); }
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
      var bucket = (table.median_buckets || {})[column.id];
      var wide = bucket && (table.medians_wide || []).indexOf(column.id) !== -1;
      var td = cell(medians, wide ? formatBucket(bucket[0], bucket[1], column.unit) : formatValue(median, column.unit), wide ? "bucket" : "");
      if (median === undefined) {
        td.title = "needs 3 or more replicas with data";
      } else if (bucket) {
        td.title = "between " + formatValue(bucket[0], column.unit) + " and " + formatValue(bucket[1], column.unit) +
          " (the medians of the replicas' bucket edges); the median of their interpolated values is " +
          formatValue(median, column.unit);
      }
    });
    drawPrecisionNote(table);
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
    // What on-call reads first: the replica table and the text, then the charts.
    drawReplicas(payload.replicas);
    drawSource(payload.source_state, payload.backend);
    var scope = payload.instance ? ", replica " + payload.instance : "";
    document.getElementById("window-note").textContent =
      "All times UTC. Window " + payload.window.start + " to " + payload.window.end +
      ", step " + payload.window.step_seconds + " s, source: " + payload.backend + scope + ".";
    payload.panels.forEach(updatePanel);
    if (allAtOnce) {
      document.querySelectorAll("figure.chart[data-panel]").forEach(function (figure) {
        var panel = pendingCharts[figure.dataset.panel];
        if (panel) { drawChart(figure, panel); }
      });
      settle();
      return;
    }
    watchScrolling();
    settle();
    scheduleCharts();
  }

  // The socket re-sends on connect the overview the page has just fetched: drawn once.
  var lastText = null;
  function renderText(text, body) {
    if (text === lastText) { return; }
    lastText = text;
    render(body || JSON.parse(text));
  }

  function poll() {
    if (stopped) { return; }
    var params = new URLSearchParams(window.location.search);
    params.delete("render");  // how the page draws, nothing the server reads
    if (group) { params.set("group", group); }
    var query = params.toString();
    // redirect: "manual": a redirect here can only be to the login page, whose HTML is no
    // answer to read (the server says 401 itself; this covers anything that redirects).
    fetch(jsonUrl + (query ? "?" + query : ""), {credentials: "same-origin", redirect: "manual", headers: {"Accept": "application/json"}})
      .then(function (response) {
        if (response.status === 401 || response.type === "opaqueredirect") {
          signedOut();
          return null;
        }
        var type = (response.headers.get("Content-Type") || "").split(";")[0];
        if (type !== "application/json") {
          // A proxy's error page, say: worth asking again later.
          throw new Error("HTTP " + response.status + " answered with " + (type || "no content type") + ", not JSON");
        }
        return response.text().then(function (text) {
          var body = JSON.parse(text);
          if (response.status === 400) {
            badParameter(body);
            return null;
          }
          if (!response.ok) { throw new Error(body.error || "HTTP " + response.status); }
          return {body: body, text: text};
        });
      })
      .then(function (answer) {
        if (!answer || stopped) { return; }
        renderText(answer.text, answer.body);
        var updates = answer.body.live_updates;
        if (isDefaultView && updates && updates.status === "off") {
          liveOff("live updates unavailable: " + updates.message);
        } else if (reconnectTimer !== null) {
          // The server answers without trouble again (Redis is back, say): reconnect now
          // rather than wait out a backoff that may have grown to a minute.
          clearTimeout(reconnectTimer);
          reconnectTimer = null;
          retries = 0;
          connect();
        }
        if (state.textContent.indexOf("update failed") === 0) { setState("polling", "muted"); }
      })
      .catch(function (error) { if (!stopped) { setState("update failed: " + error.message, "bad"); } });
  }

  function schedulePolling() {
    clearTimeout(pollTimer);
    if (stopped) { return; }
    document.body.dataset.polling = "on";
    // Slow down in hidden tabs: nobody is looking, so no need to ask as often.
    var delay = document.hidden ? 60000 : POLL_SECONDS * 1000;
    pollTimer = setTimeout(function () { poll(); schedulePolling(); }, delay);
  }

  var inflating = Promise.resolve();

  function pushedText(data) {
    if (typeof data === "string") { return Promise.resolve(data); }
    var stream = new Blob([data]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(stream).text();
  }

  function connect() {
    if (stopped) { return; }
    var scheme = window.location.protocol === "https:" ? "wss://" : "ws://";
    socket = new WebSocket(scheme + window.location.host + wsPath);
    socket.onopen = function () {
      // A server that cannot serve live updates (Redis down) accepts, then closes with 4503
      // at once: the socket counts as live only once it has stayed open a moment, so a
      // refusal neither flickers the badge, nor cancels a due poll, nor resets the backoff.
      openTimer = setTimeout(function () {
        openTimer = null;
        if (!socket || socket.readyState !== WebSocket.OPEN) { return; }
        retries = 0;
        liveState.opened(Date.now());
        showLive();
      }, OPEN_GRACE_MS);
    };
    // Pushes are gzip-compressed JSON in binary frames, compressed once for every viewer
    // on the server; inflating is asynchronous, so pushes are rendered one after another.
    socket.binaryType = "arraybuffer";
    socket.onmessage = function (event) {
      var data = event.data;
      inflating = inflating
        .then(function () { return pushedText(data); })
        .then(function (text) {
          if (stopped) { return; }
          var body = JSON.parse(text);
          if (liveState.pushed(body.live, Date.now())) { showLive(); }
          renderText(text, body);
        })
        .catch(function (error) { setState("update failed: " + error.message, "bad"); });
    };
    socket.onclose = function (event) {
      clearTimeout(openTimer);
      openTimer = null;
      liveState.closed();
      if (event.code === 4401) {
        socket = null;
        signedOut();
        return;
      }
      if (event.code === CLOSE_LIVE_UNAVAILABLE) {
        liveOff(event.reason || "live updates unavailable");
      } else {
        document.body.dataset.live = "closed";
      }
      setState("polling", "warning");
      // Keep a poll already due: rescheduling it on every refused socket would put it off
      // for as long as sockets keep being refused.
      if (pollTimer === null) { schedulePolling(); }
      retries += 1;
      reconnectTimer = setTimeout(function () {
        reconnectTimer = null;
        connect();
      }, Math.min(60000, 1000 * Math.pow(2, retries)));
    };
  }

  function showLive() {
    liveBanner.hidden = true;
    liveBanner.textContent = "";
    document.body.dataset.live = "live";
    setState("live", "ok");
    clearTimeout(pollTimer);
    pollTimer = null;
    document.body.dataset.polling = "off";
  }

  function liveOff(why) {
    liveBanner.textContent = why + "; polling every " + POLL_SECONDS + " s";
    liveBanner.hidden = false;
    document.body.dataset.live = "off";
  }

  setInterval(function () {
    if (socket && socket.readyState === WebSocket.OPEN) { socket.send("ping"); }
  }, 60000);

  // An open socket without a fresh push is stale: say since when (UTC) and poll meanwhile;
  // the next push makes it live again.
  setInterval(function () {
    if (stopped || !socket || socket.readyState !== WebSocket.OPEN) { return; }
    var now = liveState.at(Date.now());
    if (now.state !== "stale" || document.body.dataset.live === "stale") { return; }
    document.body.dataset.live = "stale";
    setState("stale since " + now.since.slice(11, 19) + " UTC, polling", "warning");
    poll();
    schedulePolling();
  }, 1000);

  if (pageProblem) {
    stop("stopped", "warning");
    return;
  }
  poll();
  if (isDefaultView && "WebSocket" in window) {
    connect();
  } else {
    setState("polling", "muted");
    schedulePolling();
  }
})();
