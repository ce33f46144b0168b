//! Tomii 1.2 graph files (tests/graphs/v12/, examples/compat/v12/), written from the facts of its
//! format: each compiles to exactly the graph its `tomii convert` output compiles to, both run
//! with the synthetic kernels to the same outputs, the compat examples to the outputs of their
//! current-format versions (whose golden values tests/compat.rs checks), and the warnings and the
//! run report say what they should; `tomii convert` and `tomii run` read them from the command line.

mod common;

use std::path::{Path, PathBuf};

use common::cli::{assert_error, finish, tomii};
use common::{fifo_lib, synthetic_lib};
use tomii_core::engine::{self, RunConfig, RunOutcome};
use tomii_core::graph::{self, ArgSource, CompiledGraph, Dialect};
use tomii_core::plugin::{KernelSet, SchedulerPlugin};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace").to_path_buf()
}

/// Every Tomii 1.2 graph of the repository.
fn v12_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in ["tomii-core/tests/graphs/v12", "examples/compat/v12"] {
        for entry in std::fs::read_dir(root().join(dir)).unwrap_or_else(|e| panic!("{dir}: {e}")) {
            let path = entry.expect("an entry").path();
            if path.extension().is_some_and(|ext| ext == "json") {
                files.push(path);
            }
        }
    }
    files.sort();
    assert!(files.len() >= 5, "the Tomii 1.2 fixtures are missing: {files:?}");
    files
}

fn load(path: &Path) -> CompiledGraph {
    graph::load_file(path).unwrap_or_else(|e| panic!("{e}"))
}

/// The 1.2 file's compiled graph and its conversion's.
fn both(path: &Path) -> (CompiledGraph, CompiledGraph) {
    let source = path.display().to_string();
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{source}: {e}"));
    let converted = graph::convert_str(&source, &text, None).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(converted.dialect, Dialect::Tomii12, "{source}");
    let new = graph::parse_str(&source, &converted.text).unwrap_or_else(|e| panic!("converted {source}: {e}"));
    assert_eq!(new.dialect, Dialect::Tomii, "the conversion of {source} is in the current format");
    assert!(new.warnings.is_empty(), "the conversion of {source} warns: {:?}", new.warnings);
    let old = load(path);
    assert_eq!(old.warnings, converted.warnings, "{source}");
    (old, new)
}

/// Every structure of the compiled graph, without what says where it came from.
fn structure(graph: &CompiledGraph) -> CompiledGraph {
    CompiledGraph { dialect: Dialect::Tomii, warnings: Vec::new(), ..graph.clone() }
}

#[test]
fn every_file_compiles_to_the_graph_its_conversion_compiles_to() {
    for path in v12_files() {
        let (old, new) = both(&path);
        assert_eq!(old.dialect, Dialect::Tomii12, "{}", path.display());
        assert_eq!(structure(&old), structure(&new), "{}: the conversion compiles to another graph", path.display());
        for inst in 0..old.instance_count() as u32 {
            assert_eq!(old.args_of(inst), new.args_of(inst), "{}", old.instance_name(inst));
            assert_eq!(old.predecessors(inst), new.predecessors(inst), "{}", old.instance_name(inst));
        }
    }
}

fn run(graph: &CompiledGraph, frames: u64) -> RunOutcome {
    let kernels = KernelSet::load(&[synthetic_lib()]).unwrap_or_else(|e| panic!("{e}"));
    let scheduler = SchedulerPlugin::load(&fifo_lib()).unwrap_or_else(|e| panic!("{e}"));
    let config = RunConfig { workers: 2, slots: 3, frames, collect_outputs: true, ..RunConfig::default() };
    engine::run(graph, &kernels, &scheduler, &config).unwrap_or_else(|e| panic!("{}: {e}", graph.source))
}

