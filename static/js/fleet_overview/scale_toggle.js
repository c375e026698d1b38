// A latency quantile panel offers linear and log y axes (figure.y_scales): one button in
// its caption, pressed for log. CSP forbids inline handlers: the listener is added here.
(function () {
  "use strict";
  var overview = window.FleetScopeOverview = window.FleetScopeOverview || {};
  // The y scale the user picked per panel (linear or log), kept across live updates; a
  // panel nobody touched follows the server's default (log when values span > 2 decades).
  var chosenScale = {};

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

  // The scale a panel's chart is drawn with: the user's pick, else the figure's (linear when
  // it names none).
  function scaleOf(panel) {
    var yaxis = panel.figure.layout.yaxis || {};
    return chosenScale[panel.id] || yaxis.type || "linear";
  }

  // A payload's panel: its button shows the scale in use when the figure offers both, and
  // is hidden when a new figure does not (a panel without a figure leaves it as it was).
  function offerScales(figure, panel) {
    var toggle = figure.querySelector(".scale-toggle");
    if (panel.figure && panel.figure.y_scales) {
      toggle = scaleToggle(figure, panel.id);
      showScale(toggle, scaleOf(panel));
      toggle.hidden = false;
    } else if (toggle && panel.figure) {
      toggle.hidden = true;
    }
  }

  overview.scaleOf = scaleOf;
  overview.offerScales = offerScales;
})();
