//! The programmatic source: a session started once takes frames from the program, each with its
//! own inputs, and gives each frame's sink outputs back through its ticket; outputs equal the
//! reference model's, with several schedulers; a full session blocks or refuses, as asked; a
//! failing kernel fails the frames in flight and ends the session with its error.
//!
//! Needs `cargo build --workspace` first (plugins).

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::checksum::{expected, mix};
use common::{plugin, synthetic_lib, within_timeout};
use tomii_core::engine::{Output, RunConfig, Session, SubmitError};
use tomii_core::graph::{self, CompiledGraph};
use tomii_core::plugin::{KernelSet, SchedulerPlugin};
use tomii_types::kernel::Value;

const TIMEOUT: Duration = Duration::from_secs(60);

/// Two input instances, read by a node of two instances each and, together with it, by a sink.
const GRAPH: &str = r#"{
  "inputs": [{"name": "samples", "factor": 2}],
  "nodes": [
    {"name": "scale", "function": "checksum", "factor": 2,
     "args": [{"type": "$res", "predecessor": {"name": "samples"}}]},
    {"name": "sum", "function": "checksum",
     "args": [{"type": "$res", "predecessor": {"name": "samples", "index": "0-2"}},
              {"type": "$res", "predecessor": {"name": "scale", "index": "0-2"}}]}
  ]
}"#;

/// The sink `sum` of frame `frame` given the two input words, as the reference model has it.
fn reference(frame: u64, inputs: [u64; 2]) -> u64 {
    let scale = |i: u32| expected("scale", i, frame, &[inputs[i as usize]]);
    expected("sum", 0, frame, &[inputs[0], inputs[1], scale(0), scale(1)])
}

fn start(graph_json: &str, scheduler: &str, slots: u32) -> Session {
    let graph: CompiledGraph = graph::parse_str("session.json", graph_json).unwrap_or_else(|e| panic!("{e}"));
    let kernels = KernelSet::load(&[synthetic_lib()]).unwrap_or_else(|e| panic!("{e}"));
    let file = format!("libtomii_sched_{}.so", scheduler.replace('-', "_"));
    let plugin = SchedulerPlugin::load(&common::plugin(&file)).unwrap_or_else(|e| panic!("{e}"));
    let config = RunConfig { workers: 2, slots, ..RunConfig::default() };
    Session::start(Arc::new(graph), Arc::new(kernels), Arc::new(plugin), config).unwrap_or_else(|e| panic!("{e}"))
}

fn words(frame: u64) -> [u64; 2] {
    [mix(frame, 1), mix(frame, 2)]
}

fn sum_of(outputs: &[(u32, u32, Output)]) -> u64 {
    match outputs {
        [(_, 0, Output::UInt(value))] => *value,
        other => panic!("expected one sink value, got {other:?}"),
    }
}

#[test]
fn frames_fed_by_the_program_match_the_reference_with_three_schedulers() {
    for scheduler in ["fifo", "work-stealing", "priority"] {
        within_timeout(TIMEOUT, scheduler, move || {
            let session = start(GRAPH, scheduler, 3);
            let submitted: Vec<_> = (0..200u64)
                .map(|k| {
                    let inputs = words(k).into_iter().map(Value::u64).collect();
                    (k, session.submit(inputs, None).unwrap_or_else(|e| panic!("{scheduler}: {e}")))
                })
                .collect();
            let mut frames = std::collections::BTreeSet::new();
            for (k, ticket) in submitted {
                let result = ticket.wait(Some(TIMEOUT)).expect("a result");
                let outputs = result.outputs.unwrap_or_else(|e| panic!("{scheduler}: frame {k}: {e}"));
                assert_eq!(sum_of(&outputs), reference(result.frame, words(k)), "{scheduler}: frame {k}");
                assert!(frames.insert(result.frame), "{scheduler}: frame number {} twice", result.frame);
            }
            let outcome = session.close().unwrap_or_else(|e| panic!("{e}"));
            assert_eq!((outcome.report.frames, outcome.report.tasks), (200, 600), "{scheduler}");
            assert_eq!(outcome.report.source, "session");
        });
    }
}

