//! Tomii 1.2's grouped edges (`indexes` with `group_by`, graph/README.md "Grouped edges"): the
//! compiled edges of 1.2-shaped files (tests/graphs/v12/sensor_windows.json, shaped as 1.2's
//! stream-analytics; symbol_groups.json, shaped as its MIMO `demul`) checked against edges and
//! outputs computed here without the compiler, and each form 1.2 hung on refused by name.

mod common;

use std::path::{Path, PathBuf};

use common::checksum::{expected, fnv1a, mix};
use common::{fifo_lib, synthetic_lib};
use serde_json::{Value as Json, json};
use tomii_core::engine::{self, Output, RunConfig};
use tomii_core::graph::{self, ArgSource, CompiledGraph};
use tomii_core::plugin::{KernelSet, SchedulerPlugin};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/graphs/v12").join(name)
}

fn load(name: &str) -> CompiledGraph {
    graph::load_file(&fixture(name)).unwrap_or_else(|e| panic!("{e}"))
}

/// The instances of `node` that instance `i` of `succ` depends on, as indexes within `node`.
fn preds_from(graph: &CompiledGraph, succ: &str, i: u32, node: &str) -> Vec<u32> {
    let succ = &graph.nodes[graph.node_id(succ).expect("the successor")];
    let pred = &graph.nodes[graph.node_id(node).expect("the predecessor")];
    let inst = succ.first + i;
    let leader = graph.leader.get(inst as usize).copied().unwrap_or(inst);
    let range = pred.first..pred.first + pred.factor;
    graph.predecessors(leader).iter().filter(|p| range.contains(p)).map(|p| p - pred.first).collect()
}

/// The results instance `i` of `succ` reads, as `node[index]`.
fn reads(graph: &CompiledGraph, succ: &str, i: u32) -> Vec<String> {
    let inst = graph.nodes[graph.node_id(succ).expect("the node")].first + i;
    let results = graph.args_of(inst).iter().filter_map(|arg| match arg {
        ArgSource::Result(pred) => Some(graph.instance_name(*pred)),
        _ => None,
    });
    results.collect()
}

