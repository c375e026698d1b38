// Draws each [data-chart] element from the figures the server embedded as JSON in the
// data block this script's data-source names (a data block, not a script: the CSP allows
// no inline script). A chart without a figure says so in text. Times are UTC wall-clock
// text, which plotly.js shows as written.
(function () {
  "use strict";
  var me = document.currentScript;
  var source = document.getElementById(me ? me.dataset.source : "");
  var charts = source ? JSON.parse(source.textContent) : {};
  var plots = document.querySelectorAll("[data-chart]");
  Array.prototype.forEach.call(plots, function (plot) {
    var figure = charts[plot.dataset.chart];
    if (!figure || !figure.data || figure.data.length === 0) {
      plot.classList.add("empty");
      plot.textContent = "nothing to draw: no data for this chart";
      return;
    }
    Plotly.newPlot(plot, figure.data, figure.layout, {displaylogo: false, responsive: true});
    plot.dataset.drawn = "true";
  });
  document.body.dataset.rendered = "true";
})();
