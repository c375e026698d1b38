// The overview's replica table (the overview JSON's `replicas`): each replica's figures
// against the fleet median, flagged cells, and a histogram's bucket where only the bucket is
// known. Everything from the server is inserted as text (textContent, attributes via
// properties), never parsed as HTML.
(function () {
  "use strict";
  var overview = window.FleetScopeOverview = window.FleetScopeOverview || {};

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

  overview.drawReplicas = drawReplicas;
})();