#[test]
fn a_full_session_refuses_or_waits_as_asked() {
    within_timeout(TIMEOUT, "a full session", || {
        // `spin` holds each frame ~50 ms: with one slot, the second frame finds it busy.
        let graph = r#"{"inputs": [{"name": "x"}],
            "nodes": [{"name": "slow", "function": "spin", "args": [{"type": "u64", "value": 50000}, {"type": "$dep", "predecessor": {"name": "x"}}]}]}"#;
        let session = start(graph, "fifo", 1);
        let first = session.submit(vec![Value::u64(1)], None).expect("a free slot");
        match session.submit(vec![Value::u64(2)], Some(Duration::ZERO)) {
            Err(SubmitError::Busy { slots: 1 }) => {}
            other => panic!("expected Busy, got {:?}", other.map(|_| "a ticket")),
        }
        let second = session.submit(vec![Value::u64(3)], None).expect("waits for the slot");
        assert!(first.wait(Some(TIMEOUT)).expect("first").outputs.is_ok());
        assert!(second.wait(Some(TIMEOUT)).expect("second").outputs.is_ok());
        match session.submit(vec![], None) {
            Err(SubmitError::Inputs(message)) => assert!(message.contains("1 input value(s) per frame, 0 given")),
            other => panic!("expected an inputs error, got {:?}", other.map(|_| "a ticket")),
        }
        assert_eq!(session.close().expect("closed").report.frames, 2);
    });
}

#[test]
fn a_failing_kernel_ends_the_session_with_its_error() {
    within_timeout(TIMEOUT, "a failing kernel", || {
        let graph = r#"{"inputs": [{"name": "x"}],
            "nodes": [{"name": "bad", "function": "fail", "args": [{"type": "$res", "predecessor": {"name": "x"}}]}]}"#;
        let session = start(graph, "fifo", 2);
        let ticket = session.submit(vec![Value::string("boom".into())], None).expect("a free slot");
        let result = ticket.wait(Some(TIMEOUT)).expect("a result");
        let error = result.outputs.expect_err("the frame failed");
        assert!(error.contains("boom") && error.contains("\"bad\""), "{error}");
        match session.submit(vec![Value::u64(1)], None) {
            Err(SubmitError::Ended(Some(why))) => assert!(why.contains("boom"), "{why}"),
            other => panic!("expected Ended, got {:?}", other.map(|_| "a ticket")),
        }
        let error = session.close().expect_err("the run failed").to_string();
        assert!(error.contains("boom"), "{error}");
    });
}

#[test]
fn a_graph_with_inputs_needs_a_session() {
    let graph: CompiledGraph = graph::parse_str("session.json", GRAPH).unwrap_or_else(|e| panic!("{e}"));
    let kernels = KernelSet::load(&[synthetic_lib()]).unwrap_or_else(|e| panic!("{e}"));
    let plugin = SchedulerPlugin::load(&plugin("libtomii_sched_fifo.so")).unwrap_or_else(|e| panic!("{e}"));
    let error = tomii_core::engine::run(&graph, &kernels, &plugin, &RunConfig::default()).expect_err("an error");
    assert!(error.to_string().contains("input \"samples\" needs a source"), "{error}");
}

#[test]
fn a_running_session_changes_its_schedulers_options() {
    within_timeout(TIMEOUT, "set option", || {
        let session = start(GRAPH, "random", 2);
        assert_eq!(session.set_scheduler_option("seed", "7"), Ok(()));
        let refused = session.set_scheduler_option("speed", "7").unwrap_err();
        assert!(refused.contains("unknown option \"speed\""), "{refused}");
        // Frames still run, and the scheduler was reseeded between them.
        let ticket = session.submit(vec![Value::u64(1), Value::u64(2)], None).unwrap();
        assert!(ticket.wait(None).unwrap().outputs.is_ok());
        session.close().unwrap();
        let fifo = start(GRAPH, "fifo", 2);
        let none = fifo.set_scheduler_option("seed", "7").unwrap_err();
        assert!(none.contains("has no option \"seed\""), "{none}");
        fifo.close().unwrap();
        // A C scheduler without set_knob: its options are fixed at the start.
        let c_fifo = start(GRAPH, "c-fifo", 2);
        let fixed = c_fifo.set_scheduler_option("seed", "7").unwrap_err();
        assert!(fixed.contains("has no set_knob"), "{fixed}");
        c_fifo.close().unwrap();
    });
}
