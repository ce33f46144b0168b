//! Compatibility: graphs in the shape of Tomii 1.2's examples (examples/compat/) run with the
//! synthetic kernels, every output checked against values computed here without the engine.

mod common;

use common::checksum::{expected, fnv1a, mix, text};
use common::{fifo_lib, synthetic_lib};
use tomii_core::engine::{self, Output, RunConfig, RunOutcome};
use tomii_core::graph::{self, CompiledGraph};
use tomii_core::plugin::{KernelSet, SchedulerPlugin};

const SENSORS: u32 = 16;

/// The outputs of stream_analytics.json in `frame`: (emit, aggregate).
fn stream_analytics(frame: u64) -> (u64, u64) {
    let calibration: Vec<u64> = (0..SENSORS).map(|i| expected("calibration", i, 0, &[u64::from(i)])).collect();
    let generate: Vec<u64> =
        (0..SENSORS).map(|i| expected("generate", i, frame, &[u64::from(i), calibration[i as usize]])).collect();
    let class = |i: u32| generate[i as usize] % 3;
    let hot: Vec<u64> = (0..SENSORS)
        .map(|i| if class(i) == 0 { expected("hot", i, frame, &[generate[i as usize]]) } else { 0 })
        .collect();
    let cold: Vec<u64> = (0..SENSORS)
        .map(|i| if class(i) != 0 { expected("cold", i, frame, &[generate[i as usize]]) } else { 0 })
        .collect();
    let stats: Vec<u64> = (0..4)
        .map(|g| {
            let mut words: Vec<u64> = hot[4 * g as usize..4 * g as usize + 4].to_vec();
            words.extend_from_slice(&cold[4 * g as usize..4 * g as usize + 4]);
            expected("stats", g, frame, &words)
        })
        .collect();
    let list = stats.iter().fold(fnv1a(b""), |h, &w| mix(h, w));
    let aggregate = expected("aggregate", 0, frame, &[text("window"), list]);
    (expected("emit", 0, frame, &[aggregate, text("report")]), aggregate)
}

/// Runs examples/compat/`name`.json on 2 workers and `slots` slots for `frames` frames with the
/// synthetic kernels and fifo, its outputs collected and its trace checked.
fn run_example(name: &str, slots: u32, frames: u64) -> (CompiledGraph, RunOutcome) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../examples/compat/{name}.json"));
    let graph = graph::load_file(&path).unwrap_or_else(|e| panic!("{e}"));
    let kernels = KernelSet::load(&[synthetic_lib()]).unwrap_or_else(|e| panic!("{e}"));
    let scheduler = SchedulerPlugin::load(&fifo_lib()).unwrap_or_else(|e| panic!("{e}"));
    let config = RunConfig { workers: 2, slots, frames, collect_outputs: true, trace: true, ..RunConfig::default() };
    let outcome = engine::run(&graph, &kernels, &scheduler, &config).unwrap_or_else(|e| panic!("{e}"));
    common::trace::check(&graph, &config, &outcome.trace);
    (graph, outcome)
}

#[test]
fn stream_analytics_matches_its_golden_outputs() {
    let frames = 12;
    let (graph, outcome) = run_example("stream_analytics", 4, frames);
    let emit = graph.nodes.iter().position(|n| n.name == "emit").unwrap() as u32;
    for (frame, outputs) in outcome.outputs.iter().enumerate() {
        let got = outputs.iter().find(|(node, _, _)| *node == emit).map(|(_, _, v)| v);
        assert_eq!(got, Some(&Output::UInt(stream_analytics(frame as u64).0)), "emit, frame {frame}");
    }
    let last = frames - 1;
    let report = expected("final_report", 0, last, &[stream_analytics(last).1]);
    assert_eq!(outcome.post_outputs, vec![("final_report".to_owned(), 0, Output::UInt(report))]);
    let skipped: u64 = outcome.report.per_node.iter().map(|n| n.skipped).sum();
    assert_eq!(skipped, u64::from(SENSORS) * frames, "each sensor runs exactly one of its two branches");
}

#[test]
fn matrix_compute_matches_its_golden_outputs() {
    let frames = 9;
    let (graph, outcome) = run_example("matrix_compute", 2, frames);
    let vec_mat = |frame: u64| -> Vec<u64> {
        (0..8).map(|i| expected("vec_mat", i, frame, &[expected("gen_vec", i, frame, &[100])])).collect()
    };
    for (frame, outputs) in outcome.outputs.iter().enumerate() {
        let got: Vec<u64> = outputs
            .iter()
            .map(|(_, _, v)| match v {
                Output::UInt(v) => *v,
                other => panic!("unexpected output {other:?}"),
            })
            .collect();
        assert_eq!(got, vec_mat(frame as u64), "frame {frame}");
    }
    // compute_fft ran (the barrier waited for it) on the planner and its gen_vec.
    let fft_runs = outcome.trace.iter().filter(|r| graph.nodes[r.node as usize].name == "compute_fft").count();
    assert_eq!(fft_runs as u64, 8 * frames);
    let list = vec_mat(frames - 1).iter().fold(fnv1a(b""), |h, &w| mix(h, w));
    let report = expected("write_to_file", 0, frames - 1, &[text("out.npz"), list]);
    assert_eq!(outcome.post_outputs, vec![("write_to_file".to_owned(), 0, Output::UInt(report))]);
}
