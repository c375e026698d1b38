// One payload of the overview JSON (fetched or pushed: live_updates.js) onto the page. What
// on-call reads first goes in at once: the replica table (replica_table.js), the source
// banner, the window, each panel's status badge and notes; each panel's chart goes to the
// drawing queue (charts.js). Everything from the server is inserted as text (textContent,
// attributes via properties), never parsed as HTML.
(function () {
  "use strict";
  var overview = window.FleetScopeOverview = window.FleetScopeOverview || {};
  // Badge colour per panel status: red only for failures, grey for a fleet that simply
  // runs without what the panel needs.
  var STATUS_KIND = {ok: "ok", partial: "warning", "not-configured": "muted", unavailable: "bad", error: "bad"};

  function hhmm(iso) {
    return iso ? iso.slice(11, 16) + " UTC" : "";
  }

  function figureOf(id) {
    return document.querySelector('[data-panel="' + CSS.escape(id) + '"]');
  }

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

  // A panel's text, badge and classes, at once; its chart goes to the drawing queue.
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
    overview.offerScales(figure, panel);
    if (panel.figure) {
      overview.queueChart(panel);
      figure.dataset.drawn = "false";
      return;
    }
    overview.dropChart(panel.id);
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
    overview.drawReplicas(payload.replicas);
    drawSource(payload.source_state, payload.backend);
    var scope = payload.instance ? ", replica " + payload.instance : "";
    document.getElementById("window-note").textContent =
      "All times UTC. Window " + payload.window.start + " to " + payload.window.end +
      ", step " + payload.window.step_seconds + " s, source: " + payload.backend + scope + ".";
    payload.panels.forEach(updatePanel);
    overview.drawQueued();
  }

  // The socket re-sends on connect the overview the page has just fetched: drawn once.
  var lastText = null;
  function renderText(text, body) {
    if (text === lastText) { return; }
    lastText = text;
    render(body || JSON.parse(text));
  }

  overview.renderText = renderText;
})();