#[test]
fn a_grouped_barrier_waits_for_exactly_its_own_group() {
    let graph = load("sensor_windows.json");
    for k in 0..4 {
        // "0-all_samples" (0..31) in groups of 8, one group per instance (E = 4 / 4).
        let group: Vec<u32> = (8 * k..8 * k + 8).collect();
        assert_eq!(preds_from(&graph, "sensor_stats", k, "sample"), group, "sensor_stats[{k}]");
        // Its own group of band, and sensor_stats[k]; nothing pooled from the other groups.
        assert_eq!(preds_from(&graph, "summary", k, "band"), group, "summary[{k}]");
        assert_eq!(preds_from(&graph, "summary", k, "sensor_stats"), [k], "summary[{k}]");
        assert_eq!(reads(&graph, "summary", k), [format!("sensor_stats[{k}]")]);
    }
    // The grouped edges need no warning; the ungrouped dep of "tally" keeps 1.2's meaning with one.
    assert!(graph.warnings.iter().all(|w| w.contains(r#"node "tally""#)), "{:?}", graph.warnings);
}

#[test]
fn a_grouped_graph_computes_what_its_groups_say() {
    let graph = load("sensor_windows.json");
    let kernels = KernelSet::load(&[synthetic_lib()]).unwrap_or_else(|e| panic!("{e}"));
    let scheduler = SchedulerPlugin::load(&fifo_lib()).unwrap_or_else(|e| panic!("{e}"));
    let config = RunConfig { workers: 2, slots: 3, frames: 6, collect_outputs: true, ..RunConfig::default() };
    let outcome = engine::run(&graph, &kernels, &scheduler, &config).unwrap_or_else(|e| panic!("{e}"));
    let publish = graph.node_id("publish").expect("publish") as u32;
    let tally = graph.node_id("tally").expect("tally") as u32;
    for (frame, outputs) in outcome.outputs.iter().enumerate() {
        let frame = frame as u64;
        // A barrier passes nothing: sensor_stats[k] sums its index, summary[k] its stats.
        let stats: Vec<u64> = (0..4).map(|k| expected("sensor_stats", k, frame, &[u64::from(k)])).collect();
        let summary: Vec<u64> = (0..4).map(|k| expected("summary", k, frame, &[stats[k as usize]])).collect();
        let list = summary.iter().fold(fnv1a(b""), |h, &w| mix(h, w));
        let value = |node: u32| outputs.iter().find(|(n, _, _)| *n == node).map(|(_, _, v)| v);
        assert_eq!(value(publish), Some(&Output::UInt(expected("publish", 0, frame, &[list]))), "frame {frame}");
        assert_eq!(value(tally), Some(&Output::UInt(expected("tally", 0, frame, &[]))), "frame {frame}");
    }
}

#[test]
fn a_group_size_node_reads_its_groups_first_instance() {
    let graph = load("symbol_groups.json");
    for i in 0..6 {
        // 12 fft instances in groups of 4 antennas: 3 groups, each shared by 6 / 3 = 2 instances.
        let symbol = i / 2;
        let group: Vec<u32> = (4 * symbol..4 * symbol + 4).collect();
        assert_eq!(preds_from(&graph, "demul", i, "fft"), group, "demul[{i}]");
        assert_eq!(preds_from(&graph, "demul", i, "beam"), [0, 1, 2], "demul[{i}]");
        // out(0) beside a group_by of the pair: fft[(i / group_size) · antennas].
        assert_eq!(reads(&graph, "demul", i), [format!("fft[{}]", 4 * symbol)], "demul[{i}]");
    }
}

/// A 1.2 graph with 16 `up` instances and a node `x` of `factor` instances reading it by `args`.
fn grouped(factor: u32, args: Json) -> String {
    let text = json!({
        "initializations": [{"name": "g", "args": [{"type": "usize", "value": "4"}]}],
        "nodes": [{"name": "up", "function": "f", "factor": "16"},
                  {"name": "other", "function": "f", "factor": "16"},
                  {"name": "x", "function": "f", "factor": factor.to_string(), "args": args}]
    });
    match graph::parse_str("grouped.json", &text.to_string()) {
        Ok(_) => panic!("{text} loads"),
        Err(e) => e.to_string(),
    }
}

fn barrier(indexes: &str) -> Json {
    json!({"type": "$barrier", "predecessor": {"name": "up", "indexes": indexes, "group_by": "g"}})
}

fn assert_mentions(message: &str, parts: &[&str]) {
    for part in parts {
        assert!(message.contains(part), "{message}\ndoes not say {part}");
    }
    assert!(message.starts_with("grouped.json: ") && !message.contains('\n'), "{message}");
}

#[test]
fn what_tomii_1_2_hung_on_is_refused_by_name() {
    // wait(group_by=g): indexes "0", fewer instances than one group.
    let one = grouped(4, json!([barrier("0")]));
    assert_mentions(&one, &[r#"node "x" args[0] predecessor"#, "fewer than one group", "never released", "\"0-4\""]);
    // 4 groups over 2 instances (F < B).
    let few = grouped(2, json!([barrier("0-15")]));
    assert_mentions(&few, &[r#"node "x" args[0] predecessor"#, "4 group(s)", "multiple of 4"]);
    // 4 groups over 6 instances: instances 4 and 5 belong to none.
    let uneven = grouped(6, json!([barrier("0-15")]));
    assert_mentions(&uneven, &["instance(s) 4..6", "hung"]);
    // group_by on a $dep with no grouped barrier to give the node its groups.
    let dep = json!({"type": "$dep", "predecessor": {"name": "up", "indexes": "0-15", "group_by": "g"}});
    let lone = grouped(4, json!([dep]));
    assert_mentions(&lone, &[r#"node "x" args[0] predecessor"#, "dropped", "\"$barrier\" with the same indexes"]);
    // Two grouped barriers that split the node differently.
    let other = json!({"type": "$barrier", "predecessor": {"name": "other", "indexes": "0-7", "group_by": "g"}});
    let mixed = grouped(4, json!([barrier("0-15"), other]));
    assert_mentions(&mixed, &[r#"node "x" args[1] predecessor"#, "2 group(s) differ from the 4 of args[0]"]);
    // A $res with as many offsets as instances: 1.2 gave each whichever completed next.
    let res = json!({"type": "$res", "predecessor": {"name": "up", "indexes": "0-3", "group_by": "g"}});
    let racy = grouped(4, json!([barrier("0-15"), res]));
    assert_mentions(&racy, &[r#"node "x" args[1] predecessor"#, "no fixed meaning"]);
}

#[test]
fn a_grouped_barrier_with_a_grouped_dep_shares_its_groups() {
    let dep = json!({"type": "$dep", "predecessor": {"name": "other", "indexes": "0-15", "group_by": "g"}});
    let text = json!({
        "initializations": [{"name": "g", "args": [{"type": "usize", "value": "4"}]}],
        "nodes": [{"name": "up", "function": "f", "factor": "16"},
                  {"name": "other", "function": "f", "factor": "16"},
                  {"name": "x", "function": "f", "factor": "8", "args": [barrier("0-15"), dep]}]
    });
    let graph = graph::parse_str("grouped.json", &text.to_string()).unwrap_or_else(|e| panic!("{e}"));
    for i in 0..8 {
        let group: Vec<u32> = (4 * (i / 2)..4 * (i / 2) + 4).collect();
        assert_eq!(preds_from(&graph, "x", i, "up"), group, "x[{i}]");
        assert_eq!(preds_from(&graph, "x", i, "other"), group, "x[{i}]");
    }
}

#[test]
fn without_kernels_a_count_naming_a_computed_initialization_is_refused_saying_how_to_give_it() {
    let graph = |node: Json, network: Json| {
        let mut text = json!({
            "initializations": [
                {"name": "config", "args": [{"type": "String", "value": "cfg.json"}]},
                {"name": "antennas", "function": "checksum", "args": [{"type": "$ref", "value": "config"}]}
            ],
            "nodes": [{"name": "fft", "function": "checksum", "factor": "4"}, node]
        });
        if !network.is_null() {
            text["network_config"] = network;
        }
        match graph::parse_str("mimo.json", &text.to_string()) {
            Ok(_) => panic!("{text} loads"),
            Err(e) => e.to_string(),
        }
    };
    let factor = graph(json!({"name": "demul", "function": "checksum", "factor": "antennas"}), Json::Null);
    assert_mentions_in(
        &factor,
        &[r#"node "demul": factor names the computed initialization "antennas""#, "--dylib", "write its value"],
    );
    let edge = json!({"type": "$barrier", "predecessor": {"name": "fft", "indexes": "0-4", "group_by": "antennas"}});
    let group = graph(json!({"name": "demul", "function": "checksum", "args": [edge]}), Json::Null);
    assert_mentions_in(&group, &[r#"node "demul" args[0] predecessor group_by names the computed initialization"#]);
    let edge = json!({"type": "$res", "predecessor": {"name": "fft", "indexes": "0-antennas"}});
    let range = graph(json!({"name": "demul", "function": "checksum", "args": [edge]}), Json::Null);
    assert_mentions_in(&range, &[r#"indexes "0-antennas" names the computed initialization "antennas""#]);
    let network = json!({"socket_type": "udp", "num_sockets": "antennas", "packet_length": "64",
                         "stream_packets": "4", "start_port": "0"});
    let sockets = graph(json!({"name": "demul", "function": "checksum"}), network);
    assert_mentions_in(&sockets, &[r#"network_config num_sockets names the computed initialization "antennas""#]);
}

fn assert_mentions_in(message: &str, parts: &[&str]) {
    for part in parts {
        assert!(message.contains(part), "{message}\ndoes not say {part}");
    }
    assert!(message.starts_with("mimo.json: ") && !message.contains('\n'), "{message}");
}

#[test]
fn tomii_run_prints_one_warning_line_per_kind_and_every_line_with_verbose() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("wavefront.json");
    let mut nodes = vec![json!({"name": "diag_0", "function": "checksum", "args": [{"type": "u64", "value": "1"}]})];
    for k in 1..40 {
        let pred = json!({"name": format!("diag_{}", k - 1), "indexes": "0-0"});
        nodes.push(json!({"name": format!("diag_{k}"), "function": "checksum", "args": [{"type": "$res", "predecessor": pred}]}));
    }
    std::fs::write(&path, json!({"nodes": nodes}).to_string()).expect("the graph is written");
    let warnings = |verbose: bool| {
        let mut command = common::cli::tomii();
        command.arg("run").arg(&path).arg("--dylib").arg(synthetic_lib()).args(["--frames", "1"]);
        if verbose {
            command.arg("--verbose");
        }
        let done = common::cli::finish(command);
        assert!(done.status.success(), "{}", done.stderr);
        done.stderr.lines().filter(|l| l.starts_with("warning: ")).map(str::to_owned).collect::<Vec<_>>()
    };
    let summary = warnings(false);
    assert_eq!(summary.len(), 1, "{summary:#?}");
    assert!(summary[0].contains(": 39 nodes: ") && summary[0].ends_with("--verbose lists each"), "{}", summary[0]);
    assert_eq!(warnings(true).len(), 39);
}
