//! Tomii 1.2 counts naming computed initializations: evaluated before the graph compiles, once,
//! and handed to the run (graph README, "Tomii 1.2 graph files", "Computed counts"). A MIMO-shaped
//! graph in 1.2's form is compared with the same graph whose counts are written by hand.

mod common;

use std::path::Path;
use std::sync::Arc;

use common::{fifo_lib, synthetic_lib};
use serde_json::{Value as Json, json};
use tomii_core::engine::{self, RunConfig, Session};
use tomii_core::graph::{self, CompiledGraph};
use tomii_core::plugin::{KernelSet, SchedulerPlugin};

const ANTENNAS: u64 = 4;
const UL_SYMBOLS: u64 = 3;
const PILOT_SYMBOLS: u64 = 2;
const DEMUL_EVENTS: u64 = 2;

fn usize_arg(v: u64) -> Json {
    json!({"type": "usize", "value": v.to_string()})
}

fn r(name: &str) -> Json {
    json!({"type": "$ref", "value": name})
}

fn typed(ty: &str, text: &str) -> Json {
    json!({"name": "_", "function": "typed", "args": [{"type": "String", "value": ty}, {"type": "String", "value": text}]})
}

fn named(mut init: Json, name: &str) -> Json {
    init["name"] = json!(name);
    init
}

/// The MIMO-shaped graph in 1.2's form; `counts` writes each count either as the computed
/// initialization's name (`None`) or as the given text (the reference).
fn mimo(log: &Path, written: bool) -> Json {
    let c = |name: &str, value: &str| if written { value.to_owned() } else { name.to_owned() };
    let total_ul = ANTENNAS * UL_SYMBOLS;
    let total_pilot = ANTENNAS * PILOT_SYMBOLS;
    let packets = total_ul + total_pilot;
    let demul_tasks = UL_SYMBOLS * DEMUL_EVENTS;
    json!({
        "initializations": [
            {"name": "config", "args": [{"type": "String", "value": "cfg.json"}]},
            {"name": "antenna_count", "args": [usize_arg(ANTENNAS)]},
            {"name": "antennas", "function": "product", "args": [r("antenna_count")]},
            named(typed("u64", &UL_SYMBOLS.to_string()), "ul_symbols"),
            named(typed("i64", &PILOT_SYMBOLS.to_string()), "pilot_symbols"),
            {"name": "total_ul_symbols", "function": "product", "args": [r("antennas"), r("ul_symbols")]},
            {"name": "total_pilot_symbols", "function": "product", "args": [r("antennas"), r("pilot_symbols")]},
            {"name": "packets_per_frame", "function": "product", "args": [r("antennas"), usize_arg(UL_SYMBOLS + PILOT_SYMBOLS)]},
            {"name": "pilot_packet_count", "function": "product", "args": [r("total_pilot_symbols")]},
            named(typed("u64", &DEMUL_EVENTS.to_string()), "demul_events"),
            {"name": "total_demul_tasks", "function": "product", "args": [r("ul_symbols"), r("demul_events")]},
            {"name": "fft_struct", "function": "product", "factor": c("total_ul_symbols", &total_ul.to_string()),
             "args": [{"type": "$factor"}, usize_arg(10)]},
            {"name": "log", "function": "append", "args": [{"type": "String", "value": log.display().to_string()}, usize_arg(1)]}
        ],
        "nodes": [
            {"name": "src", "function": "checksum", "factor": c("packets_per_frame", &packets.to_string()),
             "args": [{"type": "$factor"}]},
            {"name": "fft", "function": "checksum", "factor": c("total_ul_symbols", &total_ul.to_string()), "args": [
                {"type": "$res", "predecessor": {"name": "src",
                    "indexes": c("pilot_packet_count-packets_per_frame", &format!("{total_pilot}-{}", packets - 1))}},
                r("fft_struct")]},
            {"name": "csi", "function": "checksum", "factor": c("total_pilot_symbols", &total_pilot.to_string()), "args": [
                {"type": "$res", "predecessor": {"name": "src",
                    "indexes": c("0-pilot_packet_count", &format!("0-{}", total_pilot - 1))}}]},
            {"name": "beam", "function": "checksum", "factor": "4", "args": [
                {"type": "$res", "predecessor": {"name": "csi", "indexes": "0"}},
                {"type": "$barrier", "predecessor": {"name": "csi",
                    "indexes": c("0-total_pilot_symbols", &format!("0-{}", total_pilot - 1))}}]},
            {"name": "demul", "function": "checksum", "factor": c("total_demul_tasks", &demul_tasks.to_string()),
             "group_size": c("demul_events", &DEMUL_EVENTS.to_string()), "args": [
                {"type": "$res", "predecessor": {"name": "fft", "indexes": "0"}},
                {"type": "$barrier", "predecessor": {"name": "fft",
                    "indexes": c("0-total_ul_symbols", &format!("0-{}", total_ul - 1)),
                    "group_by": c("antennas", &ANTENNAS.to_string())}},
                {"type": "$barrier", "predecessor": {"name": "beam", "indexes": "0-3"}}]},
            {"name": "dump", "function": "checksum", "factor": c("log", "1"), "args": [
                {"type": "$barrier", "predecessor": {"name": "demul",
                    "indexes": c("0-total_demul_tasks", &format!("0-{}", demul_tasks - 1))}}]}
        ]
    })
}