#[test]
fn both_dialects_run_to_the_same_outputs() {
    for path in v12_files().into_iter().filter(|path| !path.ends_with("network.json")) {
        let (old, new) = both(&path);
        let (old_run, new_run) = (run(&old, 5), run(&new, 5));
        assert_eq!(old_run.outputs, new_run.outputs, "{}", path.display());
        assert_eq!(old_run.post_outputs, new_run.post_outputs, "{}", path.display());
        assert_eq!(old_run.report.graph_dialect, "tomii-1.2");
        assert_eq!(new_run.report.graph_dialect, "tomii");
    }
}

#[test]
fn the_compat_examples_run_as_their_current_format_versions() {
    for name in ["stream_analytics", "matrix_compute"] {
        let old = load(&root().join(format!("examples/compat/v12/{name}.json")));
        let current = load(&root().join(format!("examples/compat/{name}.json")));
        assert!(old.warnings.is_empty(), "{name}: {:?}", old.warnings);
        let (old_run, current_run) = (run(&old, 7), run(&current, 7));
        assert_eq!(old_run.outputs, current_run.outputs, "{name}");
        assert_eq!(old_run.post_outputs, current_run.post_outputs, "{name}");
    }
}

/// The results `inst` reads, as `node[index]`.
fn reads(graph: &CompiledGraph, node: &str) -> Vec<String> {
    let inst = graph.nodes[graph.node_id(node).expect("the node")].first;
    graph
        .args_of(inst)
        .iter()
        .filter_map(|arg| match arg {
            ArgSource::Result(pred) => Some(graph.instance_name(*pred)),
            _ => None,
        })
        .collect()
}

#[test]
fn selections_keep_their_tomii_1_2_meaning() {
    let graph = load(&root().join("tomii-core/tests/graphs/v12/every_construct.json"));
    // "1-3" (literal end, inclusive) then "0-width" (name end, exclusive), offsets from instance 0.
    assert_eq!(reads(&graph, "span"), ["gen[1]", "gen[2]", "gen[3]", "ring[0]", "ring[1]", "ring[2]", "ring[3]"]);
    // "3" and "1" taken modulo 4: instance 0 reads gen[3] and gen[1], instance 1 gen[0] and gen[2].
    assert_eq!(reads(&graph, "ring"), ["gen[3]", "gen[1]"]);
    assert_eq!(reads(&graph, "pick"), ["gen[0]", "gen[2]", "gen[3]", "ring[2]"]);
    // group_by "two" (a name): instance 0 reads gen[0], gen[1].
    assert_eq!(reads(&graph, "pairs"), ["gen[0]", "gen[1]"]);
    let pipeline = load(&root().join("tomii-core/tests/graphs/v12/pipeline.json"));
    let aggregate = reads(&pipeline, "aggregate");
    // "0-256" over 256 instances: 257 values, instance 0 twice, as Tomii 1.2 read it.
    assert_eq!(aggregate.len(), 257);
    assert_eq!((aggregate[0].as_str(), aggregate[256].as_str()), ("stage[0]", "stage[0]"));
}

