// The trace view (tomii.trace_view): each worker a lane of task bars, each slot a lane of frame
// bars, over time; bars coloured by frame; zoom and pan on the time axis; a bar's details on
// click. The payload: {title, workers, slots, nodes, tasks: [[worker, start_ns, end_ns, node,
// instance, frame, slot, ready_ns]], frames: [[frame, slot, start_ns, end_ns]], total_tasks}.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("tomii-payload").textContent);
  var LANE = 26, GAP = 4, LEFT = 90, TOP = 28;
  var colour = d3.scale.category20();
  var svg = d3.select("#timeline");
  var width = function () { return svg.node().getBoundingClientRect().width || 1200; };

  document.getElementById("title").textContent = data.title;
  var shown = data.tasks.length, total = data.total_tasks;
  document.getElementById("summary").textContent =
    data.workers + " worker(s), " + data.slots + " slot(s), " + data.frames.length + " frame(s), " +
    total + " task(s)";
  if (shown < total) {
    document.getElementById("status").textContent =
      "showing the first " + shown + " of " + total + " tasks; the Chrome trace (Perfetto) shows all";
  }

  var end = d3.max(data.tasks, function (t) { return t[2]; }) || 1;
  end = Math.max(end, d3.max(data.frames, function (f) { return f[3]; }) || 1);
  var x = d3.scale.linear().domain([0, end]).range([LEFT, width() - 10]);
  var lanes = [];
  for (var w = 0; w < data.workers; w++) lanes.push({kind: "worker", id: w, label: "worker " + w});
  for (var s = 0; s < data.slots; s++) lanes.push({kind: "slot", id: s, label: "slot " + s});
  var laneY = function (kind, id) { return TOP + (kind === "worker" ? id : data.workers + id) * (LANE + GAP); };
  svg.attr("height", TOP + lanes.length * (LANE + GAP) + 10).style("height", (TOP + lanes.length * (LANE + GAP) + 10) + "px");

  var body = svg.append("g");
  var lane = body.selectAll("g.lane").data(lanes).enter().append("g")
    .attr("class", function (l) { return l.kind === "worker" ? "lane" : "frame-lane"; })
    .attr("data-worker", function (l) { return l.kind === "worker" ? l.id : null; })
    .attr("data-slot", function (l) { return l.kind === "slot" ? l.id : null; })
    .attr("transform", function (l) { return "translate(0," + laneY(l.kind, l.id) + ")"; });
  lane.append("rect").attr("class", "lane__band").attr("x", LEFT).attr("height", LANE);
  lane.append("text").attr("class", "lane__label").attr("x", 6).attr("y", LANE / 2 + 4)
    .text(function (l) { return l.label; });

  var tasks = body.selectAll("rect.task").data(data.tasks).enter().append("rect")
    .attr("class", "task")
    .attr("data-node", function (t) { return data.nodes[t[3]]; })
    .attr("data-frame", function (t) { return t[5]; })
    .attr("data-worker", function (t) { return t[0]; })
    .attr("y", function (t) { return laneY("worker", t[0]) + 2; })
    .attr("height", LANE - 4)
    .style("fill", function (t) { return colour(t[5] % 20); })
    .on("click", function (t) { select(this, taskDetails(t)); });
  var frames = body.selectAll("rect.frame").data(data.frames).enter().append("rect")
    .attr("class", "frame")
    .attr("data-frame", function (f) { return f[0]; })
    .attr("y", function (f) { return laneY("slot", f[1]) + 2; })
    .attr("height", LANE - 4)
    .style("fill", function (f) { return colour(f[0] % 20); })
    .on("click", function (f) { select(this, frameDetails(f)); });
  var axis = svg.append("g").attr("class", "axis").attr("transform", "translate(0," + (TOP - 6) + ")");
  var axisOf = d3.svg.axis().scale(x).orient("top").ticks(8)
    .tickFormat(function (ns) { return (ns / 1000).toFixed(ns < 10000 ? 2 : 0) + " µs"; });

  function draw() {
    lane.select("rect.lane__band").attr("width", Math.max(0, width() - 10 - LEFT));
    tasks.attr("x", function (t) { return Math.max(LEFT, x(t[1])); })
      .attr("width", function (t) { return Math.max(1, x(t[2]) - Math.max(LEFT, x(t[1]))); })
      .style("display", function (t) { return x(t[2]) < LEFT ? "none" : null; });
    frames.attr("x", function (f) { return Math.max(LEFT, x(f[2])); })
      .attr("width", function (f) { return Math.max(1, x(f[3]) - Math.max(LEFT, x(f[2]))); })
      .style("display", function (f) { return x(f[3]) < LEFT ? "none" : null; });
    axis.call(axisOf);
  }
  var zoom = d3.behavior.zoom().x(x).scaleExtent([1, 1e6]).on("zoom", draw);
  svg.call(zoom);
  function fit() {
    x.domain([0, end]).range([LEFT, width() - 10]);
    zoom.x(x);
    draw();
  }
  document.getElementById("fit").addEventListener("click", fit);
  window.addEventListener("resize", fit);
  fit();
  svg.attr("data-ready", "true");

  function us(ns) { return (ns / 1000).toFixed(3) + " µs"; }
  function taskDetails(t) {
    return [["node", data.nodes[t[3]]], ["instance", t[4]], ["frame", t[5]], ["slot", t[6]],
      ["worker", t[0]], ["start", us(t[1])], ["duration", us(t[2] - t[1])], ["queued", us(t[1] - t[7])]];
  }
  function frameDetails(f) {
    return [["frame", f[0]], ["slot", f[1]], ["start", us(f[2])], ["latency", us(f[3] - f[2])]];
  }
  function select(bar, rows) {
    d3.selectAll(".task--selected").classed("task--selected", false);
    d3.selectAll(".frame--selected").classed("frame--selected", false);
    d3.select(bar).classed(d3.select(bar).classed("task") ? "task--selected" : "frame--selected", true);
    var details = d3.select("#details").html("");
    var list = details.append("dl");
    rows.forEach(function (row) {
      list.append("dt").text(row[0]);
      list.append("dd").attr("data-field", row[0]).text(row[1]);
    });
  }
})();
