/* dtypelint HTML report: filters, chart clicks, and the dataflow arrows drawn over the code. */
(function () {
  "use strict";
  var $ = function (sel, root) { return (root || document).querySelector(sel); };
  var $$ = function (sel, root) { return Array.prototype.slice.call((root || document).querySelectorAll(sel)); };
  var rule = $("#filter-rule"), file = $("#filter-file"), folder = $("#filter-folder");
  var chip = $("#folder-chip"), shown = $("#shown");
  var SVG = "http://www.w3.org/2000/svg";  // the SVG namespace name, not a resource

  function applyFilters() {
    var n = 0;
    $$(".finding").forEach(function (f) {
      var ok = (!rule.value || f.dataset.code === rule.value) &&
        (!file.value || f.dataset.file === file.value) &&
        (!folder.value || f.dataset.folder === folder.value);
      f.classList.toggle("hidden", !ok);
      if (ok) { n += 1; }
    });
    shown.textContent = n + " shown";
    chip.hidden = !folder.value;
    chip.textContent = folder.value ? "folder: " + folder.value + " \u00d7" : "";
    $$(".chart .bar").forEach(function (b) {
      var v = b.dataset.kind === "rule" ? rule.value : folder.value;
      b.classList.toggle("active", !!v && b.dataset.value === v);
    });
    drawAll();
  }

  function curve(a, b) {
    // badge to badge down the gutter: centre of a's bottom to centre of b's top (side by side: a short hop)
    var x1 = a.x + a.w / 2, x2 = b.x + b.w / 2;
    if (Math.abs(a.y - b.y) < 4) {
      return "M" + (a.x + a.w) + "," + (a.y + a.h / 2) + " L" + (b.x - 1) + "," + (b.y + b.h / 2);
    }
    var y1 = a.y + a.h, y2 = b.y - 1, bend = Math.min(28, Math.max(10, (y2 - y1) / 4));
    return "M" + x1 + "," + y1 + " C" + (x1 - bend) + "," + (y1 + bend) + " " + (x2 - bend) + "," + (y2 - bend) + " " + x2 + "," + y2;
  }

  function draw(code) {
    var svg = code.querySelector("svg.arrows");
    while (svg.firstChild) { svg.removeChild(svg.firstChild); }
    var box = code.getBoundingClientRect();
    if (!box.width) { return; }
    var pins = $$("a.pin", code).sort(function (a, b) { return a.dataset.order - b.dataset.order; });
    var id = "arrowhead-" + Math.random().toString(36).slice(2);
    var defs = document.createElementNS(SVG, "defs");
    var marker = document.createElementNS(SVG, "marker");
    marker.setAttribute("id", id); marker.setAttribute("viewBox", "0 0 10 10"); marker.setAttribute("refX", "9");
    marker.setAttribute("refY", "5"); marker.setAttribute("markerWidth", "6"); marker.setAttribute("markerHeight", "6");
    marker.setAttribute("orient", "auto-start-reverse");
    var tip = document.createElementNS(SVG, "path");
    tip.setAttribute("d", "M0,0 L10,5 L0,10 z"); tip.setAttribute("fill", "#c92a2a");
    marker.appendChild(tip); defs.appendChild(marker); svg.appendChild(defs);
    var rect = function (m) {
      var r = m.getBoundingClientRect();
      return { x: r.left - box.left + code.scrollLeft, y: r.top - box.top + code.scrollTop, w: r.width, h: r.height };
    };
    for (var i = 0; i + 1 < pins.length; i++) {
      var p = document.createElementNS(SVG, "path");
      p.setAttribute("d", curve(rect(pins[i]), rect(pins[i + 1])));
      p.setAttribute("marker-end", "url(#" + id + ")");
      svg.appendChild(p);
    }
  }

  function drawAll() { $$(".finding:not(.hidden) .codeblock").forEach(draw); }

  function flash(el) {
    el.classList.add("flash");
    setTimeout(function () { el.classList.remove("flash"); }, 1400);
  }

  rule.addEventListener("change", applyFilters);
  file.addEventListener("change", applyFilters);
  $("#filter-reset").addEventListener("click", function () { rule.value = ""; file.value = ""; folder.value = ""; applyFilters(); });
  chip.addEventListener("click", function () { folder.value = ""; applyFilters(); });
  $$(".chart .bar").forEach(function (b) {
    var pick = function () {
      var target = b.dataset.kind === "rule" ? rule : folder;
      target.value = target.value === b.dataset.value ? "" : b.dataset.value;
      applyFilters();
      var first = $(".finding:not(.hidden)");
      if (first) { first.scrollIntoView({ block: "start" }); }
    };
    b.addEventListener("click", pick);
    b.addEventListener("keydown", function (e) { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); pick(); } });
  });
  $$(".step .num").forEach(function (a) {
    a.addEventListener("click", function () {
      var pin = document.getElementById(a.dataset.target);
      if (pin) { flash(pin); }
    });
  });
  $$("a.pin").forEach(function (a) {
    a.addEventListener("click", function () {
      var step = document.getElementById(a.getAttribute("href").slice(1));
      if (step) { flash(step); }
    });
  });
  $$("details").forEach(function (d) { d.addEventListener("toggle", drawAll); });
  $$(".doc-link a").forEach(function (a) {
    a.addEventListener("click", function () {
      var doc = document.getElementById(a.getAttribute("href").slice(1));
      if (doc) { doc.open = true; }
    });
  });
  window.addEventListener("resize", drawAll);
  applyFilters();
})();