#[test]
fn one_warning_per_node_whose_meaning_is_spelled_otherwise() {
    let graph = load(&root().join("tomii-core/tests/graphs/v12/every_construct.json"));
    let warned: Vec<&str> =
        graph.warnings.iter().map(|w| w.split('"').nth(1).expect("the warning names the node")).collect();
    assert_eq!(warned, ["gen", "ring", "span", "big", "looped", "total"], "{:#?}", graph.warnings);
    for warning in &graph.warnings {
        assert!(warning.starts_with(&graph.source), "{warning}");
        assert!(!warning.contains('\n'), "{warning}");
    }
    let span = &graph.warnings[2];
    for part in ["indexes \"1-3\"", "inclusively", "offsets 1..=3", r#""index": "1-4""#] {
        assert!(span.contains(part), "{span} does not say {part}");
    }
    let ring = &graph.warnings[1];
    for part in ["modulo 4", "instance 3", r#""wrap": true"#] {
        assert!(ring.contains(part), "{ring} does not say {part}");
    }
    assert!(graph.warnings[3].contains("Gt was always false"), "{}", graph.warnings[3]);
    assert!(graph.warnings[4].contains("legacy condition"), "{}", graph.warnings[4]);
    let pipeline = load(&root().join("tomii-core/tests/graphs/v12/pipeline.json"));
    assert_eq!(pipeline.warnings.len(), 1);
    assert!(pipeline.warnings[0].contains(r#""index": "0-257", "wrap": true"#), "{}", pipeline.warnings[0]);
}

#[test]
fn the_network_config_reads_its_1_2_spellings() {
    let graph = load(&root().join("tomii-core/tests/graphs/v12/network.json"));
    let network = graph.network.as_ref().expect("a network source");
    assert_eq!((network.frame_packets, network.packet_length, network.num_sockets), (4, 64, 1));
    assert_eq!((network.buffer_depth, network.start_port), (128, 0));
    assert_eq!(network.address.to_string(), "127.0.0.1");
    assert_eq!(reads(&graph, "combine"), ["decode[0]", "decode[1]", "decode[2]", "decode[3]"]);
}

#[test]
fn tomii_convert_writes_the_current_format_and_prints_the_warnings() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let old = root().join("tomii-core/tests/graphs/v12/pipeline.json");
    let new = dir.path().join("pipeline.json");
    let mut command = tomii();
    command.arg("convert").arg(&old).arg("-o").arg(&new);
    let done = finish(command);
    assert!(done.status.success(), "{}", done.stderr);
    let lines: Vec<&str> = done.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", done.stderr);
    assert!(lines[0].starts_with("warning: ") && lines[0].contains(r#"node "aggregate""#), "{}", lines[0]);
    let converted = load(&new);
    assert_eq!(converted.dialect, Dialect::Tomii);
    assert_eq!(structure(&converted).args, load(&old).args);
    // Never over the file it reads, under its own name or another (a hard link).
    let linked = dir.path().join("linked.json");
    std::fs::hard_link(&new, &linked).expect("a hard link");
    for output in [&new, &linked] {
        let mut again = tomii();
        again.arg("convert").arg(&new).arg("-o").arg(output);
        assert_error(&finish(again), &["--output", "is the graph file itself"]);
    }
}

#[test]
fn tomii_run_reads_a_1_2_file_and_reports_its_dialect() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let report = dir.path().join("report.json");
    let mut command = tomii();
    command
        .arg("run")
        .arg(root().join("tomii-core/tests/graphs/v12/pipeline.json"))
        .arg("--dylib")
        .arg(synthetic_lib())
        .arg("--scheduler-plugin")
        .arg(fifo_lib())
        .args(["--frames", "3", "--quiet", "--report"])
        .arg(&report);
    let done = finish(command);
    assert!(done.status.success(), "{}", done.stderr);
    assert!(done.stderr.starts_with("warning: ") && done.stderr.contains("inclusively"), "{}", done.stderr);
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).expect("the report")).expect("JSON");
    assert_eq!(report["graph_dialect"], "tomii-1.2");
    assert_eq!(report["frames"], 3);
}

