// A fleet's cost page: draws the trend from the figure the server embedded as JSON
// (#cost-trend, a data block, not a script). Times are UTC text, which plotly.js draws as
// written whatever the browser's zone. A trend without bars says so in text.
(function () {
  "use strict";
  var source = document.getElementById("cost-trend");
  var figure = source ? JSON.parse(source.textContent) : null;
  var plot = document.getElementById("trend-plot");
  if (plot) {
    if (!figure || !figure.data || figure.data.length === 0) {
      plot.classList.add("empty");
      plot.textContent = "nothing to draw: no usage in any bucket of the period";
    } else {
      Plotly.newPlot(plot, figure.data, figure.layout, {displaylogo: false, responsive: true});
      plot.dataset.drawn = "true";
    }
  }
  document.body.dataset.rendered = "true";
})();
