// The overview's charts, drawn with plotly.js from the panels of each payload (payload.js
// queues them here).
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
  var overview = window.FleetScopeOverview = window.FleetScopeOverview || {};
  var allAtOnce = new URLSearchParams(window.location.search).get("render") === "all-at-once";
  // Panel id -> its payload whose chart is not drawn yet (only the latest one is kept).
  var pendingCharts = {};
  var stepTimer = null;
  var idleHandle = null;
  var observer = null;
  var marked = {};

  // The latest payload of a panel with a figure, to draw when its turn comes.
  function queueChart(panel) {
    pendingCharts[panel.id] = panel;
  }

  // A panel whose latest payload has no figure: nothing of it is left to draw.
  function dropChart(id) {
    delete pendingCharts[id];
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
      panel.figure.layout.yaxis = Object.assign({}, yaxis, {type: overview.scaleOf(panel)});
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

  // A payload's charts, once its text is in: in the order above, or all in one go for the
  // benchmark's baseline.
  function drawQueued() {
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

  overview.queueChart = queueChart;
  overview.dropChart = dropChart;
  overview.drawQueued = drawQueued;
})();
