/* The graph view (tomii.graph_view): draws the payload's graph in layers (dagre) as SVG (d3),
 * shows what a clicked node or edge is, and in edit mode changes the graph and sends it to the
 * local editor server, whose parser (the runtime's) decides whether it is saved.
 * It never judges a graph itself: what the parser would refuse is drawn as far as it can be. */
(function () {
  "use strict";

  var payload = JSON.parse(document.getElementById("tomii-payload").textContent);
  var graph = payload.graph;
  var selected = null; // {type: "node", name: NAME} or {type: "edge", id: ID}
  var EDGE_KINDS = { $res: "res", $dep: "dep", $barrier: "barrier" };
  var NODE_KINDS = [
    ["compute", "node"],
    ["conditional", "conditional node"],
    ["post", "post-node"],
    ["input", "input"],
    ["network", "$network input"],
  ];
  var NETWORK = "$network";
  var LINE = 16;

  var svg = d3.select("#graph");
  var zoom = d3.behavior.zoom().scaleExtent([0.05, 4]).on("zoom", function () {
    svg.select(".viewport").attr(
      "transform", "translate(" + d3.event.translate + ")scale(" + d3.event.scale + ")");
  });

  // The graph's parts.

  function list(value) {
    return Array.isArray(value) ? value : [];
  }

  function vertices() {
    var out = [];
    list(graph.inputs).forEach(function (spec) {
      out.push({ name: String(spec.name), kind: "input", section: "inputs", spec: spec });
    });
    if (graph.network_config) {
      out.push({ name: NETWORK, kind: "network", section: "network_config", spec: graph.network_config });
    }
    list(graph.nodes).forEach(function (spec) {
      var kind = spec.condition ? "conditional" : "compute";
      out.push({ name: String(spec.name), kind: kind, section: "nodes", spec: spec });
    });
    list(graph.post_nodes).forEach(function (spec) {
      out.push({ name: String(spec.name), kind: "post", section: "post_nodes", spec: spec });
    });
    return out;
  }

  function argLists(spec) {
    var lists = [["args", list(spec.args)], ["loop_args", list(spec.loop_args)]];
    if (spec.condition && typeof spec.condition === "object") {
      lists.push(["condition", list(spec.condition.args)]);
    }
    return lists;
  }

  /** Every edge argument of every node: where it sits and what it reads. */
  function edges() {
    var out = [];
    list(graph.nodes).concat(list(graph.post_nodes)).forEach(function (spec) {
      argLists(spec).forEach(function (entry) {
        entry[1].forEach(function (arg, position) {
          if (!arg || typeof arg !== "object" || !EDGE_KINDS[arg.type]) return;
          var predecessor = arg.predecessor && typeof arg.predecessor === "object" ? arg.predecessor : {};
          out.push({
            id: spec.name + "/" + entry[0] + "/" + position,
            from: String(predecessor.name),
            to: String(spec.name),
            kind: arg.type,
            place: entry[0],
            position: position,
            arg: arg,
            list: entry[1],
          });
        });
      });
    });
    return out;
  }

  function findVertex(name) {
    return vertices().filter(function (v) { return v.name === name; })[0];
  }

  function findEdge(id) {
    return edges().filter(function (e) { return e.id === id; })[0];
  }

  // What the drawing and the details say.

  function literalValue(value) {
    return value && typeof value === "object" && "value" in value ? value.value : value;
  }

  /** A factor as written, with the value of the initialization it names. */
  function factorText(factor) {
    if (factor === undefined || factor === null) return "1";
    if (typeof factor !== "string") return String(factor);
    var init = list(graph.initializations).filter(function (i) { return i.name === factor; })[0];
    return init && "value" in init ? factor + " (" + JSON.stringify(literalValue(init.value)) + ")" : factor;
  }

  function selectionText(kind, predecessor) {
    if (predecessor.group_by !== undefined && predecessor.group_by !== null) return "groups of " + predecessor.group_by;
    var index = predecessor.index;
    var wrap = predecessor.wrap ? ", wrapping" : "";
    if (index === undefined || index === null) return (kind === "$barrier" ? "every instance" : "same instance") + wrap;
    if (index === "all") return "every instance";
    return "index " + JSON.stringify(index) + wrap;
  }

  /** The short label an edge carries: its selection when it is not the default one. */
  function edgeLabel(edge) {
    var predecessor = edge.arg.predecessor || {};
    if (predecessor.group_by !== undefined && predecessor.group_by !== null) return "group_by " + predecessor.group_by;
    var text = predecessor.index === undefined || predecessor.index === null ? "" : String(predecessor.index);
    return text + (predecessor.wrap ? (text ? " " : "") + "wrap" : "");
  }

  function argText(arg) {
    if (!arg || typeof arg !== "object") return JSON.stringify(arg);
    if (EDGE_KINDS[arg.type]) {
      var predecessor = arg.predecessor || {};
      return arg.type + " ← " + predecessor.name + " (" + selectionText(arg.type, predecessor) + ")";
    }
    if (arg.type === "$ref") return "$ref " + arg.name;
    if ("value" in arg) return arg.type + " " + JSON.stringify(arg.value);
    return String(arg.type);
  }

  function conditionText(condition) {
    var args = list(condition.args).map(argText).join(", ");
    var type = condition.value_type ? " " + condition.value_type : "";
    return (condition.function || condition.func) + "(" + args + ") " + condition.operation + " " +
      JSON.stringify(condition.value) + type;
  }

  /** The lines of a node's box: its name, its call and factor, its scheduling tags. */
  function boxLines(vertex) {
    var spec = vertex.spec;
    if (vertex.kind === "network") {
      return [NETWORK, "× " + factorText(spec.frame_packets || spec.stream_packets) + " packets",
        (spec.socket_type || "udp") + ", " + factorText(spec.num_sockets || 1) + " socket(s)"];
    }
    if (vertex.kind === "input") return [vertex.name, "input × " + factorText(spec.factor)];
    var lines = [vertex.name, (spec.function || "?") + " × " + factorText(spec.factor)];
    var tags = [];
    if (spec.priority !== undefined && spec.priority !== null) tags.push("priority " + spec.priority);
    if (spec.use_workers !== undefined && spec.use_workers !== null) tags.push("workers " + spec.use_workers);
    if (spec.group_size !== undefined && spec.group_size !== null) tags.push("group " + spec.group_size);
    if (spec.loop) tags.push("loop × " + factorText(spec.loop.factor));
    if (spec.condition) tags.push("if " + spec.condition.operation + " " + JSON.stringify(spec.condition.value));
    if (tags.length) lines.push(tags.join(" · "));
    return lines;
  }

  // The drawing.

  function render() {
    var all = vertices();
    var links = edges();
    svg.selectAll("*").remove();
    addMarkers(svg.append("defs"));
    var viewport = svg.append("g").attr("class", "viewport")
      .attr("transform", "translate(" + zoom.translate() + ")scale(" + zoom.scale() + ")");
    var edgeLayer = viewport.append("g").attr("class", "edges");
    var nodeLayer = viewport.append("g").attr("class", "nodes");

    var layout = new dagre.graphlib.Graph({ multigraph: true });
    layout.setGraph({ rankdir: "TB", nodesep: 28, ranksep: 56, edgesep: 12, marginx: 24, marginy: 24 });
    layout.setDefaultEdgeLabel(function () { return {}; });

    var boxes = nodeLayer.selectAll("g.node").data(all).enter().append("g")
      .attr("class", function (v) { return "node node--" + v.kind; })
      .attr("data-name", function (v) { return v.name; })
      .attr("data-kind", function (v) { return v.kind; })
      .on("click", function (v) { d3.event.stopPropagation(); select({ type: "node", name: v.name }); });
    boxes.append("title").text(function (v) { return v.name + " (" + kindName(v.kind) + ")"; });
    var rects = boxes.append("rect");
    boxes.each(function (v) {
      var box = d3.select(this);
      boxLines(v).forEach(function (line, i) {
        box.append("text")
          .attr("class", i === 0 ? "node__name" : i === 1 ? "node__call" : "node__badge")
          .attr("text-anchor", "middle")
          .attr("y", i * LINE)
          .text(line);
      });
      var size = this.getBBox();
      v.width = Math.max(90, size.width + 24);
      v.height = boxLines(v).length * LINE + 14;
      layout.setNode(v.name, { width: v.width, height: v.height });
    });

    var known = {};
    all.forEach(function (v) { known[v.name] = true; });
    var drawn = links.filter(function (e) { return known[e.from] && known[e.to]; });
    drawn.forEach(function (e) {
      var label = edgeLabel(e);
      layout.setEdge(e.from, e.to, { width: label.length * 7, height: label ? 14 : 0, labelpos: "c" }, e.id);
    });
    dagre.layout(layout);

    boxes.attr("transform", function (v) {
      var at = layout.node(v.name);
      return "translate(" + at.x + "," + at.y + ")";
    });
    rects.attr("x", function (v) { return -v.width / 2; })
      .attr("y", function (v) { return -v.height / 2; })
      .attr("width", function (v) { return v.width; })
      .attr("height", function (v) { return v.height; });
    boxes.selectAll("text").attr("dy", function (_, i) {
      var lines = boxLines(d3.select(this.parentNode).datum()).length;
      return (-(lines - 1) * LINE) / 2 + 4;
    });
    drawEdges(edgeLayer, drawn, layout);

    var missing = links.length - drawn.length;
    var size = layout.graph();
    svg.attr("data-width", size.width).attr("data-height", size.height);
    svg.call(zoom).on("dblclick.zoom", null);
    svg.on("click", function () { select(null); });
    summarize(all, links, missing);
    legend(all, links);
    refreshEditForms(all);
    highlight();
    svg.attr("data-ready", "true");
  }

  function addMarkers(defs) {
    Object.keys(EDGE_KINDS).forEach(function (kind) {
      defs.append("marker")
        .attr("id", "arrow-" + EDGE_KINDS[kind])
        .attr("class", "arrow--" + EDGE_KINDS[kind])
        .attr("viewBox", "0 0 10 10").attr("refX", 9).attr("refY", 5)
        .attr("markerUnits", "userSpaceOnUse").attr("markerWidth", 10).attr("markerHeight", 10)
        .attr("orient", "auto")
        .append("path").attr("d", "M0,0L10,5L0,10z");
    });
  }

  function drawEdges(layer, drawn, layout) {
    var line = d3.svg.line().x(function (p) { return p.x; }).y(function (p) { return p.y; }).interpolate("basis");
    var groups = layer.selectAll("g.edge-group").data(drawn).enter().append("g")
      .attr("class", "edge-group")
      .on("click", function (e) { d3.event.stopPropagation(); select({ type: "edge", id: e.id }); });
    groups.append("path").attr("class", "edge-hit")
      .attr("d", function (e) { return line(layout.edge(e.from, e.to, e.id).points); });
    groups.append("path")
      .attr("class", function (e) { return "edge edge--" + EDGE_KINDS[e.kind]; })
      .attr("data-id", function (e) { return e.id; })
      .attr("data-from", function (e) { return e.from; })
      .attr("data-to", function (e) { return e.to; })
      .attr("data-kind", function (e) { return e.kind; })
      .attr("marker-end", function (e) { return "url(#arrow-" + EDGE_KINDS[e.kind] + ")"; })
      .attr("d", function (e) { return line(layout.edge(e.from, e.to, e.id).points); })
      .append("title").text(function (e) { return e.kind + " " + e.from + " → " + e.to + ": " + selectionText(e.kind, e.arg.predecessor || {}); });
    groups.filter(function (e) { return edgeLabel(e) !== ""; }).append("text")
      .attr("class", "edge__label node__badge")
      .attr("text-anchor", "middle")
      .attr("x", function (e) { return layout.edge(e.from, e.to, e.id).x; })
      .attr("y", function (e) { return layout.edge(e.from, e.to, e.id).y + 4; })
      .text(edgeLabel);
  }

  function kindName(kind) {
    return NODE_KINDS.filter(function (k) { return k[0] === kind; })[0][1];
  }

  function summarize(all, links, missing) {
    var count = function (n, noun) { return n + " " + noun + (n === 1 ? "" : "s"); };
    var nodes = all.filter(function (v) { return v.section === "nodes"; }).length;
    var posts = all.filter(function (v) { return v.section === "post_nodes"; }).length;
    var text = count(nodes, "node") + ", " + count(posts, "post-node") + ", " + count(links.length, "edge");
    if (missing) text += " (" + count(missing, "edge") + " from no such node, not drawn)";
    d3.select("#summary").text(text);
  }

  function legend(all, links) {
    var box = d3.select("#legend").html("");
    NODE_KINDS.forEach(function (kind) {
      if (!all.some(function (v) { return v.kind === kind[0]; })) return;
      var row = box.append("div").attr("class", "legend__row");
      row.append("svg").attr("width", 22).attr("height", 14)
        .append("g").attr("class", "legend-node node--" + kind[0])
        .append("rect").attr("x", 1).attr("y", 1).attr("width", 20).attr("height", 12);
      row.append("span").text(kind[1]);
    });
    Object.keys(EDGE_KINDS).forEach(function (kind) {
      if (!links.some(function (e) { return e.kind === kind; })) return;
      var row = box.append("div").attr("class", "legend__row");
      row.append("svg").attr("width", 22).attr("height", 14)
        .append("path").attr("class", "legend-edge edge--" + EDGE_KINDS[kind]).attr("d", "M1,7L21,7").style("fill", "none");
      row.append("span").text(kind);
    });
  }

  function fit() {
    var node = svg.node();
    var width = +svg.attr("data-width") || 1;
    var height = +svg.attr("data-height") || 1;
    var scale = Math.min(1.5, node.clientWidth / width, node.clientHeight / height);
    zoom.scale(scale).translate([(node.clientWidth - width * scale) / 2, Math.max(0, (node.clientHeight - height * scale) / 2)]);
    zoom.event(svg);
  }

  // Details of what is clicked.

  function select(what) {
    selected = what;
    highlight();
    showDetails();
  }

  function highlight() {
    svg.selectAll("g.node").classed("node--selected", function (v) {
      return selected !== null && selected.type === "node" && selected.name === v.name;
    });
    svg.selectAll("path.edge").classed("edge--selected", function (e) {
      return selected !== null && selected.type === "edge" && selected.id === e.id;
    });
  }

  function field(dl, name, value) {
    dl.append("dt").text(name);
    dl.append("dd").attr("data-field", name).text(value);
  }

  function showDetails() {
    var panel = d3.select("#details").html("");
    var vertex = selected && selected.type === "node" ? findVertex(selected.name) : null;
    var edge = selected && selected.type === "edge" ? findEdge(selected.id) : null;
    if (vertex) nodeDetails(panel, vertex);
    else if (edge) edgeDetails(panel, edge);
    else panel.append("p").attr("class", "hint").text("Click a node or an edge to see its details.");
  }

  function nodeDetails(panel, vertex) {
    var spec = vertex.spec;
    panel.append("h2").text(vertex.name);
    panel.append("p").attr("class", "hint").attr("data-field", "kind").text(kindName(vertex.kind));
    var dl = panel.append("dl");
    if (vertex.kind === "network") {
      Object.keys(spec).forEach(function (key) { field(dl, key, JSON.stringify(spec[key])); });
    } else if (vertex.kind === "input") {
      field(dl, "factor", factorText(spec.factor));
    } else {
      field(dl, "function", spec.function || "?");
      field(dl, "factor", factorText(spec.factor));
      field(dl, "priority", spec.priority === undefined ? "normal (0)" : String(spec.priority));
      field(dl, "args", list(spec.args).map(argText).join("\n") || "none");
      field(dl, "condition", spec.condition ? conditionText(spec.condition) : "none");
      field(dl, "loop", spec.loop ? spec.loop.name + " × " + factorText(spec.loop.factor) : "none");
      if (spec.loop_args) field(dl, "loop_args", list(spec.loop_args).map(argText).join("\n"));
      field(dl, "use_workers", spec.use_workers === undefined ? "any" : String(spec.use_workers));
      field(dl, "group_size", spec.group_size === undefined ? "1" : String(spec.group_size));
    }
    if (payload.editable && vertex.kind !== "network") {
      var form = panel.append("form").attr("class", "form").attr("id", "edit-node");
      form.append("textarea").attr("id", "node-json").attr("spellcheck", "false").property("value", JSON.stringify(spec, null, 2));
      form.append("button").attr("type", "submit").attr("id", "apply-node").text("Apply");
      form.on("submit", function () { d3.event.preventDefault(); applyNode(vertex); });
    }
    if (payload.editable) deleteButton(panel, "Delete " + vertex.name, function () { deleteVertex(vertex); });
  }

  function edgeDetails(panel, edge) {
    panel.append("h2").text(edge.from + " → " + edge.to);
    var dl = panel.append("dl");
    field(dl, "kind", edge.kind);
    field(dl, "from", edge.from);
    field(dl, "to", edge.to);
    field(dl, "selection", selectionText(edge.kind, edge.arg.predecessor || {}));
    field(dl, "argument", (edge.place === "condition" ? "condition.args" : edge.place) + "[" + edge.position + "]");
    if (!payload.editable) return;
    var form = panel.append("form").attr("class", "form").attr("id", "edit-edge");
    var names = vertices().map(function (v) { return v.name; });
    var targets = vertices().filter(function (v) { return v.section === "nodes" || v.section === "post_nodes"; })
      .map(function (v) { return v.name; });
    selectField(form, "from", names, edge.from);
    selectField(form, "to", targets, edge.to);
    selectField(form, "kind", Object.keys(EDGE_KINDS), edge.kind);
    var index = (edge.arg.predecessor || {}).index;
    var label = form.append("label").text("index ");
    label.append("input").attr("name", "index").property("value", index === undefined ? "" : JSON.stringify(index).replace(/^"|"$/g, ""));
    form.append("button").attr("type", "submit").attr("id", "apply-edge").text("Rewire");
    form.on("submit", function () { d3.event.preventDefault(); rewire(edge, this); });
    deleteButton(panel, "Delete this edge", function () { deleteEdge(edge); });
  }

  function selectField(form, name, options, value) {
    var label = form.append("label").text(name + " ");
    var select = label.append("select").attr("name", name);
    select.selectAll("option").data(options).enter().append("option").attr("value", String).text(String);
    select.property("value", value);
  }

  function deleteButton(panel, text, action) {
    panel.append("p").append("button").attr("type", "button").attr("id", "delete").text(text).on("click", action);
  }

  // Editing: each change edits `graph`, then draws it again.

  function status(text, kind) {
    d3.select("#status").attr("class", "status" + (kind ? " status--" + kind : "")).text(text);
  }

  function changed(selection) {
    selected = selection;
    render();
    showDetails();
  }

  function section(name) {
    if (!Array.isArray(graph[name])) graph[name] = [];
    return graph[name];
  }

  /** An index or factor as typed: an integer, a JSON list, or the text itself. */
  function parsed(text) {
    text = text.trim();
    if (/^-?\d+$/.test(text)) return parseInt(text, 10);
    if (/^\[.*\]$/.test(text)) {
      try { return JSON.parse(text); } catch (error) { return text; }
    }
    return text;
  }

  /** The text of the form's control `name`, trimmed. */
  function value(form, name) {
    return form.elements.namedItem(name).value.trim();
  }

  function addNode(form) {
    var name = value(form, "name");
    var kind = value(form, "section");
    if (!name) return status("give the new node a name", "error");
    if (findVertex(name)) return status("a node called " + JSON.stringify(name) + " exists already", "error");
    var spec = { name: name };
    if (kind !== "inputs") {
      if (!value(form, "function")) return status("give the new node the function (kernel) it calls", "error");
      spec.function = value(form, "function");
    }
    if (value(form, "factor")) spec.factor = parsed(value(form, "factor"));
    section(kind).push(spec);
    form.elements.namedItem("name").value = "";
    status("added " + JSON.stringify(name) + "; Save checks and writes the graph", "");
    changed({ type: "node", name: name });
  }

  function addEdge(form) {
    var target = findVertex(value(form, "to"));
    if (!target || (target.section !== "nodes" && target.section !== "post_nodes")) {
      return status("an edge goes to a node or a post-node", "error");
    }
    var arg = { type: value(form, "kind"), predecessor: { name: value(form, "from") } };
    if (value(form, "index")) arg.predecessor.index = parsed(value(form, "index"));
    if (!Array.isArray(target.spec.args)) target.spec.args = [];
    target.spec.args.push(arg);
    status("added " + arg.type + " " + arg.predecessor.name + " → " + target.name, "");
    changed({ type: "edge", id: target.name + "/args/" + (target.spec.args.length - 1) });
  }

  function rewire(edge, form) {
    var predecessor = { name: value(form, "from") };
    var old = edge.arg.predecessor || {};
    if (value(form, "index")) predecessor.index = parsed(value(form, "index"));
    if (old.group_by !== undefined) predecessor.group_by = old.group_by;
    if (old.wrap !== undefined) predecessor.wrap = old.wrap;
    var arg = { type: value(form, "kind"), predecessor: predecessor };
    if (value(form, "to") === edge.to) {
      edge.list[edge.position] = arg;
      return changed({ type: "edge", id: edge.id });
    }
    edge.list.splice(edge.position, 1);
    var target = findVertex(value(form, "to"));
    if (!Array.isArray(target.spec.args)) target.spec.args = [];
    target.spec.args.push(arg);
    changed({ type: "edge", id: target.name + "/args/" + (target.spec.args.length - 1) });
  }

  function applyNode(vertex) {
    var spec;
    try {
      spec = JSON.parse(document.getElementById("node-json").value);
    } catch (error) {
      return status("the node is not valid JSON: " + error.message, "error");
    }
    if (!spec || typeof spec !== "object" || Array.isArray(spec)) return status("a node is a JSON object", "error");
    var list = section(vertex.section);
    list[list.indexOf(vertex.spec)] = spec;
    if (spec.name !== vertex.name) renameReferences(vertex.name, spec.name);
    changed({ type: "node", name: String(spec.name) });
  }

  function renameReferences(from, to) {
    edges().forEach(function (e) {
      if (e.from === from && e.arg.predecessor) e.arg.predecessor.name = to;
    });
  }

  function deleteVertex(vertex) {
    if (vertex.section === "network_config") delete graph.network_config;
    else {
      var list = section(vertex.section);
      list.splice(list.indexOf(vertex.spec), 1);
    }
    // Its outgoing edges go too, last first so that the positions stay right.
    edges().reverse().forEach(function (e) {
      if (e.from === vertex.name) e.list.splice(e.position, 1);
    });
    status("deleted " + JSON.stringify(vertex.name) + " and the edges from it", "");
    changed(null);
  }

  function deleteEdge(edge) {
    edge.list.splice(edge.position, 1);
    status("deleted the edge " + edge.from + " → " + edge.to, "");
    changed(null);
  }

  function refreshEditForms(all) {
    if (!payload.editable) return;
    var fill = function (select, names) {
      var value = select.property("value");
      var options = select.selectAll("option").data(names, String);
      options.enter().append("option");
      options.exit().remove();
      options.attr("value", String).text(String).order();
      if (names.indexOf(value) >= 0) select.property("value", value);
    };
    fill(d3.select("#add-edge select[name=from]"), all.map(function (v) { return v.name; }));
    fill(d3.select("#add-edge select[name=to]"), all.filter(function (v) {
      return v.section === "nodes" || v.section === "post_nodes";
    }).map(function (v) { return v.name; }));
  }

  // The editor server: it checks and saves the graph, and writes the Python script.

  function post(path, body) {
    return fetch(path, {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-Tomii-Token": payload.token },
      body: JSON.stringify(body),
    }).then(function (response) {
      return response.json().then(function (answer) {
        if (!response.ok) throw new Error(answer.error || response.statusText);
        return answer;
      });
    });
  }

  function save() {
    status("checking the graph…", "");
    post("save", { graph: graph }).then(function (answer) {
      var warnings = (answer.warnings || []).map(function (w) { return "\nwarning: " + w; }).join("");
      status("saved " + answer.path + warnings, "ok");
    }, function (error) {
      status(error.message, "error");
    });
  }

  function done() {
    post("quit", {}).then(function () {
      status("the editor has stopped; this page can be closed", "ok");
      d3.selectAll("button.edit-only").attr("disabled", true);
    }, function (error) { status(error.message, "error"); });
  }

  function exportPython() {
    var shown = function (script) {
      d3.select("#python").attr("hidden", null);
      d3.select("#python-script").property("value", script);
      var link = d3.select("#python-download");
      var old = link.attr("href");
      if (old) URL.revokeObjectURL(old);
      link.attr("href", URL.createObjectURL(new Blob([script], { type: "text/x-python" })))
        .attr("download", (graph.name || "graph").replace(/[^\w.-]/g, "_") + ".py");
    };
    if (!payload.editable) return shown(payload.python);
    post("export-python", { graph: graph }).then(function (answer) { shown(answer.script); },
      function (error) { status(error.message, "error"); });
  }

  // Start.

  window.addEventListener("error", function (event) { status("page error: " + event.message, "error"); });
  d3.select("body").classed("editable", !!payload.editable);
  d3.select("#title").text(payload.title);
  d3.select("#fit").on("click", fit);
  d3.select("#export-python").on("click", exportPython);
  if (payload.editable) {
    d3.select("#save").on("click", save);
    d3.select("#done").on("click", done);
    d3.select("#add-node").on("submit", function () { d3.event.preventDefault(); addNode(this); });
    d3.select("#add-edge").on("submit", function () { d3.event.preventDefault(); addEdge(this); });
  }
  render();
  fit();
})();