fn kernels() -> KernelSet {
    KernelSet::load(&[synthetic_lib()]).unwrap_or_else(|e| panic!("{e}"))
}

fn evaluated(text: &str, kernels: &KernelSet) -> Result<CompiledGraph, String> {
    graph::parse_str_evaluating("mimo.json", text, 2, &mut engine::evaluator(kernels)).map_err(|e| e.to_string())
}

fn lines(path: &Path) -> usize {
    std::fs::read_to_string(path).map(|text| text.lines().count()).unwrap_or(0)
}

fn log_file(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("tomii-v12-inits-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    let _ = std::fs::remove_file(&path);
    path
}

fn run(graph: &CompiledGraph, kernels: &KernelSet) -> engine::RunOutcome {
    let scheduler = SchedulerPlugin::load(&fifo_lib()).unwrap_or_else(|e| panic!("{e}"));
    let config = RunConfig { workers: 2, frames: 3, collect_outputs: true, ..RunConfig::default() };
    engine::run(graph, kernels, &scheduler, &config).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn a_mimo_graph_compiles_and_runs_as_with_its_counts_written() {
    let kernels = kernels();
    let log = log_file("shape.log");
    let graph = evaluated(&mimo(&log, false).to_string(), &kernels).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(lines(&log), 1, "the side-effect initialization ran once while the graph compiled");
    let reference = graph::parse_str_for_run("mimo.json", &mimo(&log, true).to_string(), 2).unwrap();
    let factors =
        |g: &CompiledGraph| g.nodes.iter().map(|n| (n.name.clone(), n.factor, n.group_size)).collect::<Vec<_>>();
    let total_ul = (ANTENNAS * UL_SYMBOLS) as u32;
    let total_pilot = (ANTENNAS * PILOT_SYMBOLS) as u32;
    assert_eq!(
        factors(&graph),
        vec![
            ("src".to_owned(), total_ul + total_pilot, 1),
            ("fft".to_owned(), total_ul, 1),
            ("csi".to_owned(), total_pilot, 1),
            ("beam".to_owned(), 4, 1),
            ("demul".to_owned(), (UL_SYMBOLS * DEMUL_EVENTS) as u32, DEMUL_EVENTS as u32),
            ("dump".to_owned(), 1, 1),
        ]
    );
    assert_eq!(factors(&graph), factors(&reference));
    assert_eq!(graph.preds, reference.preds);
    assert_eq!(graph.pred_offsets, reference.pred_offsets);
    assert_eq!(graph.succs, reference.succs);
    assert_eq!(graph.args, reference.args);
    assert_eq!(graph.arg_offsets, reference.arg_offsets);
    assert_eq!(graph.computed, reference.computed);
    assert_eq!(graph.computed.iter().find(|i| i.name == "fft_struct").map(|i| i.count), Some(total_ul));
    assert!(graph.precomputed.shape.iter().any(|s| s.at == r#"node "demul": group_size"#));
    // csi[i] reads src[i..i+total_pilot) wrapped: the pilot packets.
    let outcome = run(&graph, &kernels);
    assert_eq!(lines(&log), 1, "the run took the values made while compiling");
    let expected = run(&reference, &kernels);
    assert_eq!(lines(&log), 2, "the reference computed its own");
    assert_eq!(outcome.outputs, expected.outputs);
    assert_eq!(outcome.report.frames, 3);
    // A second run of the same compiled graph computes them again, once, and checks the shape.
    run(&graph, &kernels);
    assert_eq!(lines(&log), 3);
}

#[test]
fn a_session_computes_the_initializations_once() {
    let kernels = Arc::new(kernels());
    let log = log_file("session.log");
    let graph = evaluated(&mimo(&log, false).to_string(), &kernels).unwrap_or_else(|e| panic!("{e}"));
    let scheduler = SchedulerPlugin::load(&fifo_lib()).unwrap_or_else(|e| panic!("{e}"));
    let config = RunConfig { workers: 2, slots: 2, ..RunConfig::default() };
    let session = Session::start(Arc::new(graph), Arc::clone(&kernels), Arc::new(scheduler), config)
        .unwrap_or_else(|e| panic!("{e}"));
    let tickets: Vec<_> = (0..4).map(|_| session.submit(Vec::new(), None).unwrap_or_else(|e| panic!("{e}"))).collect();
    drop(tickets);
    session.close().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(lines(&log), 1);
}

/// The graph with `init` as initialization "n", named by `node`'s count.
fn refusal(init: Json, node: Json) -> String {
    // A constant in 1.2's form makes the file a 1.2 one.
    let text = json!({"initializations": [{"name": "k", "args": [usize_arg(4)]}, named(init, "n")],
                      "nodes": [{"name": "a", "function": "checksum", "factor": "4"}, node]});
    match evaluated(&text.to_string(), &kernels()) {
        Ok(_) => panic!("{text} loads"),
        Err(e) => e,
    }
}

fn says(message: &str, parts: &[&str]) {
    for part in parts {
        assert!(message.contains(part), "{message}\ndoes not say {part}");
    }
}

#[test]
fn counts_refuse_floats_negatives_isize_and_failures_naming_node_field_and_initialization() {
    let node = json!({"name": "b", "function": "checksum", "factor": "n"});
    says(
        &refusal(typed("f64", "2.5"), node.clone()),
        &[r#"node "b": factor names the computed initialization "n""#, "the float 2.5"],
    );
    says(&refusal(typed("i64", "-3"), node.clone()), &[r#"node "b": factor"#, "the negative integer -3"]);
    says(&refusal(typed("isize", "4"), node.clone()), &[r#"node "b": factor"#, "the isize 4", "not an isize"]);
    let failing = json!({"name": "_", "function": "fail", "args": [{"type": "String", "value": "no config"}]});
    says(
        &refusal(failing, node),
        &[r#"node "b": factor names the computed initialization "n""#, "could not be computed", "no config"],
    );
    let group = json!({"name": "b", "function": "checksum", "factor": "4", "group_size": "n"});
    says(&refusal(typed("u64", "0"), group), &[r#"node "b": group_size "0" is not a positive integer"#]);
    let range = json!({"name": "b", "function": "checksum", "args": [{"type": "$res", "predecessor": {"name": "a", "indexes": "0-n"}}]});
    says(&refusal(typed("u64", "0"), range), &[r#"indexes "0-n" names the computed initialization "n""#, "empty"]);
}

#[test]
fn an_initialization_naming_a_later_one_is_refused() {
    let text = json!({"initializations": [
            {"name": "first", "function": "product", "args": [r("second")]},
            {"name": "second", "function": "product", "args": [usize_arg(2)]}],
        "nodes": [{"name": "b", "function": "checksum", "factor": "first"}]});
    let message = evaluated(&text.to_string(), &kernels()).expect_err("refused");
    says(&message, &[r#"initialization "first""#, r#""second""#]);
}

#[test]
fn a_network_address_must_be_a_string_and_its_numbers_counts() {
    let network = |address: &str| {
        json!({"socket_type": "udp", "num_sockets": "antennas", "packet_length": "64",
        "stream_packets": "antennas", "start_port": "0", "address": address})
    };
    let text = |address: &str| {
        json!({"initializations": [
            named(typed("u64", "2"), "antennas"), named(typed("String", "127.0.0.1"), "host")],
        "nodes": [{"name": "fft", "function": "checksum", "factor": "2",
                   "args": [{"type": "$res", "predecessor": {"name": "$network", "indexes": "0"}}]}],
        "network_config": network(address)})
    };
    let graph = evaluated(&text("host").to_string(), &kernels()).unwrap_or_else(|e| panic!("{e}"));
    let config = graph.network.as_ref().expect("a network source");
    assert_eq!(config.num_sockets, 2);
    assert_eq!(graph.nodes.iter().find(|n| n.input).map(|n| n.factor), Some(2));
    let message = evaluated(&text("antennas").to_string(), &kernels()).expect_err("refused");
    says(&message, &[r#"network_config address names the computed initialization "antennas""#, "a String"]);
}