#[test]
fn a_factor_of_workers_is_the_runs_worker_count() {
    let text = r#"{"initializations": [],
                   "nodes": [{"name": "spread", "function": "checksum", "factor": "$workers",
                              "args": [{"type": "$ref", "value": "$index"}]},
                             {"name": "join", "function": "checksum_list",
                              "args": [{"type": "$res", "predecessor": {"name": "spread", "indexes": "0-2"}}]}]}"#;
    assert!(graph::parse_str("w.json", text).is_err_and(|e| e.to_string().contains("tomii convert --workers N")));
    let graph = graph::parse_str_for_run("w.json", text, 3).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(graph.nodes[graph.node_id("spread").expect("spread")].factor, 3);
    assert_eq!(reads(&graph, "join"), ["spread[0]", "spread[1]", "spread[2]"]);
    assert!(graph.warnings.iter().any(|w| w.contains(r#"node "spread": factor "$workers" is this run's 3 worker(s)"#)));
    let converted = graph::convert_str("w.json", text, Some(3)).unwrap_or_else(|e| panic!("{e}"));
    let new = graph::parse_str("w.json", &converted.text).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(structure(&new).args, graph.args);
    // From the command line: the run's --workers.
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("w.json");
    std::fs::write(&path, text).expect("the graph file");
    let mut command = tomii();
    command.arg("run").arg(&path).arg("--dylib").arg(synthetic_lib()).arg("--scheduler-plugin").arg(fifo_lib()).args([
        "--workers",
        "2",
        "--frames",
        "2",
        "--quiet",
    ]);
    let done = finish(command);
    assert!(done.status.success(), "{}", done.stderr);
    assert!(done.stderr.contains("this run's 2 worker(s)"), "{}", done.stderr);
    let mut convert = tomii();
    convert.arg("convert").arg(&path);
    assert_error(&finish(convert), &[r#"factor "$workers""#, "tomii convert --workers N"]);
}

/// Every graph file of the repository that compiles (both formats), sorted by path.
fn repository_graphs() -> Vec<PathBuf> {
    fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, files);
            } else if path.extension().is_some_and(|ext| ext == "json") {
                files.push(path);
            }
        }
    }
    let mut files = Vec::new();
    for dir in ["examples", "plugins", "tomii-core/tests/graphs", "python/tomii/_templates"] {
        walk(&root().join(dir), &mut files);
    }
    files.retain(|path| {
        std::fs::read_to_string(path).is_ok_and(|text| text.contains("\"nodes\""))
            && graph::parse_str_for_run(&path.display().to_string(), &std::fs::read_to_string(path).unwrap(), 2).is_ok()
    });
    files.sort();
    files
}

/// The compiled edges of every graph file of the repository, against the dump made before the
/// Tomii 1.2 edge meanings (tests/graphs/compiled_edges.txt; `TOMII_BLESS=1` rewrites it): each
/// graph keeps its meaning, instance by instance.
#[test]
fn every_repository_graph_keeps_its_compiled_edges() {
    let mut dump = String::new();
    for path in repository_graphs() {
        let name = path.strip_prefix(root()).unwrap_or(&path).display().to_string();
        let text = std::fs::read_to_string(&path).expect("the graph file");
        let compiled = graph::parse_str_for_run(&name, &text, 2).unwrap_or_else(|e| panic!("{e}"));
        dump.push_str(&format!("== {name}\n{}", graph::edges_text(&compiled)));
    }
    let golden = root().join("tomii-core/tests/graphs/compiled_edges.txt");
    if std::env::var_os("TOMII_BLESS").is_some() {
        std::fs::write(&golden, &dump).expect("the golden file");
    }
    let expected = std::fs::read_to_string(&golden).expect("tests/graphs/compiled_edges.txt");
    assert!(dump.matches("== ").count() >= 15, "too few graphs: {dump}");
    if dump != expected {
        let first = dump.lines().zip(expected.lines()).position(|(a, b)| a != b);
        panic!("the compiled edges changed (first differing line {first:?}); see tests/graphs/compiled_edges.txt");
    }
}

