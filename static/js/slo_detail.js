// An SLO's page: draws each chart from the figures the server embedded as JSON
// (#slo-charts, a data block, not a script). A chart without a figure says so in text.
// Times are milliseconds since the epoch, which plotly.js shows in UTC.
(function () {
  "use strict";
  var source = document.getElementById("slo-charts");
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
