"""The script the report runs once laid out: it records, on the page, whether it drew whole."""

# Runs once the page is laid out: measures every chart and counts its drawn marks, so a
# headless browser (and the test) can tell the charts rendered.
CHECK_SCRIPT = """
(function () {
  var charts = document.querySelectorAll("svg[data-chart]");
  var ok = charts.length > 0;
  charts.forEach(function (svg) {
    var box = svg.getBoundingClientRect();
    var drawn = 0;
    svg.querySelectorAll(".mark").forEach(function (mark) {
      var size = mark.getBBox();
      if (size.width > 0 && size.height > 0) { drawn += 1; }
    });
    svg.setAttribute("data-rendered-width", String(Math.round(box.width)));
    svg.setAttribute("data-rendered-height", String(Math.round(box.height)));
    svg.setAttribute("data-marks-drawn", String(drawn));
    if (!(box.width > 0 && box.height > 0 && drawn > 0)) { ok = false; }
  });
  // a chart label outside its chart's box is clipped; a page wider than the window scrolls
  var clipped = 0;
  charts.forEach(function (svg) {
    var view = svg.viewBox.baseVal;
    svg.querySelectorAll("text").forEach(function (text) {
      var b = text.getBBox();
      if (b.x < view.x - 0.5 || b.y < view.y - 0.5 || b.x + b.width > view.x + view.width + 0.5 ||
          b.y + b.height > view.y + view.height + 0.5) { clipped += 1; }
    });
  });
  document.body.setAttribute("data-clipped-labels", String(clipped));
  // two chart labels drawn over each other cannot be read: each label's box is turned into the
  // chart's space with its own transform (day labels are rotated) and the boxes are tested with
  // separating axes, so rotated labels side by side do not count
  var overlapping = 0;
  var pairs = [];
  function corners(text) {
    var b = text.getBBox();
    var m = text.getCTM();
    var svg = text.ownerSVGElement;
    var base = svg.getCTM().inverse();
    return [[b.x, b.y], [b.x + b.width, b.y], [b.x + b.width, b.y + b.height],
      [b.x, b.y + b.height]].map(function (c) {
      var p = svg.createSVGPoint();
      p.x = c[0]; p.y = c[1];
      return p.matrixTransform(m).matrixTransform(base);
    });
  }
  function apart(a, b) {
    var quads = [a, b];
    for (var q = 0; q < 2; q += 1) {
      for (var i = 0; i < 4; i += 1) {
        var p1 = quads[q][i], p2 = quads[q][(i + 1) % 4];
        var nx = p2.y - p1.y, ny = p1.x - p2.x;
        var minA = Infinity, maxA = -Infinity, minB = Infinity, maxB = -Infinity;
        a.forEach(function (p) { var v = p.x * nx + p.y * ny; minA = Math.min(minA, v);
          maxA = Math.max(maxA, v); });
        b.forEach(function (p) { var v = p.x * nx + p.y * ny; minB = Math.min(minB, v);
          maxB = Math.max(maxB, v); });
        var slack = 0.5 * Math.sqrt(nx * nx + ny * ny);
        if (maxA <= minB + slack || maxB <= minA + slack) { return true; }
      }
    }
    return false;
  }
  charts.forEach(function (svg) {
    var labels = [];
    svg.querySelectorAll("text").forEach(function (text) {
      if (text.getBBox().width > 0) { labels.push([text, corners(text)]); }
    });
    for (var i = 0; i < labels.length; i += 1) {
      for (var j = i + 1; j < labels.length; j += 1) {
        if (!apart(labels[i][1], labels[j][1])) {
          overlapping += 1;
          pairs.push(labels[i][0].textContent + " / " + labels[j][0].textContent);
        }
      }
    }
  });
  document.body.setAttribute("data-overlapping-pairs", pairs.slice(0, 5).join("; "));
  document.body.setAttribute("data-overlapping-labels", String(overlapping));
  // a table wider than its box hides columns behind a scroll; one past the window is cut off
  var wide = [];
  document.querySelectorAll("div.table").forEach(function (box) {
    var table = box.querySelector("table");
    if (!table) { return; }
    var section = box.closest("section");
    var name = section ? section.id : "?";
    var right = table.getBoundingClientRect().right;
    if (table.scrollWidth > box.clientWidth + 1 || right > window.innerWidth) {
      wide.push(name + "(" + table.scrollWidth + ">" + box.clientWidth + ")");
    }
  });
  document.body.setAttribute("data-wide-tables", wide.join(" "));
  document.body.setAttribute("data-page-width", String(document.documentElement.scrollWidth));
  document.body.setAttribute("data-window-width", String(window.innerWidth));
  document.body.setAttribute("data-report-rendered", ok ? "ok" : "failed");
  document.title = document.title + (ok ? " (rendered)" : " (chart failed)");
})();
"""