/// A Tomii 1.2 file in matrix-compute's shape: `compute_fft.wait()` (`"indexes": "0"`) between
/// nodes of `num_nodes` instances, and the factor-1 writer waiting on it too.
fn matrix_shaped(num_nodes: u32) -> String {
    let res = |name: &str, indexes: &str| {
        format!(r#"{{"type": "$res", "predecessor": {{"name": "{name}", "indexes": "{indexes}"}}}}"#)
    };
    let barrier = r#"{"type": "$barrier", "predecessor": {"name": "compute_fft", "indexes": "0"}}"#;
    format!(
        r#"{{"initializations": [{{"name": "num_nodes", "args": [{{"type": "usize", "value": "{num_nodes}"}}]}}],
          "nodes": [
            {{"name": "gen_vec", "function": "checksum", "factor": "num_nodes", "args": [{{"type": "u64", "value": "1"}}]}},
            {{"name": "compute_fft", "function": "checksum", "factor": "num_nodes", "args": [{}]}},
            {{"name": "vec_mat", "function": "checksum", "factor": "num_nodes", "args": [{}, {barrier}]}},
            {{"name": "write", "function": "checksum", "factor": 1, "args": [{}, {barrier}]}}]}}"#,
        res("gen_vec", "0"),
        res("gen_vec", "0"),
        res("vec_mat", "0-num_nodes"),
    )
}

#[test]
fn a_barriers_offset_waits_as_tomii_1_2_waited() {
    let text = matrix_shaped(200);
    let graph = graph::parse_str("matrix.json", &text).unwrap_or_else(|e| panic!("{e}"));
    let vec_mat = graph.nodes[graph.node_id("vec_mat").expect("vec_mat")].first;
    let fft = &graph.nodes[graph.node_id("compute_fft").expect("compute_fft")];
    // Every vec_mat instance waits for all 200 compute_fft instances (200 x 200 edges) ...
    for i in 0..200 {
        let waits: Vec<u32> =
            graph.predecessors(vec_mat + i).iter().copied().filter(|&p| graph.inst_node[p as usize] == 1).collect();
        assert_eq!(waits, (fft.first..fft.first + 200).collect::<Vec<_>>(), "vec_mat[{i}]");
    }
    // ... and the factor-1 writer for compute_fft[0] only, reading vec_mat[0..200].
    let edges = graph::edges_text(&graph);
    assert!(edges.contains("write[0] waits compute_fft[0] vec_mat[0..200]; reads vec_mat[0..200]\n"), "{edges}");
    // Its conversion compiles to the same edges, and says what changed.
    let converted = graph::convert_str("matrix.json", &text, None).expect("the conversion");
    let again = graph::parse_str("converted.json", &converted.text).expect("the converted graph");
    assert_eq!(graph::edges_text(&again), edges);
    assert!(
        converted
            .warnings
            .iter()
            .any(|w| w.contains(r#"node "vec_mat""#) && w.contains("every instance wait for all 200")),
        "{:#?}",
        converted.warnings
    );
}

#[test]
fn what_tomii_1_2_crashed_or_hung_on_is_an_error() {
    let node = |indexes: &str, factor: u32| {
        format!(
            r#"{{"nodes": [{{"name": "a", "function": "checksum", "factor": 4, "args": []}},
                {{"name": "b", "function": "checksum", "factor": {factor}, "args": [{{"type": "$barrier", "predecessor": {{"name": "a", "indexes": "{indexes}"}}}}]}}]}}"#
        )
    };
    for (text, says) in [(node("-1", 4), "negative"), (node("4", 1), "hung")] {
        let error = graph::parse_str("old.json", &text).expect_err("an error").to_string();
        assert!(error.contains("old.json") && error.contains(r#"node "b""#) && error.contains(says), "{error}");
    }
}

#[test]
fn tomii_convert_edges_prints_the_compiled_edges() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let old = dir.path().join("matrix.json");
    std::fs::write(&old, matrix_shaped(4)).expect("the file");
    let mut command = tomii();
    command.arg("convert").arg(&old).arg("--edges");
    let done = finish(command);
    assert!(done.status.success(), "{}", done.stderr);
    assert!(done.stdout.contains("vec_mat[3] waits gen_vec[3] compute_fft[0..4]; reads gen_vec[3]"), "{}", done.stdout);
    assert!(
        done.stdout.contains("write[0] waits compute_fft[0] vec_mat[0..4]; reads vec_mat[0..4]"),
        "{}",
        done.stdout
    );
}
